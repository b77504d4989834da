"""Connection pools that belong to one event loop each.

A pooled connection is a socket registered with the event loop that opened
it, so it cannot be used, or even closed, from another loop. A model made
once (at module level, in a notebook) and used by several `asyncio.run`,
`anyio.run` or `run_sync` calls therefore needs a pool per loop, and each
pool must be closed while its own loop still runs.

`watch` arranges exactly that: the first time a pool is made in a loop, a
task waits in that loop until the loop shuts down (`asyncio.run` and
`asyncio.Runner` cancel every task left; trio cancels its system tasks when
the main task ends), and then closes, in that loop, the pools it made for the
transports still alive. One task per loop, whatever the number of models.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import weakref
from collections.abc import Callable

import httpx

from .._core._errors import UsageError

__all__ = ("LoopPools", "current_loop", "loop_closed", "watch")

_log = logging.getLogger("agentgraph.llm")


def current_loop() -> object | None:
    """The event loop running in this thread: an asyncio loop, a trio run's token, or `None`.

    Each is one object for the whole life of its loop, so `is` tells loops apart.
    """
    loop = asyncio._get_running_loop()  # for loop implementations: `None`, not an exception
    if loop is not None:
        return loop
    trio = sys.modules.get("trio")  # never imported: no trio run can be active
    if trio is not None:
        try:
            token: object = trio.lowlevel.current_trio_token()
        except RuntimeError:
            return None
        return token
    return None


def loop_closed(loop: object) -> bool:
    """Whether `loop` is an asyncio loop that was closed (a trio run's token cannot tell)."""
    return isinstance(loop, asyncio.AbstractEventLoop) and loop.is_closed()


class LoopPools:
    """The connection pools a provider client made for itself, one per event loop.

    `bound` is the pool used last and its loop: a request from that loop (the
    usual case) costs one identity test. A model entered with `async with`
    serves only the loop it was entered in, until it is left: another loop's
    request is refused with a `UsageError` that names the fix.
    """

    __slots__ = ("__weakref__", "_entered", "_make", "_pools", "bound", "owner")

    def __init__(self, make: Callable[[], httpx.AsyncClient], owner: str) -> None:
        self._make = make
        self._pools: dict[object, httpx.AsyncClient] = {}
        self._entered: object | None = None
        self.bound: tuple[object, httpx.AsyncClient] | None = None
        self.owner = owner
        """Who the pools are for (`openai client`), for the error message."""

    def client(self, loop: object) -> httpx.AsyncClient:
        """The pool of `loop`, made on first use there."""
        self._refuse_foreign(loop)
        client = self._pools.get(loop)
        if client is None:
            self._forget_closed()
            client = self._pools[loop] = self._make()
            if loop is not None:
                watch(loop, self)
        self.bound = (loop, client)
        return client

    def enter(self) -> None:
        """Tie the pools to the running loop until `aclose()`."""
        loop = current_loop()
        self._refuse_foreign(loop)
        self._entered = loop

    def _refuse_foreign(self, loop: object) -> None:
        entered = self._entered
        if entered is None or entered is loop:
            return
        if loop_closed(entered):
            self._entered = None  # its loop ended without leaving `async with`
            return
        raise UsageError(
            f"this {self.owner} was entered with `async with` in another event loop, and "
            "its connections belong to that loop; enter it inside the loop that uses it "
            "(in the function given to asyncio.run, anyio.run or run_sync), or use it "
            "without `async with`: it then keeps one connection pool per event loop and "
            "closes each when its loop ends"
        )

    def _forget_closed(self) -> None:
        """Drop the pools of asyncio loops closed without shutting down their tasks."""
        for loop in list(self._pools):  # a copy: loops in other threads add theirs meanwhile
            if loop_closed(loop):
                self._pools.pop(loop, None)

    async def aclose(self) -> None:
        """Close the running loop's pool; other loops' pools close when their loops end."""
        loop = current_loop()
        self._entered = None
        self._forget_closed()
        await self.close_loop(loop)

    async def close_loop(self, loop: object) -> None:
        """Close the pool made in `loop` (awaited in `loop`)."""
        client = self._pools.pop(loop, None)
        bound = self.bound
        if bound is not None and bound[0] is loop:
            self.bound = None
        if self._entered is loop:
            self._entered = None
        if client is not None:
            await client.aclose()


# Per live loop: the guard task that closes the pools made in it, and the
# transports that made them. An entry leaves when its loop shuts down.
_guarded: dict[object, tuple[object, weakref.WeakSet[LoopPools]]] = {}


def watch(loop: object, pools: LoopPools) -> None:
    """Have `pools.close_loop(loop)` awaited in `loop` when `loop` shuts down.

    Called from inside `loop`. Transports are held weakly: one dropped without
    `aclose()` leaves its connections to the garbage collector, as before.
    """
    entry = _guarded.get(loop)
    if entry is None:
        _forget_closed_loops()
        members: weakref.WeakSet[LoopPools] = weakref.WeakSet()
        guard = _spawn(loop, members)
        _guarded[loop] = entry = (guard, members)
    entry[1].add(pools)


def _forget_closed_loops() -> None:
    """Drop the guards of asyncio loops closed without cancelling their tasks.

    `loop.close()` alone leaves such a guard pending for good: it can neither
    run nor be cancelled any more, so it is closed here, quietly (asyncio's own
    flag for a task given up on purpose), instead of being reported as a
    pending task destroyed when the process exits.
    """
    for loop in list(_guarded):
        entry = _guarded.pop(loop, None) if loop_closed(loop) else None
        guard = entry[0] if entry is not None else None
        if isinstance(guard, asyncio.Task):
            guard._log_destroy_pending = False  # type: ignore[attr-defined]
            coro = guard.get_coro()
            if coro is not None:  # None for a task that never started (eager tasks)
                coro.close()


def _spawn(loop: object, members: weakref.WeakSet[LoopPools]) -> object:
    # A fresh context: the guard outlives the caller's run and must not keep its
    # context variables (trace spans, run state) alive until the loop ends.
    context = contextvars.Context()
    if isinstance(loop, asyncio.AbstractEventLoop):
        return loop.create_task(
            _asyncio_guard(loop, members), name="agentgraph-pools", context=context
        )
    import trio

    trio.lowlevel.spawn_system_task(
        _trio_guard, loop, members, name="agentgraph-pools", context=context
    )
    return loop


async def _asyncio_guard(loop: object, members: weakref.WeakSet[LoopPools]) -> None:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        # The loop is shutting down (or someone cancelled every task): close our
        # pools here, while their sockets' loop still runs.
        await _close_all(loop, members)
        raise


async def _trio_guard(loop: object, members: weakref.WeakSet[LoopPools]) -> None:
    import trio

    try:
        await trio.sleep_forever()
    finally:
        with trio.CancelScope(shield=True):
            await _close_all(loop, members)


async def _close_all(loop: object, members: weakref.WeakSet[LoopPools]) -> None:
    _guarded.pop(loop, None)
    for pools in list(members):
        try:
            await pools.close_loop(loop)
        except Exception:  # a failed close must not break the loop's shutdown
            _log.debug(
                "closing a connection pool at the end of its event loop failed", exc_info=True
            )
