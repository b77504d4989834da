"""Asking a stage's guards about one subject: in turn, each within its time, on the record.

Guards of a stage are asked one after another, each shown the subject as the
ones before it left it (a rewrite is passed on); the first block ends the
round. A guard that raises or runs out of time blocks, saying so; a rewrite
of the wrong type is a `GuardError`. In a run with a journal the round's
decisions are recorded as one value, so a resumed or replayed step reaches the
same decisions without asking the guards (a judge's model) again.

What a guard spends on models (its decision's `usage`) is checked against the
run's usage limits before it is asked and charged after, fresh or served from
the record, like a model call's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from .._core._errors_guards import GuardError, GuardrailTripped
from .._core._events import GuardDecided
from ..llm._messages import Usage
from ._guard import Decision, Guard, Stage

if TYPE_CHECKING:
    from .._core._runtime import Runtime
    from .._core._usage import Meter

__all__ = (
    "Ask",
    "GuardRound",
    "Record",
    "Round",
    "ask",
    "ask_one",
    "decide",
    "settle",
    "tripped",
)

Record = dict[str, Any]
"""One guard's decision as the journal keeps it: guard, action, reason, value, detail."""

_SHOWN = 300  # characters of a guard's exception kept in its block reason


class Round:
    """The decisions of one round, and whether they came from the record."""

    __slots__ = ("records", "replayed")

    def __init__(self, records: list[Record], replayed: bool) -> None:
        self.records = records
        self.replayed = replayed

    @property
    def blocked(self) -> Record | None:
        last = self.records[-1] if self.records else None
        return last if last is not None and last["action"] == "block" else None

    def value(self, given: Any) -> Any:
        """The subject as the round left it: the last rewrite, else `given`."""
        for record in reversed(self.records):
            if record["action"] == "rewrite":
                return record["value"]
        return given

    @property
    def spent(self) -> Usage | None:
        """What the round's guards spent on models; None when none asked one."""
        found = [r["usage"] for r in self.records if r.get("usage") is not None]
        return sum(found[1:], found[0]) if found else None


Ask = Callable[[Guard, Stage, Any, float], Awaitable[Decision]]
"""How one guard is asked: `ask_one` here, or elsewhere (an activity on Temporal)."""


async def ask_one(item: Guard, stage: Stage, value: Any, limit: float) -> Decision:
    """`item`'s decision; raising or running out of time is a block that says so."""
    own = item.timeout
    seconds = own if own is not None else limit
    decision: Decision | None = None
    try:
        with anyio.move_on_after(seconds):
            decision = await item.check(stage, value)
    except Exception as exc:  # a failing guard must not let through what it was to judge
        text = str(exc)
        text = text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
        return Decision.block(f"the guard raised {type(exc).__name__}: {text}", error=True)
    if decision is None:
        return Decision.block(f"the guard did not decide within {seconds:g}s", timeout=seconds)
    if not isinstance(decision, Decision):
        raise GuardError(
            item.name, stage, f"check returned {type(decision).__name__}, not a Decision"
        )
    if decision.action == "rewrite" and type(decision.value) is not type(value):
        raise GuardError(
            item.name,
            stage,
            f"a rewrite must return a {type(value).__name__}, as it was shown, "
            f"not {type(decision.value).__name__}",
        )
    return decision


async def decide(
    guards: Sequence[Guard],
    stage: Stage,
    value: Any,
    limit: float,
    *,
    beside: bool = False,
    meters: Sequence[Meter] = (),
    one: Ask = ask_one,
) -> list[Record]:
    """Ask `guards` in turn about `value`; the records of what each decided.

    A guard that asks a model (`Guard.model_name`) is asked only if the run's
    `meters` allow one more request to that model.
    """
    records: list[Record] = []
    for item in guards:
        model = item.model_name if isinstance(item.model_name, str) else None
        if model is not None:
            for meter in meters:
                meter.before(model)
        decision = await one(item, stage, value, limit)
        if beside and decision.action == "rewrite":
            raise GuardError(
                item.name,
                stage,
                "a guard run beside the model call cannot rewrite its input; "
                "give it rewrites=True so it runs before the call",
            )
        record: Record = {
            "guard": item.name,
            "action": decision.action,
            "reason": decision.reason,
            "detail": dict(decision.detail),
        }
        if decision.action == "rewrite":
            record["value"] = value = decision.value
        if decision.usage is not None:
            record["usage"] = decision.usage
            record["model"] = model or item.name
        records.append(record)
        if decision.action == "block":
            break
    return records


@attrs.frozen(eq=False)
class GuardRound:
    """`await round()` asks `guards` in turn about `value` at `stage` (what `Journal.value`
    is handed under the name `"guard:<stage>"`).

    `run(one)` asks each guard with `one` instead: a journal that makes effects
    elsewhere (Temporal's) asks a guard that is not deterministic there.
    `started` is called first, when the round is asked rather than served.
    """

    guards: tuple[Guard, ...]
    stage: Stage
    value: Any
    limit: float
    beside: bool = False
    meters: tuple[Meter, ...] = ()
    started: Callable[[], None] | None = None

    def __call__(self) -> Awaitable[list[Record]]:
        return self.run(ask_one)

    async def run(self, one: Ask) -> list[Record]:
        if self.started is not None:
            self.started()
        return await decide(
            self.guards,
            self.stage,
            self.value,
            self.limit,
            beside=self.beside,
            meters=self.meters,
            one=one,
        )


async def ask(rt: Runtime, round: GuardRound) -> Round:
    """The round's records: from the run's record when it has them, else computed (and kept).

    What its guards spent is charged to the run's meters, either way.
    """
    journal = rt.journal
    if journal is None:
        found = Round(await round(), False)
    else:
        computed = False

        def started() -> None:
            nonlocal computed
            computed = True
            if round.started is not None:
                round.started()

        asked = attrs.evolve(round, started=started)
        records = await journal.value(rt, f"guard:{round.stage}", asked)
        found = Round(records, not computed)
    for record in found.records:
        usage = record.get("usage")
        if usage is not None:
            for meter in rt.meters:
                meter.after(record["model"], usage)
    return found


async def settle(
    rt: Runtime, stage: Stage, round: Round, usage: Usage | None = None, partial: bool = False
) -> None:
    """Report the round's decisions as events (the blocking one with a cancelled call's usage)."""
    if rt._run.emit is None:
        return
    for record in round.records:
        blocked = record["action"] == "block"
        await rt.emit(
            GuardDecided(
                rt.step,
                rt.path,
                record["guard"],
                stage,
                record["action"],
                record["reason"],
                record["detail"],
                round.replayed,
                usage if blocked else None,
                blocked and partial,
                record.get("usage"),
            )
        )


def tripped(
    rt: Runtime,
    stage: Stage,
    record: Record,
    subject: Any,
    usage: Usage | None = None,
    partial: bool = False,
) -> GuardrailTripped:
    """The error for a round that blocked."""
    return GuardrailTripped(
        record["guard"],
        stage,
        record["reason"] or "blocked",
        subject=subject,
        detail=record["detail"],
        step=rt.step,
        path=rt.path,
        usage=usage,
        partial=partial,
    )
