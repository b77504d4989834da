"""Evaluations on Ray: `evaluate` over a batch, and `score_runs` spread over tasks.

`evaluate_on_ray` runs every case `repeat` times with `run_batch`, each run
recorded in the store the actors share, then reads the runs back from that
store and scores them as `evaluate` scores its own: the same events, the same
report. `score_runs_on_ray` scores recorded runs in Ray tasks, each opening
the store itself: no model or tool is called there either.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .._core._errors import RecordedRunError, UsageError
from .._core._json import Types
from .._core._runner import new_run_id
from .._core._usage import Price
from ..checkpoint._store import _storage
from ..evals._dataset import Case, Dataset
from ..evals._evaluate import score_runs
from ..evals._report import Report, RunResult
from ..evals._score import EvaluatorLike, Outcome
from ..evals._stored import load_log, outcome_from_log
from ._batch import BatchRow, run_batch
from ._local import connect, local_only
from ._worker import StoreFactory

__all__ = ("evaluate_on_ray", "score_runs_on_ray")


async def evaluate_on_ray(
    graph: str,
    dataset: Dataset | Sequence[Case],
    evaluators: Sequence[EvaluatorLike] = (),
    *,
    store: StoreFactory,
    repeat: int = 1,
    batch_id: str | None = None,
    types: Types | None = None,
    prices: Mapping[str, Price] | None = None,
    **batch: Any,
) -> Report:
    """`evaluate` with the runs made on Ray by `run_batch`, scored from their records.

    Args:
        graph: where the graph is, `"package.module:attribute"` (see `run_batch`).
        dataset: the cases; a `Dataset`'s own evaluators score every case too.
        evaluators: evaluators for every case.
        store: opens the checkpoint store the actors share and this process
            reads back (such as `functools.partial(SQLiteStore, path)`).
        repeat: runs per case.
        batch_id: names the batch (a new one by default); run again with the
            same id, finished runs are read back instead of run again.
        types: the classes the runs' contexts may hold besides agentgraph's own.
        prices: model prices by name, for each run's cost.
        **batch: `run_batch`'s other options (`actors`, `concurrency`, ...).

    Blocking: the batch runs in a worker thread while this task waits.
    """
    import anyio.to_thread

    if repeat < 1:
        raise ValueError(f"repeat is at least 1, not {repeat}")
    if not isinstance(dataset, Dataset):
        dataset = Dataset(dataset, name=graph.rpartition(":")[2] or "dataset")
    jobs = [(case, r) for case in dataset.cases for r in range(repeat)]
    keys = [f"{case.name}#{r}" for case, r in jobs]
    inputs = [case.context() for case, _ in jobs]
    batch_id = batch_id or new_run_id()

    def run() -> list[BatchRow]:
        return run_batch(graph, inputs, store=store, batch_id=batch_id, keys=keys, **batch)

    rows = await anyio.to_thread.run_sync(run)
    opened = store()
    try:
        outcomes = [
            await _outcome(opened, row, case, r, types, prices)
            for row, (case, r) in zip(rows, jobs, strict=True)
        ]
    finally:
        await opened.aclose()
    return await score_runs(
        outcomes, (*dataset.evaluators, *evaluators), name=dataset.name, types=types
    )


async def _outcome(
    store: Any,
    row: BatchRow,
    case: Case,
    repeat: int,
    types: Types | None,
    prices: Mapping[str, Price] | None,
) -> Outcome:
    """The row's run read back from the store; its error as the batch reported it."""
    error = None if row.status == "finished" else f"{row.error_type}: {row.error}"
    try:
        log, blobs = await load_log(store, row.run_id)
    except RecordedRunError:
        if error is None:
            raise
        return Outcome(case, None, error=error, run_id=row.run_id, repeat=repeat)
    outcome = outcome_from_log(log, blobs, case, repeat, types=types or Types(), prices=prices)
    if error is not None:
        return Outcome(
            case,
            outcome.context,
            outcome.events,
            outcome.usage,
            outcome.duration,
            outcome.cost,
            error,
            row.run_id,
            repeat,
        )
    return outcome


def _score_share(
    store: StoreFactory,
    evaluators: Sequence[EvaluatorLike],
    runs: list[tuple[str, Case | None]],
    types: Types | None,
    prices: Mapping[str, Price] | None,
    fail_fast: bool,
) -> list[RunResult]:
    """One Ray task's share: its runs read from its own store and scored."""
    import anyio

    async def score() -> list[RunResult]:
        opened = store()
        try:
            chosen: Any = (
                dict(runs) if all(c is not None for _, c in runs) else [r for r, _ in runs]
            )
            report = await score_runs(
                _storage(opened),
                evaluators,
                runs=chosen,
                types=types,
                prices=prices,
                fail_fast=fail_fast,
            )
        finally:
            await opened.aclose()
        return list(report.results)

    return anyio.run(score)


def score_runs_on_ray(
    store: StoreFactory,
    evaluators: Sequence[EvaluatorLike],
    runs: Sequence[str] | Mapping[str, Case],
    *,
    tasks: int = 4,
    name: str = "runs",
    types: Types | None = None,
    prices: Mapping[str, Price] | None = None,
    address: str | None = None,
    fail_fast: bool = False,
) -> Report:
    """`score_runs` over recorded runs, spread over `tasks` Ray tasks; the same report.

    Each task opens the store with `store` (a picklable zero-argument
    callable) and scores its share of `runs`; the evaluators travel to the
    tasks, so they must pickle (functions and the built-in evaluators do).
    A run that cannot be read back is a result whose error says why, as in
    `score_runs`.

    Raises:
        RecordedRunError: with `fail_fast`, a run that cannot be read back, naming it.
    """
    if tasks < 1:
        raise UsageError(f"tasks is at least 1, not {tasks}")
    if isinstance(runs, str):
        raise UsageError(f"runs is a list of run ids, not the string {runs!r}")
    if address is None and "ray" not in sys.modules:
        local_only()
    import ray

    connect(ray, address)
    items: list[tuple[str, Case | None]] = (
        list(runs.items()) if isinstance(runs, Mapping) else [(r, None) for r in runs]
    )
    size = max(1, math.ceil(len(items) / tasks))
    shares = [items[i : i + size] for i in range(0, len(items), size)]
    remote = ray.remote(_score_share)
    pending = [
        remote.remote(store, list(evaluators), share, types, prices, fail_fast) for share in shares
    ]
    results = [result for found in ray.get(pending) for result in found]
    # Repeat numbers count within each share; renumber them over the whole set.
    seen: dict[str, int] = {}
    numbered = []
    for result in results:
        numbered.append(_renumbered(result, seen.get(result.case, 0)))
        seen[result.case] = seen.get(result.case, 0) + 1
    return Report(name, numbered)


def _renumbered(result: RunResult, repeat: int) -> RunResult:
    import attrs

    return attrs.evolve(result, repeat=repeat)
