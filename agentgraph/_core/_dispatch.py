"""Handing a run's events to its sinks: each event only to the sinks that want its kind.

A sink is a callable that takes an event (sync, or returning an awaitable). One
that cares about some kinds only says so with a `wants` attribute, a set of
event classes, and is given only those. The runner builds a step's events
(started, finished, route chosen) only when a sink or the run's stream takes
their kind, and no event at all when no sink wants anything, so a sink that
wants nothing costs a run nothing; the events of a run's start and end and of
its model and tool calls, a few per model call, are built when any sink wants
something.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from ._events import Event

__all__ = ("Dispatch", "Sink", "check_sink", "wanted")

Sink = Callable[[Event], Awaitable[None] | None]
"""A consumer of a run's events (a trace file, a console, a tracer); sync or async.

Every event is sent to it, unless it has a `wants` attribute: a set (such as a
`frozenset`) of the event classes it takes, the others never being built for it.
"""

Stream = Callable[[Event], Awaitable[None]]

_log = logging.getLogger("agentgraph")


def check_sink(sink: Any) -> Any:
    """`sink` itself, or a `TypeError` saying why it cannot be one."""
    if not callable(sink):
        raise TypeError(f"a sink is a callable that takes an event, not {type(sink).__name__}")
    wants = getattr(sink, "wants", None)
    if wants is not None and (
        isinstance(wants, str | bytes)
        or not isinstance(wants, Collection)
        or not all(isinstance(kind, type) for kind in wants)
    ):
        raise TypeError(
            f"the sink {sink!r} has wants={wants!r}: it must be a set of event classes "
            "(frozenset({NodeFinished, RunFinished}), say), or None for every event"
        )
    return sink


def wanted(sinks: tuple[Sink, ...], kind: type[Any]) -> tuple[Sink, ...]:
    """The sinks among `sinks` that take events of class `kind`, in order."""
    return tuple(sink for sink in sinks if _wants(sink, kind))


def _wants(sink: Sink, kind: type[Any]) -> bool:
    wants = getattr(sink, "wants", None)
    return wants is None or any(issubclass(kind, w) for w in wants)


class Dispatch:
    """One run's event delivery: the sinks (those that want each kind), then the stream.

    `deliver` returns None when every sink took the event at once, else an
    awaitable for the rest (the caller awaits it), so a step with only sync
    sinks builds no coroutine for its events; `emit` is the same as a coroutine.
    A sink that fails is detached for the rest of the run (or, with `fail`, its
    error raised); a detached sink is dropped by replacing the tables, never by
    changing them, so an event being delivered (by a concurrent branch, say)
    still reaches the sinks it started with.
    """

    __slots__ = ("_all", "_by_kind", "_fail", "_sinks", "_stream")

    def __init__(
        self,
        sinks: tuple[Sink, ...],
        stream: Stream | None,
        *,
        fail: bool,
        by_kind: dict[type[Any], tuple[Sink, ...]] | None = None,
        picky: bool | None = None,
    ) -> None:
        self._stream = stream
        self._fail = fail
        self._by_kind = {} if by_kind is None else by_kind
        if picky is None:
            self._use(sinks)
        else:  # the runner says: one is made for every run
            self._sinks, self._all = sinks, None if picky else sinks

    def _use(self, sinks: tuple[Sink, ...], picky: bool | None = None) -> None:
        """Deliver to `sinks`; `picky` says whether one of them has `wants` (found if None)."""
        self._sinks = sinks
        if picky is None:
            picky = any(getattr(sink, "wants", None) is not None for sink in sinks)
        # When no sink picks, every kind goes to all: no table to look in.
        self._all = None if picky else sinks

    def sinks_for(self, kind: type[Any]) -> tuple[Sink, ...]:
        """The sinks that take events of class `kind`."""
        found = self._by_kind.get(kind)
        if found is None:
            found = self._by_kind[kind] = wanted(self._sinks, kind)
        return found

    def deliver(self, event: Event) -> Awaitable[None] | None:
        """Hand `event` to the sinks that take it: None when all did at once, else what
        to await for the rest (and the stream)."""
        sinks = self._all
        if sinks is None:
            sinks = self.sinks_for(type(event))
        i = 0  # counted by hand: an enumerate per event costs more than the count
        for sink in sinks:
            i += 1
            try:
                result = sink(event)
            except Exception as exc:
                self._failed(sink, exc)
                continue
            if result is not None and inspect.isawaitable(result):
                return self._rest(event, sink, result, sinks[i:])
        return None if self._stream is None else self._stream(event)

    async def emit(self, event: Event) -> None:
        """Deliver `event`, waiting for the sinks that are async."""
        pending = self.deliver(event)
        if pending is not None:
            await pending

    async def _rest(
        self, event: Event, sink: Sink, first: Awaitable[None], rest: tuple[Sink, ...]
    ) -> None:
        try:
            await first
        except Exception as exc:
            self._failed(sink, exc)
        for sink in rest:
            try:
                result = sink(event)
                if result is not None and inspect.isawaitable(result):
                    await result
            except Exception as exc:
                self._failed(sink, exc)
        if self._stream is not None:
            await self._stream(event)

    def _failed(self, sink: Sink, exc: Exception) -> None:
        if self._fail:
            raise exc
        if sink not in self._sinks:  # a concurrent delivery failed first and said so
            return
        kept = list(self._sinks)
        kept.remove(sink)
        self._by_kind = {}
        self._use(tuple(kept))
        from .._util._redact import masked  # its patterns compile when a sink first fails

        # No traceback: its lines could show what the sink was writing.
        _log.error(
            "trace sink %r failed and was detached; the run goes on: %s",
            sink,
            masked(f"{type(exc).__name__}: {exc}"),
        )
