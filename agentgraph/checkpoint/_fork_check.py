"""A fork onto another version of its graph: the copied steps replayed on that version first.

`fork(..., graph=new)` moves a run's prefix onto `new`. Before anything is
written, the prefix is replayed on `new` against the record, with every model
call, tool call and answer from it, exactly as `GraphRunner.replay` checks a
run: the first step `new` does differently raises `ReplayDiverged`. The
replay reads a copy of the prefix kept in memory, so a refused fork leaves
no trace in the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio.lowlevel
import attrs

from .._core._errors import CheckpointError, NodeFailed, ReplayDiverged, RunError
from .._core._runner import GraphRunner
from .._core._versions import new_name
from ._base import StoreBase
from ._records import Effect, Record, RunLog, RunRecord, StepRecord

if TYPE_CHECKING:
    from .._core._graph import Graph
    from ._store import CheckpointStore

__all__ = ("check_prefix", "renamed_steps")


def renamed_steps(
    steps: Sequence[StepRecord], graph: Graph[Any, Any], was: int | None
) -> list[StepRecord]:
    """`steps` with the node names of `graph`'s version (its `renamed=`), when they come
    from another version."""
    if not graph.renamed or was == graph.version:
        return list(steps)
    names = graph.renamed
    return [
        attrs.evolve(
            r,
            path=tuple(new_name(names, part) for part in r.path),
            node=new_name(names, r.node),
            next=new_name(names, r.next),
        )
        for r in steps
    ]


class _Prefix(StoreBase):
    """The copied prefix, read from memory; blobs and thread bases from the real store."""

    def __init__(self, store: CheckpointStore, log: RunLog) -> None:
        self.store = store
        self.log = log

    def write(self, records: Sequence[Record]) -> None:
        raise CheckpointError("a replay writes nothing")  # never reached: replays do not write

    async def flush(self, run_id: str | None = None) -> None:
        await anyio.lowlevel.checkpoint()

    async def load(self, run_id: str) -> RunLog | None:
        if run_id == self.log.run.run_id:
            await anyio.lowlevel.checkpoint()
            return self.log
        return await self.store.load(run_id)

    async def get_blob(self, digest: str) -> bytes:
        return await self.store.get_blob(digest)


async def check_prefix(
    store: CheckpointStore,
    graph: Graph[Any, Any],
    run: RunRecord,
    steps: Sequence[StepRecord],
    effects: Sequence[Effect],
) -> None:
    """Replay `steps` (a run's prefix, with the effects of those steps) on `graph`.

    Raises:
        ReplayDiverged: a step of the prefix ran otherwise on `graph` (a node
            that failed there included), naming the step and the difference.
    """
    last = steps[-1].step if steps else 0
    # Replayed from its start, whatever the copy's parent: the prefix is what is checked.
    prefix = RunLog(attrs.evolve(run, parent=None, parent_step=None), tuple(steps), tuple(effects))
    try:
        await GraphRunner().replay(graph, run.run_id, _Prefix(store, prefix))
    except RunError as error:
        first = _innermost(error)
        if first.step > last:
            return  # past the prefix the replay lacks what the record never held: not checked
        if first is error:
            if isinstance(error, ReplayDiverged):
                raise
        elif isinstance(first, ReplayDiverged):
            raise first from error
        what = f"{_where(first.path)} failed on this version: {first}"
        raise ReplayDiverged(what, context=first.context, step=first.step, path=first.path) from (
            error
        )


def _innermost(error: RunError) -> RunError:
    """The run error a `NodeFailed` of a subgraph wraps, down to the step that raised it."""
    while isinstance(error, NodeFailed) and isinstance(error.__cause__, RunError):
        error = error.__cause__
    return error


def _where(path: Sequence[str]) -> str:
    return "/".join(path) or "the graph"
