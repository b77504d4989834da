"""Background writers on a few shared threads: a lane per writer, a bounded pool for all.

A writer that must keep its output in order (a JSON-lines sink) sends its work to
a `Lane`. A lane's items run one at a time, in the order sent, on one of at most
`MOST` threads shared by every lane of the process; a thread ends after `IDLE`
seconds without work. So a process opening and closing writers at any rate holds
at most `MOST` threads for them, and none while they are idle.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ("IDLE", "MOST", "Lane")

MOST = 4
"""Threads the writers of a process share at most."""
IDLE = 1.0
"""Seconds a shared thread waits for work before it ends."""
_TURN = 64
"""Items a lane handles before it lets the lanes behind it have the thread."""

_log = logging.getLogger("agentgraph")

T = TypeVar("T")


class _Pool:
    """The shared threads and the lanes waiting for one, in the order they asked."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._ready: deque[Lane[Any]] = deque()
        self._threads = 0
        self._idle = 0

    def schedule(self, lane: Lane[Any]) -> None:
        with self._cond:
            self._ready.append(lane)
            if self._idle:
                self._cond.notify()
                return
            if self._threads >= MOST:
                return  # a busy thread takes it when done with its lane
            self._threads += 1
        threading.Thread(target=self._work, name="agentgraph-writer", daemon=True).start()

    def _work(self) -> None:
        with self._cond:
            while True:
                if self._ready:
                    lane = self._ready.popleft()
                    self._cond.release()
                    try:
                        lane._turn()
                    finally:
                        self._cond.acquire()
                    continue
                self._idle += 1
                woken = self._cond.wait(IDLE)
                self._idle -= 1
                if not woken and not self._ready:
                    self._threads -= 1
                    return

    def _forked(self) -> None:
        # A child process has none of its parent's threads; the lanes' items stay queued.
        self._cond = threading.Condition()
        self._threads = self._idle = 0
        if self._ready:
            ready, self._ready = self._ready, deque()
            for lane in ready:
                self.schedule(lane)


_pool = _Pool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool._forked)


class Lane(Generic[T]):
    """One writer's work, handled in the order sent, one item at a time, on the shared threads.

    `handle` is called with each item on a shared thread; it keeps its own errors
    (one that escapes is logged, and the lane goes on with the next item).
    """

    def __init__(self, handle: Callable[[T], object]) -> None:
        self._handle = handle
        self._items: deque[T] = deque()
        self._lock = threading.Lock()
        self._queued = False  # waiting for a thread, or on one

    def send(self, item: T) -> None:
        """Queue `item`; returns at once."""
        with self._lock:
            self._items.append(item)
            if self._queued:
                return
            self._queued = True
        _pool.schedule(self)

    def pending(self) -> bool:
        """True while items sent are still waiting to be handled."""
        return bool(self._items)

    def _turn(self) -> None:
        for _ in range(_TURN):
            with self._lock:
                if not self._items:
                    self._queued = False
                    return
                item = self._items.popleft()
            try:
                self._handle(item)
            except Exception:
                _log.exception("a background writer failed")
        _pool.schedule(self)  # more to do: behind the lanes that waited meanwhile
