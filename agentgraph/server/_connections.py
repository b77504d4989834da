"""The run queue's database connections, lent to one thread at a time."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ("Connections",)


class Connections:
    """Up to `size` connections opened by `connect` as they are first needed.

    `with connections:` lends the calling thread a free one (waiting for one
    when all are lent), which `current` answers until the block ends; blocks
    do not nest. With one connection this is a lock around it (SQLite, whose
    writes take turns anyway); with several (PostgreSQL), the queue's
    transactions from concurrent runs go on side by side and their commits
    share the server's WAL flushes instead of waiting for each other's.
    """

    def __init__(
        self, connect: Callable[[], Any], size: int, *, released: Callable[[], None] | None = None
    ) -> None:
        self._connect = connect
        self._released = released
        """Called on the borrowing thread once a block has given its connection back."""
        self._size = size
        self._opened: list[Any] = []
        self._free: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._opening = threading.Lock()
        self._lent = threading.local()

    def __enter__(self) -> Any:
        try:
            connection = self._free.get_nowait()
        except queue.Empty:
            connection = self._open() or self._free.get()
        self._lent.connection = connection
        return connection

    def __exit__(self, *exc: object) -> None:
        connection = self._lent.__dict__.pop("connection")
        self._free.put(connection)
        if self._released is not None:
            self._released()

    def _open(self) -> Any:
        """A new connection, or None when `size` are open already."""
        with self._opening:
            if len(self._opened) >= self._size:
                return None
            connection = self._connect()
            self._opened.append(connection)
            return connection

    @property
    def current(self) -> Any:
        """The connection lent to this thread."""
        return self._lent.connection

    def close(self) -> None:
        """Close every connection opened (none may be lent)."""
        with self._opening:
            for connection in self._opened:
                connection.close()
            self._opened.clear()
