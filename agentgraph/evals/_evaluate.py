"""`evaluate`: run a graph over a dataset, `repeat` times per case, and score every run.

Each run is an ordinary run of the graph on the runner given (its sinks,
limits and store included); the events it sends are kept for the
evaluators. A run that fails is a result with an error, never a failed
evaluation, and an evaluator that raises is a score with an error.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TextIO

from .._core._errors import ContextEncodingError, RecordedRunError
from .._core._events import Event, ModelResponded, RunFinished
from .._core._journal import JournalSource
from .._core._json import NO_TYPES, Types, to_data
from .._core._node import Node
from .._core._runner import GraphRunner, new_run_id
from .._core._usage import Price
from .._util._redact import Redaction, Redactor
from ..checkpoint._store import CheckpointStore
from ..llm._messages import Usage
from ._dataset import Case, Dataset
from ._report import Report, RunResult
from ._score import EvaluatorLike, Outcome, Score, run_evaluator
from ._stored import load_log, outcome_from_log, run_ids_of, spread, stored_runs
from ._traced import read_trace_runs

__all__ = ("evaluate", "read_runs", "run_cost", "score_runs")

Progress = Callable[[int, int], None]
"""Told `(done, total)` after every run."""


def run_cost(events: Sequence[Event], prices: Mapping[str, Price]) -> float | None:
    """What a run's model calls cost at `prices` (by model name); None if one is unpriced."""
    cost = 0.0
    for event in events:
        if isinstance(event, ModelResponded):
            price = prices.get(event.model)
            if price is None:
                return None
            cost += price.of(event.response.usage)
    return cost


class _Bar:
    """A one-line progress bar on standard error."""

    def __init__(self, name: str, out: TextIO) -> None:
        self.name = name
        self.out = out

    def __call__(self, done: int, total: int) -> None:
        filled = 30 * done // max(total, 1)
        end = "\n" if done == total else ""
        bar = "#" * filled + "." * (30 - filled)
        self.out.write(f"\r{self.name} [{bar}] {done}/{total}{end}")
        self.out.flush()


def _progress(progress: bool | Progress | None, name: str) -> Progress | None:
    if callable(progress):
        return progress
    if progress is None:
        progress = sys.stderr.isatty()
    return _Bar(name, sys.stderr) if progress else None


async def evaluate(
    graph: Node[Any, Any],
    dataset: Dataset | Sequence[Case],
    evaluators: Sequence[EvaluatorLike] = (),
    *,
    repeat: int = 1,
    concurrency: int = 8,
    runner: GraphRunner | None = None,
    store: JournalSource | None = None,
    prices: Mapping[str, Price] | None = None,
    progress: bool | Progress | None = None,
    redact: Redaction | Redactor | None = None,
) -> Report:
    """Run `graph` on every case `repeat` times, at most `concurrency` runs at once, and score them.

    Args:
        graph: the graph (or node) to evaluate.
        dataset: the cases; a `Dataset`'s own evaluators score every case too.
        evaluators: evaluators for every case (objects with `evaluate`, or functions).
        repeat: runs per case (pass@k and pass^k are given for every k up to it).
        concurrency: runs in flight at once.
        runner: the runner to use (its policy, sinks and limits); a plain one by default.
        store: a checkpoint store every run is recorded in (under its run id).
        prices: model prices by name, for each run's cost (and `MaxCost`).
        progress: show a progress bar on standard error (default: when it is a
            terminal), or a function told `(done, total)` after every run.
        redact: a hook or `Redactor` masking more than secrets in the report.
    """
    if repeat < 1 or concurrency < 1:
        raise ValueError(f"repeat and concurrency are at least 1, not {repeat} and {concurrency}")
    if not isinstance(dataset, Dataset):
        dataset = Dataset(dataset, name=getattr(graph, "name", "dataset"))
    base = runner or GraphRunner()
    redactor = redact if isinstance(redact, Redactor) else Redactor(redact)
    jobs = [(case, r) for case in dataset.cases for r in range(repeat)]
    results: list[RunResult | None] = [None] * len(jobs)
    shared = (*dataset.evaluators, *evaluators)
    tell = _progress(progress, dataset.name)
    done = 0

    async def one(index: int) -> None:
        nonlocal done
        case, rep = jobs[index]
        outcome = await _run(base, graph, case, rep, store, prices)
        results[index] = await _scored(outcome, shared, redactor)
        done += 1
        if tell is not None:
            tell(done, len(jobs))

    # `concurrency` workers take the jobs in turn: a task per job, all waiting
    # at once, would keep a frame per case alive for the garbage collector to scan.
    await spread(len(jobs), concurrency, one)
    return Report(dataset.name, [r for r in results if r is not None])


async def score_runs(
    source: Sequence[Outcome] | CheckpointStore | str | os.PathLike[str],
    evaluators: Sequence[EvaluatorLike] = (),
    *,
    runs: Sequence[str] | Mapping[str, Case] | None = None,
    name: str = "runs",
    types: Types | None = None,
    prices: Mapping[str, Price] | None = None,
    concurrency: int = 16,
    redact: Redaction | Redactor | None = None,
    fail_fast: bool = False,
) -> Report:
    """Score runs that already ran, as `evaluate` scores its own, calling no model and no tool.

    Args:
        source: where the runs are: `Outcome`s made elsewhere (on Ray, say); a
            checkpoint store, whose journals are read back (see `read_runs`);
            or the path of a JSON-lines trace file (see `read_trace_runs`:
            trace records are masked, so scores that read a masked value may
            differ from the same runs' scores on a store).
        evaluators: evaluators for every run (each case's own score it too).
        runs: the runs of a store or trace to score, or a mapping of run
            id to the `Case` it ran (for evaluators that read `expected`); every
            run by default, when the store can list them. A run without a case
            is scored as a case named by its run id.
        name: the report's name.
        types: the classes the runs' contexts may hold besides agentgraph's own.
        prices: model prices by name, for each run's cost.
        concurrency: runs read from the store at once.
        redact: a hook or `Redactor` masking more than secrets in the report.
        fail_fast: raise on the first run of a store that cannot be read back,
            instead of reporting it.

    A run of a store that cannot be read back (not in the store, stopped
    before its first step, or damaged) is a result with the reason as its
    error, like a run that failed, and the others are scored.

    Raises:
        RecordedRunError: with `fail_fast`, the first run that cannot be read
            back (naming it).
        TraceFormatError: a trace file that cannot be read.
    """
    redactor = redact if isinstance(redact, Redactor) else Redactor(redact)
    if isinstance(source, CheckpointStore):
        # Each run is scored as soon as it is read and its outcome dropped: only
        # `concurrency` outcomes (events, contexts, histories) are alive at once.
        chosen = await _chosen(source, runs, concurrency)
        results: list[RunResult | None] = [None] * len(chosen)

        async def score(i: int, outcome: Outcome) -> None:
            results[i] = await _scored(outcome, evaluators, redactor)

        await _each_run(source, chosen, score, types, prices, concurrency, unread=not fail_fast)
        return Report(name, [r for r in results if r is not None])
    if isinstance(source, str | os.PathLike):
        outcomes: Sequence[Outcome] = read_trace_runs(source, runs, prices=prices)
    else:
        outcomes = source
    scored = [await _scored(outcome, evaluators, redactor) for outcome in outcomes]
    return Report(name, scored)


async def read_runs(
    store: CheckpointStore,
    runs: Sequence[str] | Mapping[str, Case] | None = None,
    *,
    types: Types | None = None,
    prices: Mapping[str, Price] | None = None,
    concurrency: int = 16,
) -> list[Outcome]:
    """What each recorded run left behind, read from its journal: no model or tool is called.

    `runs` are run ids, or a mapping of run id to its `Case`; every run in
    the store by default (when it can list them). The events are rebuilt from
    the journal's effects (see `agentgraph.evals` on what a journal lacks).

    Raises:
        RecordedRunError: naming a run that is unknown, has no committed step,
            or is damaged.
        UsageError: `runs` is None and the store cannot list its runs.
    """
    chosen = await _chosen(store, runs, concurrency)
    found: list[Outcome | None] = [None] * len(chosen)

    async def keep(i: int, outcome: Outcome) -> None:
        found[i] = outcome

    await _each_run(store, chosen, keep, types, prices, concurrency)
    return [o for o in found if o is not None]


async def _chosen(
    store: CheckpointStore, runs: Sequence[str] | Mapping[str, Case] | None, concurrency: int
) -> list[tuple[str, Case | None, int]]:
    if concurrency < 1:
        raise ValueError(f"concurrency is at least 1, not {concurrency}")
    listed = await run_ids_of(store) if runs is None else ()
    return stored_runs(runs, listed)


async def _each_run(
    store: CheckpointStore,
    chosen: Sequence[tuple[str, Case | None, int]],
    use: Callable[[int, Outcome], Awaitable[None]],
    types: Types | None,
    prices: Mapping[str, Price] | None,
    concurrency: int,
    *,
    unread: bool = False,
) -> None:
    """`use(i, outcome)` for the i-th chosen run, read from its journal, `concurrency` at once.

    With `unread`, a run that cannot be read back is an outcome whose error
    says why; otherwise its `RecordedRunError` stops the reading.
    """
    known = types or NO_TYPES

    async def read(i: int) -> None:
        run_id, case, repeat = chosen[i]
        try:
            log, blobs = await load_log(store, run_id)
            outcome = outcome_from_log(log, blobs, case, repeat, types=known, prices=prices)
        except RecordedRunError as exc:
            if not unread:
                raise
            unknown = case or Case(run_id, None)
            outcome = Outcome(unknown, None, error=exc, run_id=run_id, repeat=repeat)
        await use(i, outcome)

    await spread(len(chosen), concurrency, read)


async def _scored(
    outcome: Outcome, evaluators: Sequence[EvaluatorLike], redactor: Redactor
) -> RunResult:
    """The outcome's result: a failed run is not scored (its error says enough)."""
    scores: list[Score] = []
    if outcome.error is None:
        for evaluator in (*evaluators, *outcome.case.evaluators):
            scores.extend(await run_evaluator(evaluator, outcome))
    return _result(outcome, scores, redactor)


async def _run(
    base: GraphRunner,
    graph: Node[Any, Any],
    case: Case,
    rep: int,
    store: JournalSource | None,
    prices: Mapping[str, Price] | None,
) -> Outcome:
    events: list[Event] = []
    # A sink of its own per run: the runner's sinks see every run, this one only the run's.
    runner = base.evolve(sinks=(*base.sinks, events.append))
    run_id = new_run_id()
    error: BaseException | None = None
    started = time.perf_counter()
    try:
        context = await runner.run(graph, case.context(), store=store, run_id=run_id)
    except Exception as exc:
        error = exc
        context = next(
            (e.context for e in reversed(events) if isinstance(e, RunFinished)), case.context()
        )
    took = time.perf_counter() - started
    cost = None if prices is None else run_cost(events, prices)
    usage = context.usage if context is not None else Usage()
    return Outcome(case, context, tuple(events), usage, took, cost, error, run_id, rep)


def _plain(value: Any) -> Any:
    try:
        return to_data(value)
    except ContextEncodingError:
        return repr(value)


def _result(outcome: Outcome, scores: list[Score], redactor: Redactor) -> RunResult:
    error = outcome.error
    text = error if error is None or isinstance(error, str) else f"{type(error).__name__}: {error}"
    shown = redactor.record(
        {"output": _plain(outcome.output), "error": text, "reasons": [s.reason for s in scores]}
    )
    masked = [
        s if s.reason is None else Score(s.name, s.value, reason, s.passed, s.error, s.usage)
        for s, reason in zip(scores, shown["reasons"], strict=True)
    ]
    return RunResult(
        outcome.case.name,
        outcome.repeat,
        shown["output"],
        tuple(masked),
        outcome.usage,
        outcome.cost,
        outcome.duration,
        outcome.run_id,
        shown["error"],
    )
