"""One run's events for any number of readers: a shared log and a cursor per reader.

Publishing appends to the log and wakes the readers; it never waits for one,
so a slow reader cannot slow the run. A reader holds only its position and
at most one batch: when it falls behind, the next batch it takes is larger
and its deltas are merged (consecutive text of one message, arguments of one
tool call, state patches), so a slow page gets fewer, bigger events and the
same final picture. Each event is encoded once, by the first reader to reach
it, with a note of whether it merges into the one before; readers send those
bytes, and encode again only what they merged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import orjson

__all__ = ("BATCH", "Channel", "coalesce", "frame")

BATCH = 256
"""The most events a reader takes at once (its buffer, bounded)."""


def frame(item: dict[str, Any]) -> bytes:
    """`item` as one server-sent event."""
    return b"data: " + orjson.dumps(item) + b"\n\n"


class Channel:
    """The events of one run, as plain JSON-ready mappings, in order, and each encoded."""

    __slots__ = ("_changed", "_frames", "_joins", "_waiting", "closed", "log")

    def __init__(self) -> None:
        self.log: list[dict[str, Any]] = []
        self._frames: list[bytes] = []
        self._joins: list[bool] = []  # whether `coalesce` merges each event into the one before
        self.closed = False
        self._changed = anyio.Event()
        self._waiting = 0

    def publish(self, item: dict[str, Any]) -> None:
        """Append `item` and wake every reader; never blocks."""
        self.log.append(item)
        self._wake()

    def close(self) -> None:
        """No more events: readers stop once they have read the log."""
        self.closed = True
        self._wake()

    def reopen(self) -> None:
        """More events will come (the run was resumed)."""
        self.closed = False

    def _wake(self) -> None:
        if self._waiting:  # nobody waits while every reader is busy: nothing to do
            changed, self._changed = self._changed, anyio.Event()
            changed.set()

    async def follow(self, start: int = 0, *, batch: int = BATCH) -> AsyncIterator[list[Any]]:
        """Batches of events from position `start` until the channel closes."""
        cursor = max(0, start)
        while True:
            if cursor < len(self.log):
                end = min(len(self.log), cursor + batch)
                yield coalesce(self.log[cursor:end])
                cursor = end
            elif self.closed:
                return
            else:
                await self._wait()

    async def stream(self, start: int = 0, *, batch: int = BATCH) -> AsyncIterator[bytes]:
        """`follow`'s batches as server-sent events, a batch in one chunk of bytes."""
        cursor = max(0, start)
        while True:
            if cursor < len(self.log):
                end = min(len(self.log), cursor + batch)
                if len(self._frames) < end:
                    self._encode(end)
                if True in self._joins[cursor + 1 : end]:  # deltas to merge: rare, and slow
                    yield _joined(self.log[cursor:end], self._frames[cursor:end])
                else:
                    yield b"".join(self._frames[cursor:end])
                cursor = end
            elif self.closed:
                return
            else:
                await self._wait()

    def _encode(self, end: int) -> None:
        """Encode the events up to `end`, once for every reader (the first to get there)."""
        log, frames, joins = self.log, self._frames, self._joins
        for i in range(len(frames), end):
            frames.append(frame(log[i]))
            joins.append(i > 0 and _merges(log[i - 1], log[i]))

    async def _wait(self) -> None:
        self._waiting += 1
        try:
            await self._changed.wait()
        finally:
            self._waiting -= 1


_MERGED = {
    "TEXT_MESSAGE_CONTENT": ("messageId", "delta"),
    "TOOL_CALL_ARGS": ("toolCallId", "delta"),
}


def _merges(last: dict[str, Any], item: dict[str, Any]) -> bool:
    """Whether `coalesce` merges `item` into `last`, the event before it."""
    kind = item.get("type")
    if last.get("type") != kind:
        return False
    if kind == "STATE_DELTA":
        return True
    merged = _MERGED.get(kind)  # type: ignore[arg-type]
    return merged is not None and last.get(merged[0]) == item.get(merged[0])


def _joined(items: list[dict[str, Any]], frames: list[bytes]) -> bytes:
    """The frames of `items` as `coalesce` merges them: the published bytes where nothing
    merged, a new encoding for each merged run."""
    out: list[bytes] = []
    first = 0
    for i in range(1, len(items) + 1):
        if i < len(items) and _merges(items[i - 1], items[i]):
            continue
        if i - first == 1:
            out.append(frames[first])
        else:
            out.extend(frame(item) for item in coalesce(items[first:i]))
        first = i
    return b"".join(out)


def coalesce(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`items` with runs of deltas merged: one event per message, call or state change run."""
    if len(items) < 2:
        return items
    out: list[dict[str, Any]] = []
    for item in items:
        last = out[-1] if out else None
        kind = item.get("type")
        if last is not None and last.get("type") == kind:
            if kind in _MERGED:
                key, field = _MERGED[kind]
                if last.get(key) == item.get(key):
                    out[-1] = {**last, field: last[field] + item[field]}
                    continue
            elif kind == "STATE_DELTA":
                # JSON Patch operations apply in order, so two patches are one longer one.
                out[-1] = {**last, "delta": [*last["delta"], *item["delta"]]}
                continue
        out.append(item)
    return out
