"""A thread turn's compaction as the turn's first step, `compact`.

The plan (what is cut, what is kept) is made when the turn opens, from its
first context alone, so a budget that cannot be met is refused before the run
exists. The summary is written inside the run, by the step: its request goes
through `Runtime.call_model` like a node's (events and spans, usage limits,
guards, the journal), a failed summary is retried under the run's policy like
a node, and the step is committed like any other.

Two records make it exact: the plan, written when the turn opens, tells a
resume or replay that starts from the beginning that the run's first step is
`compact`; what was done and what the summary cost, written once the summary
came back, let that step be done again from the record alone, with no model
call (a resume is not given the policy, whose model and counter are live).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import attrs

from .._core._context import AgentContext
from .._core._errors import CheckpointError, ResumeError
from .._core._errors_threads import CompactionFailed
from .._core._node import Node
from ..llm._messages import Usage
from ._compaction import Compacted, Compaction, Plan, apply_compaction, carry_out
from ._journal import StoreJournal, decode_value, encode_value

if TYPE_CHECKING:
    from .._core._runtime import Runtime
    from ._records import StepRecord

__all__ = (
    "COMPACTION_KEY",
    "PLAN_KEY",
    "STEP_NAME",
    "CompactStep",
    "entry_of",
    "recorded_step",
    "start_with",
)

PLAN_KEY = "0.0.0:thread.compaction.plan"
"""The effect key of a turn's compaction plan (step 0: written before any step ran)."""
COMPACTION_KEY = "0.0.0:thread.compaction"
"""The effect key of what the turn's compaction did (a `Compacted`, and the summary's usage)."""
STEP_NAME = "compact"


@attrs.frozen(eq=False, slots=True, repr=False)
class CompactStep(Node[Any, Any]):
    """The step that compacts a turn's first context as `planned`.

    With `policy`, the summary is asked of its model through the run; with
    `recorded` (a resumed or replayed turn), the step redoes what the record
    says and calls nothing.
    """

    thread_id: str
    planned: Plan
    policy: Compaction | None = None
    recorded: tuple[Compacted, Usage] | None = None

    def __repr__(self) -> str:
        return f"CompactStep({self.thread_id!r}, cut={self.planned.cut})"

    async def run(self, ctx: AgentContext[Any], rt: Runtime) -> AgentContext[Any]:
        journal = rt.journal
        if self.recorded is not None:
            done, usage = self.recorded
            out = apply_compaction(ctx, done).add_usage(usage)
            if isinstance(journal, StoreJournal):
                journal.entry = out
            return out
        assert self.policy is not None, "a compaction step has a policy or a record"
        model = self.policy.model
        ask = None if model is None else partial(rt.call_model, model)
        try:
            out, done, usage = await carry_out(ctx, self.policy, self.thread_id, self.planned, ask)
        except CompactionFailed as failed:
            failed.step, failed.path = rt.step, rt.path
            raise
        if isinstance(journal, StoreJournal):
            data = {**done.as_data(), "usage": usage}
            journal.record(COMPACTION_KEY, "value", encode_value(data, "compaction"))
            journal.entry = out
        return out


def start_with(
    journal: StoreJournal, thread_id: str, planned: Plan | None, policy: Compaction
) -> None:
    """Make `planned` (when there is one) the first step of the turn `journal` records."""
    if planned is None:
        return
    journal.prelude = CompactStep(thread_id, planned, policy, name=STEP_NAME)
    journal.record(PLAN_KEY, "value", encode_value(planned.as_data(), "compaction plan"))


def recorded_step(journal: StoreJournal, thread_id: str) -> CompactStep | None:
    """The `compact` step a turn resumed or replayed from its beginning starts with, if any.

    Raises:
        ResumeError: the turn stopped before its summary was recorded; making
            it needs the policy's model, which only a new turn is given.
    """
    found = journal.lookup(PLAN_KEY, "value")
    if found is None:
        return None
    done = journal.lookup(COMPACTION_KEY, "value")
    if done is None:
        raise ResumeError(
            f"turn of thread {thread_id!r} stopped before its compaction's summary was "
            "recorded, and only the compaction policy (given to runner.run) can write it: "
            "run the turn again on the thread",
            run_id=journal.run_id,
            context=journal.initial,
            step=0,
        )
    try:
        planned = _plan_of(decode_value(found, journal.types))
        data = decode_value(done, journal.types)
        usage = data.pop("usage")
        compacted = Compacted(
            int(data["cut"]),
            tuple(int(i) for i in data["kept"]),
            data["summary"],
            str(data["strategy"]),
            int(data["before"]),
            int(data["after"]),
            _clip_of(data),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CheckpointError(
            f"run {journal.run_id!r}: its compaction record cannot be read: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(usage, Usage) or not isinstance(compacted.summary, str | None):
        raise CheckpointError(f"run {journal.run_id!r}: its compaction record is damaged")
    return CompactStep(thread_id, planned, recorded=(compacted, usage), name=STEP_NAME)


def entry_of(
    steps: Sequence[StepRecord], contexts: Sequence[AgentContext[Any]]
) -> AgentContext[Any]:
    """The context a recorded turn's graph started from: the output of its `compact`
    step when it has one (numbered 0 in the root graph, which no graph node is)."""
    if steps and steps[0].local == 0 and len(steps[0].path) == 1 and steps[0].node == STEP_NAME:
        return contexts[1]
    return contexts[0]


def _plan_of(data: dict[str, Any]) -> Plan:
    kept = tuple(int(i) for i in data["kept"])
    cut, needed, before = int(data["cut"]), int(data["needed"]), int(data["before"])
    return Plan(cut, kept, needed, before, clip=_clip_of(data))


def _clip_of(data: dict[str, Any]) -> int | None:
    """A record's clip of tool results (records from before clipping have none)."""
    clip = data.get("clip")
    return None if clip is None else int(clip)
