"""A thread turn's start, stored as a change to the run it continues from.

A turn's run record holds its first context as what it adds to its base's last
context (`{"B": base run id, "bn": its messages, "bs": its step records, ...}`),
so a turn writes the same few bytes on a thread of 10,000 messages as on one of
10. Reading it back needs the base's last context: `final_context` decodes a
run's last context through its chain of bases, and keeps the last contexts it
decoded or that finished in this process (per store, the newest few), so the
next turn decodes nothing. A kept context is used only for a run with the
number of step records it was decoded from, and as a base only when its message
count is the one the turn recorded.

`standalone` folds a turn's run record with its bases' into one that depends on
no other run (for a log that leaves its store, or code that decodes a run alone).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from .._core._context import AgentContext
from .._core._errors import CheckpointError
from .._core._json import NO_TYPES, Types
from ._codec import BlobPut, changes
from ._records import RunLog, checked

if TYPE_CHECKING:
    from ._store import CheckpointStore

__all__ = ("Base", "based_context", "final_context", "relative", "remember", "standalone")

_PREFIX = b'{"B":'
_KEEP = 64
"""Last contexts kept per store: a few threads' heads and the bases they continue."""


@attrs.frozen
class Base:
    """The run a turn's first context is a change to, as its run record names it."""

    run_id: str
    messages: int
    steps: int


@attrs.frozen
class _Kept:
    context: AgentContext[Any]
    steps: int
    types: Types


_kept: weakref.WeakKeyDictionary[Any, OrderedDict[str, _Kept]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def relative(data: bytes) -> Base | None:
    """The base `data` (an encoded first context) is a change to; None when it stands alone."""
    if not data.startswith(_PREFIX):
        return None
    fields = orjson.loads(data)
    run_id, messages, steps = fields.get("B"), fields.get("bn"), fields.get("bs")
    if not isinstance(run_id, str) or not isinstance(messages, int):
        raise CheckpointError("a stored first context names its base run without its size")
    if not isinstance(steps, int) or isinstance(steps, bool) or isinstance(messages, bool):
        raise CheckpointError("a stored first context names its base run without its size")
    return Base(run_id, messages, steps)


def based_context(
    ctx: AgentContext[Any], base: AgentContext[Any], run_id: str, steps: int, put: BlobPut
) -> bytes:
    """`ctx` encoded as a change to `base`, the last context of run `run_id` (`steps` records)."""
    head: dict[str, Any] = {"B": run_id, "bn": len(base.history), "bs": steps}
    return orjson.dumps(changes(ctx, base, head, put))


def remember(store: Any, run_id: str, context: AgentContext[Any], steps: int, types: Types) -> None:
    """Keep `context` as the last of run `run_id` (`steps` records), decoded with `types`.

    A turn that finished keeps its own last context, so the next turn goes on from it
    (its history's buffer, appended in place) without decoding anything.
    """
    _keep(store, run_id, _Kept(context, steps, types))


def _keep(store: Any, run_id: str, kept: _Kept) -> None:
    with _lock:
        try:
            runs = _kept.setdefault(store, OrderedDict())
        except TypeError:  # a store of one's own that takes no weak references: none kept
            return
        runs[run_id] = kept
        runs.move_to_end(run_id)
        while len(runs) > _KEEP:
            runs.popitem(last=False)


def _found(store: Any, run_id: str, steps: int, types: Types) -> AgentContext[Any] | None:
    with _lock:  # a store may serve event loops in several threads
        try:
            runs = _kept.get(store)
        except TypeError:
            return None
        kept = None if runs is None else runs.get(run_id)
        if runs is None or kept is None or kept.steps != steps or kept.types != types:
            return None
        runs.move_to_end(run_id)
        return kept.context


async def _load(store: CheckpointStore, run_id: str) -> RunLog:
    log = await store.load(run_id)
    if log is None:
        raise CheckpointError(f"run {run_id!r} is missing from the store")
    return checked(log)


async def _chain(store: CheckpointStore, run_id: str) -> dict[str, RunLog]:
    """The logs of `run_id` and the runs it continues from, by run id, when `store` reads
    them in one go (`load_chain`: the SQL stores); else nothing, read one by one."""
    load_chain = getattr(store, "load_chain", None)
    if load_chain is None:
        return {}
    logs: tuple[RunLog, ...] = await load_chain(run_id)
    return {log.run.run_id: log for log in logs}


async def final_context(
    store: CheckpointStore, run_id: str, types: Types = NO_TYPES
) -> tuple[AgentContext[Any], int]:
    """The last committed context of run `run_id` and its number of step records.

    Raises:
        CheckpointError: the run, or a run it continues, is missing or damaged.
        ContextDecodingError: a context cannot be decoded with `types`.
    """
    from ._resume import decode_contexts, log_blobs

    chain: list[RunLog] = []
    start: AgentContext[Any] | None = None
    log = await _load(store, run_id)
    found = _found(store, run_id, len(log.steps), types)
    if found is not None:
        return found, len(log.steps)
    seen = {run_id}
    read: dict[str, RunLog] | None = None  # the bases' logs, read in one go when needed
    while True:
        chain.append(log)
        base = relative(log.run.context)
        if base is None:
            break
        start = _found(store, base.run_id, base.steps, types)
        if start is not None and len(start.history) == base.messages:
            break
        start = None
        if base.run_id in seen:
            raise CheckpointError(f"run {run_id!r}: its bases go round in a circle")
        seen.add(base.run_id)
        if read is None:
            read = await _chain(store, base.run_id)
        found_log = read.pop(base.run_id, None)
        log = checked(found_log) if found_log is not None else await _load(store, base.run_id)
    for log in reversed(chain):
        blobs = await log_blobs(store, log)
        start = decode_contexts(log, types=types, blobs=blobs, start=start)[-1]
        _keep(store, log.run.run_id, _Kept(start, len(log.steps), types))
    assert start is not None
    return start, len(chain[0].steps)


def _fold(fields: dict[str, Any], change: dict[str, Any]) -> None:
    if "H" in change:
        fields["H"] = list(change["H"])
    elif "h" in change:
        fields["H"] = [*fields.get("H", ()), *change["h"]]
    for key, value in change.items():
        if key not in ("H", "h", "B", "bn", "bs"):
            fields[key] = value


async def standalone(store: CheckpointStore, log: RunLog) -> RunLog:
    """`log` with a run record that stands alone: a turn's first context folded onto its
    bases' (as JSON, nothing decoded). A log whose run record stands alone is returned as is.

    Raises:
        CheckpointError: a base run is missing or damaged.
    """
    base = relative(log.run.context)
    if base is None:
        return log
    chain = [log]
    seen = {log.run.run_id}
    while base is not None:
        if base.run_id in seen:
            raise CheckpointError(f"run {log.run.run_id!r}: its bases go round in a circle")
        seen.add(base.run_id)
        chain.append(await _load(store, base.run_id))
        base = relative(chain[-1].run.context)
    fields: dict[str, Any] = {}
    for i, older in enumerate(reversed(chain)):
        _fold(fields, orjson.loads(older.run.context))
        if i < len(chain) - 1:  # the base's steps; the log's own stay its own
            for record in older.steps:
                _fold(fields, orjson.loads(record.context))
    return attrs.evolve(log, run=attrs.evolve(log.run, context=orjson.dumps(fields)))
