"""A run's stored events as Server-Sent Events, from any event on.

Events are read from the store, not from memory: a client that reconnects
with `Last-Event-ID` (to this process or another) gets the events after that
one, once and in order; `-1` replays from the first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection

from ._api import Api, Refused

__all__ = ("SUPPORTED_MODES", "event_names", "frames", "last_event_id")

SUPPORTED_MODES = ("values", "updates", "messages", "messages-tuple", "custom", "events")
"""The stream modes this server sends; any other is refused."""

_EVENTS_OF = {
    "values": ("values",),
    "updates": ("updates",),
    "messages": ("messages/metadata", "messages/partial", "messages/complete"),
    "messages-tuple": ("messages",),
    "custom": ("custom",),
    "events": ("events",),
}
_ALWAYS = frozenset({"metadata", "error", "end"})
_LOOK_AGAIN = 0.5
"""Seconds a stream waits for word of its run before reading the store anyway."""


def event_names(modes: Collection[str]) -> frozenset[str]:
    """The SSE event names a stream in `modes` carries; 422 for a mode not supported."""
    unknown = [mode for mode in modes if mode not in _EVENTS_OF]
    if unknown:
        raise Refused(
            422,
            f"stream mode {unknown[0]!r} is not supported; the supported modes are "
            + ", ".join(SUPPORTED_MODES),
        )
    return _ALWAYS.union(*(_EVENTS_OF[mode] for mode in modes))


def last_event_id(header: str | None) -> int:
    """Where a reconnect goes on from: after the event with this id (`-1`, none: the start)."""
    if not header:
        return 0
    try:
        return max(int(header), 0)
    except ValueError as exc:
        raise Refused(422, f"Last-Event-ID {header!r} is not an event id of this server") from exc


async def frames(api: Api, run_id: str, after: int, names: frozenset[str]) -> AsyncIterator[bytes]:
    """The run's events after `after` as SSE frames, until the run ends.

    Between reads it waits for word that the run changed (`RunSignals`), or
    at most `_LOOK_AGAIN` seconds.
    """
    with api.queue.signals.watching(run_id) as changed:
        while True:
            rows = await api.call(api.queue.events, run_id, after)
            for seq, name, data in rows:
                after = seq
                if _mode_of(name) in names:
                    yield _frame(seq, name, data)
            if rows:
                continue
            run = await api.call(api.queue.run, run_id)
            if run is None or run.ended:
                # The run's last events were stored before it ended: one more look finds them.
                for seq, name, data in await api.call(api.queue.events, run_id, after):
                    if _mode_of(name) in names:
                        yield _frame(seq, name, data)
                return
            await changed.wait(_LOOK_AGAIN)


def _mode_of(name: str) -> str:
    """An event's name without the namespace of a subgraph's (`values|sub:<id>`)."""
    return name.split("|", 1)[0]


def _frame(seq: int, name: str, data: bytes) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + data + b"\nid: %d\n\n" % seq
