"""`Recording`: record a run to a file once, then replay it from the file in tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import attrs

from .._core._context import AgentContext
from .._core._errors import ReplayDiverged
from ..checkpoint._bases import standalone
from ..checkpoint._codec import diff_data
from ..checkpoint._records import RunLog
from ..checkpoint._resume import decode_contexts, log_blobs
from ..checkpoint._store import MemoryStore

if TYPE_CHECKING:
    from .._core._graph import Graph
    from .._core._runner import GraphRunner

__all__ = ("Recording",)

In = TypeVar("In")
Out = TypeVar("Out")

_RUN_ID = "recorded"


class Recording:
    """A run kept in a file: recorded the first time, replayed from the file after that.

    ```python
    recording = Recording("tests/recordings/weather.jsonl")
    out = await recording.run(GraphRunner(), agent, AgentContext("Weather in Paris?"))
    ```

    Recording runs the graph for real (models, tools) and saves every step and
    effect as JSON lines. Replaying calls no model and no tool: each model
    call, tool result and answer comes from the file, and `ReplayDiverged`
    shows a diff when the graph now asks the model something else or produces
    another context (re-record with `mode="record"` when the change is wanted).

    Args:
        path: the file; its folder is created when recording.
        mode: `"auto"` replays when the file exists and records otherwise;
            `"record"` always records; `"replay"` requires the file.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, mode: Literal["auto", "record", "replay"] = "auto"
    ) -> None:
        if mode not in ("auto", "record", "replay"):
            raise ValueError(f"mode is 'auto', 'record' or 'replay', not {mode!r}")
        self.path = Path(path)
        self.mode = mode

    @property
    def recorded(self) -> bool:
        """True when the file holds a recording."""
        return self.path.exists()

    def load(self) -> RunLog:
        """The recorded run's records."""
        return RunLog.loads(self.path.read_bytes())

    async def run(
        self, runner: GraphRunner, graph: Graph[In, Out], ctx: AgentContext[In]
    ) -> AgentContext[Out]:
        """Record `graph` running on `ctx`, or replay the recording, which must start at `ctx`."""
        replay = self.mode == "replay" or (self.mode == "auto" and self.recorded)
        if replay:
            return await self._replay(runner, graph, ctx)
        store = MemoryStore()
        try:
            return await runner.run(graph, ctx, store=store, run_id=_RUN_ID)
        finally:
            log = await store.load(_RUN_ID)
            if log is not None:
                # Images and documents travel in the file: it is replayed without this store.
                log = await standalone(store, log)
                log = attrs.evolve(log, blobs=await log_blobs(store, log))
                await anyio.to_thread.run_sync(self._save, log.dumps())

    def _save(self, data: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(data)

    async def _replay(
        self, runner: GraphRunner, graph: Graph[In, Out], ctx: AgentContext[In]
    ) -> AgentContext[Out]:
        log = await anyio.to_thread.run_sync(self.load)
        store = MemoryStore()
        store.write(log.records())
        for data in log.blobs.values():
            store.put_blob(data)  # kept by its own digest: changed bytes are a missing blob
        # The same types the replay itself may decode: the runner's and the graph's.
        types = runner.types.with_types(*graph.data_types())
        blobs = await log_blobs(store, log)
        recorded: AgentContext[Any] = decode_contexts(log, types=types, blobs=blobs)[0]
        if recorded != ctx:
            diff = diff_data(recorded, ctx, labels=("recorded", "given"))
            raise ReplayDiverged(
                f"the recording in {self.path} started from another context",
                diff=diff,
                context=ctx,
                step=0,
                path=(graph.name,),
            )
        return await runner.replay(graph, _RUN_ID, store)
