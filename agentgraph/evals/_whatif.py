"""What-if replays: recorded runs forked at a step and run again with one thing changed.

For each recorded run, `what_if`:

1. replays the run's steps up to the fork point through the changed graph,
   every model call, tool call and answer served from the journal, each
   step's output checked against the record (`ReplayDiverged`, naming the
   step, when the change would have altered what was recorded);
2. forks the run there (`agentgraph.checkpoint.fork`), with the context the
   variant changes (a prompt, a setting), and resumes the fork with the
   changed graph: everything after the fork point runs live and is recorded;
3. reads both runs back from the store and scores them alike.

The same histories are measured: the runs share every step before the fork.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from .._core._context import AgentContext
from .._core._errors import CheckpointError, RecordedRunError, ReplayDiverged, UsageError
from .._core._graph import Graph
from .._core._journal import JournalSource
from .._core._json import Types
from .._core._node import Node
from .._core._runner import GraphRunner, as_graph, new_run_id
from .._core._usage import Price
from .._util._redact import Redaction, Redactor
from ..checkpoint._journal import StoreJournal
from ..checkpoint._records import RunLog, effect_step
from ..checkpoint._resume import decode_contexts
from ..checkpoint._store import CheckpointStore, fork
from ..llm._messages import Usage
from ._dataset import Case
from ._evaluate import _scored
from ._report import Report, RunResult
from ._score import EvaluatorLike
from ._stored import load_log, outcome_from_log, spread, stored_runs

__all__ = ("Variant", "WhatIfCase", "WhatIfReport", "what_if")


@attrs.frozen
class Variant:
    """One change to measure on recorded runs.

    Args:
        graph: the graph to run from the fork point on: the recorded graph with
            a node replaced, or built on another model (same graph and node
            names as the recorded one, so the record fits it).
        at: the run-wide index of the last recorded step kept: steps up to it
            come from the journal, later ones run live.
        context: changes the context at the fork point (a system prompt, a
            setting); None keeps the recorded one.
        name: names the variant in reports.
    """

    graph: Node[Any, Any]
    at: int = attrs.field(default=1, kw_only=True)
    context: Callable[[AgentContext[Any]], AgentContext[Any]] | None = attrs.field(
        default=None, kw_only=True
    )
    name: str = attrs.field(default="what-if", kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self.at < 1:
            raise ValueError(f"a fork keeps at least step 1; at is {self.at}")


@attrs.frozen
class WhatIfCase:
    """One recorded run beside its changed replay.

    Attributes:
        recorded: the recorded run's result (scored from its journal).
        changed: the new run's result.
        forked_at: the last step both runs share.
        diverged_at: the first step where they differ (its path, node, next
            node or context); None when the new run did exactly what the
            recorded one did.
        live_usage: what the new run spent after the fork (its model calls).
    """

    recorded: RunResult
    changed: RunResult
    forked_at: int
    diverged_at: int | None
    live_usage: Usage

    @property
    def case(self) -> str:
        return self.recorded.case


def _pairs(items: Sequence[WhatIfCase]) -> tuple[WhatIfCase, ...]:
    return tuple(items)


@attrs.frozen
class WhatIfReport:
    """Every run's recorded and changed results, side by side.

    `before` and `after` are ordinary reports of the recorded and the changed
    runs, so `compare(report.before, report.after)` (or `compare(report)`)
    says what the change did, per case and overall.
    """

    name: str
    variant: str
    cases: tuple[WhatIfCase, ...] = attrs.field(converter=_pairs)

    @property
    def before(self) -> Report:
        return Report(f"{self.name} (recorded)", [c.recorded for c in self.cases])

    @property
    def after(self) -> Report:
        return Report(f"{self.name} ({self.variant})", [c.changed for c in self.cases])

    @property
    def live_usage(self) -> Usage:
        """What the changed runs spent after their fork points, together."""
        return sum((c.live_usage for c in self.cases), Usage())

    def differing(self) -> tuple[WhatIfCase, ...]:
        """The runs whose changed replay differs from the recording."""
        return tuple(c for c in self.cases if c.diverged_at is not None)


class _PrefixChecked(CheckpointError):
    """The replayed prefix matched its record to the fork point: the check is done."""


class _PrefixJournal(StoreJournal):
    """Replays a run's steps up to the fork point, then stops the replay."""

    def commit(self, rt: Any, source: Any, target: Any, out: Any, local: int) -> None:
        super().commit(rt, source, target, out, local)
        if self._seq == len(self._expected):
            raise _PrefixChecked("the prefix matched its record")


class _PrefixSource:
    """A journal source serving one prefix replay (what `GraphRunner.replay` opens)."""

    def __init__(self, journal: StoreJournal) -> None:
        self.journal = journal

    async def open_run(self, graph: Graph[Any, Any], ctx: AgentContext[Any], run_id: str) -> Any:
        raise UsageError("a prefix replay opens no new run")

    async def open_resume(
        self, graph: Graph[Any, Any], run_id: str, answer: Any, types: Types
    ) -> Any:
        raise UsageError("a prefix replay resumes no run")

    async def open_replay(self, graph: Graph[Any, Any], run_id: str, types: Types) -> Any:
        return self.journal


def _cut(log: RunLog, at: int) -> int:
    cut = next((i for i, r in enumerate(log.steps) if r.step == at), None)
    if cut is None:
        steps = ", ".join(str(r.step) for r in log.steps)
        raise RecordedRunError(
            log.run.run_id, f"it has no committed step {at} to fork at (its steps: {steps})"
        )
    return cut


async def _check_prefix(
    runner: GraphRunner,
    graph: Graph[Any, Any],
    store: CheckpointStore,
    log: RunLog,
    blobs: Mapping[str, bytes],
    cut: int,
    types: Types,
) -> None:
    """Replay steps up to `cut` through `graph` from the journal; raise if they differ.

    `runner` is the caller's runner without its sinks and step callbacks: the
    check is no run of theirs, and the exception that stops it at the fork
    point must not reach them as the recorded run started again and failed.
    """
    contexts = decode_contexts(log, types=types, blobs=blobs)
    last = log.steps[cut].steps
    journal = _PrefixJournal(
        store,
        log.run.run_id,
        initial=contexts[0],
        base=contexts[0],
        effects=[e for e in log.effects if effect_step(e.key) <= last],
        expected=list(zip(log.steps[: cut + 1], contexts[1 : cut + 2], strict=True)),
        types=types,
        blobs=blobs,
    )
    try:
        await runner.replay(graph, log.run.run_id, _PrefixSource(journal))
    except _PrefixChecked:
        return
    except ReplayDiverged as error:
        error.add_note(f"what-if of run {log.run.run_id!r}, forked at step {log.steps[cut].step}")
        raise
    raise ReplayDiverged(  # the run reached finish before the fork point: it cannot fork there
        f"the replay finished before step {log.steps[cut].step}",
        context=contexts[-1],
        step=log.steps[cut].step,
        path=log.steps[cut].path,
    )


def _diverged(old: RunLog, new: RunLog, types: Types, blobs: Mapping[str, bytes]) -> int | None:
    """The first step where two runs differ (path, node, next node or context)."""
    before = decode_contexts(old, types=types, blobs=blobs)
    after = decode_contexts(new, types=types, blobs=blobs)
    for i, (a, b) in enumerate(zip(old.steps, new.steps, strict=False)):
        if (a.step, a.path, a.node, a.next) != (b.step, b.path, b.node, b.next):
            return min(a.step, b.step)
        if before[i + 1] != after[i + 1]:
            return a.step
    if len(old.steps) == len(new.steps):
        return None
    longer = old.steps if len(old.steps) > len(new.steps) else new.steps
    return longer[min(len(old.steps), len(new.steps))].step


async def what_if(
    store: CheckpointStore,
    runs: Sequence[str] | Mapping[str, Case],
    change: Variant,
    evaluators: Sequence[EvaluatorLike] = (),
    *,
    runner: GraphRunner | None = None,
    types: Types | None = None,
    prices: Mapping[str, Price] | None = None,
    concurrency: int = 8,
    redact: Redaction | Redactor | None = None,
    name: str = "what-if",
) -> WhatIfReport:
    """Replay each recorded run with `change` from its fork point on, and score both.

    `runs` are run ids, or a mapping of run id to the `Case` it ran. Each new
    run is recorded in `store` (a fork of its recorded run).

    Raises:
        ReplayDiverged: the change alters a step before the fork point (another
            node, another request, another output): it names the step and the run.
        RecordedRunError: a run that is unknown, has no committed step, is
            damaged, or has no step `change.at`.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency is at least 1, not {concurrency}")
    if not isinstance(store, JournalSource):
        raise UsageError(f"{type(store).__name__} cannot resume runs: what_if needs a StoreBase")
    base = runner or GraphRunner()
    checker = base.evolve(sinks=(), on_step=())
    graph = as_graph(change.graph)
    known = base.types.with_types(*graph.data_types(), *((types,) if types else ()))
    redactor = redact if isinstance(redact, Redactor) else Redactor(redact)
    chosen = stored_runs(runs, ())
    found: list[WhatIfCase | None] = [None] * len(chosen)
    shared = tuple(evaluators)

    async def one(run_id: str, case: Case | None, repeat: int) -> WhatIfCase:
        log, blobs = await load_log(store, run_id)
        cut = _cut(log, change.at)
        await _check_prefix(checker, graph, store, log, blobs, cut, known)
        recorded = outcome_from_log(log, blobs, case, repeat, types=known, prices=prices)
        forked_at = decode_contexts(log, types=known, blobs=blobs)[cut + 1]
        context = None if change.context is None else change.context(forked_at)
        new_id = await fork(store, run_id, change.at, context=context, new_id=new_run_id())
        error: BaseException | None = None
        try:
            await base.resume(graph, new_id, store)
        except Exception as exc:
            error = exc
        new_log, new_blobs = await load_log(store, new_id)
        changed = outcome_from_log(
            new_log, new_blobs, recorded.case, repeat, types=known, prices=prices
        )
        if error is not None:
            changed = attrs.evolve(changed, error=error)
        spent = _minus(changed.usage, (context or forked_at).usage)
        return WhatIfCase(
            await _scored(recorded, shared, redactor),
            await _scored(changed, shared, redactor),
            change.at,
            _diverged(log, new_log, known, {**blobs, **new_blobs}),
            spent,
        )

    async def work(i: int) -> None:
        found[i] = await one(*chosen[i])

    await spread(len(chosen), concurrency, work)
    return WhatIfReport(name, change.name, [c for c in found if c is not None])


def _minus(after: Usage, before: Usage) -> Usage:
    """What was spent from `before` to `after`, field by field."""
    fields = attrs.fields(Usage)
    return Usage(**{f.name: getattr(after, f.name) - getattr(before, f.name) for f in fields})
