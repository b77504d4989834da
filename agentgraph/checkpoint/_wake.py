"""`Waiter`: an answer a writer thread hands to a task on an event loop, asyncio or trio.

Waiting with `anyio.to_thread.run_sync(event.wait)` costs a worker thread per
waiting task (and the worker pool holds 40 by default: the 41st waiter queues
for a thread before it may wait), and a thread switch to wake each one. A
`Waiter` is an event of the task's own loop instead; the writer thread wakes
every waiter of one loop with one thread-safe call into that loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import anyio
import anyio.lowlevel

__all__ = ("Waiter", "wake")

Notify = Callable[..., object]
"""Schedules `fn(*args)` on one event loop from any thread."""


def _notifier() -> Notify:
    """How a thread schedules a call on the running event loop (asyncio's loop, trio's token)."""
    native = anyio.lowlevel.current_token().native_token
    notify: Notify | None = getattr(native, "call_soon_threadsafe", None) or getattr(
        native, "run_sync_soon", None
    )
    if notify is None:
        raise RuntimeError(f"cannot call into the event loop {native!r} from a thread")
    return notify


class Waiter:
    """Made by a task on its event loop, answered once by a thread (`wake`), awaited by the task.

    `result` and `error` are written by the answering thread before the task
    is woken, and read by the task after.
    """

    __slots__ = ("_event", "_notify", "_woken", "answered", "error", "result")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._notify = _notifier()
        self._woken = False
        self.answered = False
        self.result: Any = None
        self.error: BaseException | None = None

    def answer(self, result: Any = None, error: BaseException | None = None) -> None:
        """Set the outcome (from the answering thread); `wake` then tells the task."""
        self.result, self.error, self.answered = result, error, True

    async def wait(self) -> Any:
        """The answer: the result, or the error raised."""
        await self._event.wait()
        if self.error is not None:
            raise self.error
        return self.result


def _set_all(events: list[anyio.Event]) -> None:
    for event in events:
        event.set()


def wake(waiters: Iterable[Waiter]) -> None:
    """Wake the tasks of `waiters` (from any thread): one call into each event loop."""
    by_loop: dict[Notify, list[anyio.Event]] = {}
    for waiter in waiters:
        if waiter._woken:
            continue
        waiter._woken = True
        by_loop.setdefault(waiter._notify, []).append(waiter._event)
    for notify, events in by_loop.items():
        # A loop that has ended (trio's RunFinishedError is a RuntimeError) has no waiters.
        with contextlib.suppress(RuntimeError):
            notify(_set_all, events)
