"""What runs leave for the page: a live run's step events as trace records, a stored
run's committed steps as records, and how a stored run stands."""

from __future__ import annotations

import contextvars
import time
from time import perf_counter
from typing import Any

from .._core._json import Types
from .._util._redact import Redactor
from ..checkpoint._bases import standalone
from ..checkpoint._records import RunLog
from ..checkpoint._resume import decode_contexts, log_blobs
from ..checkpoint._store import CheckpointStore
from ..tracing._records import Recorder

__all__ = ("Trail", "log_status", "records_from_log")


class Trail:
    """A run's step events, turned into trace records when they are asked for.

    The clock is read as each event arrives, so the records time the run, not
    the moment someone looked. The recorder keeps its per-run state in a
    context of its own, as it would inside the run.
    """

    __slots__ = ("_context", "_pending", "_recorder", "_started", "records")

    def __init__(self, redactor: Redactor) -> None:
        self._recorder = Recorder(redact=redactor)
        self._context = contextvars.Context()
        self._pending: list[tuple[Any, float, float]] = []
        self._started: float | None = None
        self.records: list[dict[str, Any]] = []

    def add(self, event: Any) -> None:
        now = perf_counter()
        if self._started is None:
            self._started = now
        self._pending.append((event, time.time(), now - self._started))

    def __len__(self) -> int:
        return len(self.records) + len(self._pending)

    def all(self) -> list[dict[str, Any]]:
        """Every record so far."""
        for event, wall, elapsed in self._pending:
            record = self._context.run(self._recorder, event)
            record["time"], record["elapsed"] = wall, elapsed
            self.records.append(record)
        self._pending.clear()
        return self.records


def log_status(log: RunLog) -> str:
    """How a stored run stands: finished, waiting for an answer, or stopped midway."""
    if log.steps and log.steps[-1].next == "finish" and len(log.steps[-1].path) == 1:
        return "ok"
    kinds = [effect.kind for effect in log.effects]
    if "interrupt" in kinds and kinds.count("interrupt") > kinds.count("answer"):
        return "interrupted"
    return "stopped"


async def stored_output(store: Any, log: RunLog, types: Types) -> Any:
    """What a finished stored run gave: the input of its last context.

    Raises:
        CheckpointError: a record or a blob it names is damaged or missing.
    """
    blobs: dict[str, bytes] = {}
    if isinstance(store, CheckpointStore):
        log = await standalone(store, log)  # a thread's turn, stored as a change to another run
        blobs = await log_blobs(store, log)
    return decode_contexts(log, types=types, blobs=blobs)[-1].input


def records_from_log(log: RunLog) -> list[dict[str, Any]]:
    """Trace records for a stored run: its committed steps, as far as the record says."""
    run = log.run
    records: list[dict[str, Any]] = [
        {
            "event": "run_started",
            "run": run.run_id,
            "time": run.created,
            "elapsed": 0.0,
            "graph": run.graph,
            "context": {},
        },
    ]
    for step in log.steps:
        path = [*step.path, step.node]
        end = step.at - run.created
        common = {"run": run.run_id, "index": step.step, "path": path, "node": step.node}
        records.append(
            {
                **common,
                "event": "node_started",
                "time": step.at - step.duration,
                "elapsed": end - step.duration,
                "local_index": step.local,
                "depth": len(step.path) - 1,
            }
        )
        records.append(
            {
                **common,
                "event": "node_finished",
                "time": step.at,
                "elapsed": end,
                "duration": step.duration,
            }
        )
    return records
