"""Word that a run changed (new events, or its end), for the readers waiting on it.

A stream or a `join` waits on its run's signal instead of asking the database
every few milliseconds. The word comes from the process that wrote the change
when it is this one (`notify`, called by the queue after its commit) and, on
PostgreSQL, from every process through `NOTIFY agentgraph_events` with the
run's id (`listen`). The database stays the truth: a reader always reads what
it sends from the store, and looks again after a while even when no word
came, so a word lost (a listener reconnecting, a worker process on SQLite)
costs time, never an event.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.lowlevel

__all__ = ("EVENTS_CHANNEL", "RunSignals", "Signal", "signals_for")

_log = logging.getLogger("agentgraph.server")

EVENTS_CHANNEL = "agentgraph_events"
"""The PostgreSQL channel a run's id is sent on when its events or its status change."""


class Signal:
    """One reader's wait on one run, on the reader's event loop."""

    def __init__(self) -> None:
        self._token = anyio.lowlevel.current_token()
        self._event = anyio.Event()

    def poke(self) -> None:
        """Wake the reader; safe from any thread, never blocks, never fails the caller."""
        native: Any = self._token.native_token
        try:
            if isinstance(native, asyncio.AbstractEventLoop):
                native.call_soon_threadsafe(self._set)
            else:  # trio's token
                native.run_sync_soon(self._set)
        except RuntimeError:  # the reader's loop has closed: nobody is left to wake
            pass

    def _set(self) -> None:
        self._event.set()

    async def wait(self, at_most: float) -> None:
        """Until a poke since the last wait, or `at_most` seconds."""
        with anyio.move_on_after(at_most):
            await self._event.wait()
        self._event = anyio.Event()


class RunSignals:
    """The readers of this process waiting on runs, by run id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, set[Signal]] = {}

    @contextmanager
    def watching(self, run_id: str) -> Iterator[Signal]:
        """A signal poked whenever `run_id` changes, while the block lasts.

        Take it before reading the run, so a change committed between the read
        and the wait still wakes the reader.
        """
        signal = Signal()
        with self._lock:
            self._waiting.setdefault(run_id, set()).add(signal)
        try:
            yield signal
        finally:
            with self._lock:
                readers = self._waiting.get(run_id)
                if readers is not None:
                    readers.discard(signal)
                    if not readers:
                        del self._waiting[run_id]

    def notify(self, run_id: str) -> None:
        """Wake the readers of `run_id`: its events or its status changed."""
        with self._lock:
            readers = tuple(self._waiting.get(run_id, ()))
        for signal in readers:
            signal.poke()

    def listen(self, connect: Callable[[], Any], stopping: threading.Event) -> None:
        """Pass on every `NOTIFY agentgraph_events` until `stopping` (PostgreSQL).

        Blocks: run it on a thread of its own. `connect` opens an autocommit
        psycopg connection; a connection lost is opened again after a second
        (meanwhile readers look at the store on their own).
        """
        import psycopg

        while not stopping.is_set():
            try:
                self._listen(connect, stopping)
            except psycopg.OperationalError as exc:
                _log.warning("lost the %s listener, listening again: %s", EVENTS_CHANNEL, exc)
                stopping.wait(1.0)

    def _listen(self, connect: Callable[[], Any], stopping: threading.Event) -> None:
        listener = connect()
        try:
            listener.execute(f"LISTEN {EVENTS_CHANNEL}")
            while not stopping.is_set():
                for note in listener.notifies(timeout=0.5):
                    self.notify(note.payload)
        finally:
            listener.close()


_SHARED: dict[tuple[str, str], RunSignals] = {}
_SHARED_LOCK = threading.Lock()


def signals_for(where: str, schema: str) -> RunSignals:
    """The readers of this process waiting on runs of the database at `where` (and
    `schema`): one set for every queue opened on it here, so an in-process worker's
    commit wakes the API's readers directly."""
    with _SHARED_LOCK:
        return _SHARED.setdefault((where, schema), RunSignals())
