"""What an evaluator sees (`Outcome`), what it returns (`Score`), and how one is called.

An evaluator never knows how the case was run: it receives what the run left
behind (the case, the final context, the recorded events, usage, duration)
and returns named scores. Anything with an `evaluate(outcome)` method (sync
or async) is an evaluator, and so is a plain function of the outcome.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from .._core._context import AgentContext
from .._core._events import Event
from .._util._redact import masked
from ..llm._messages import Usage

if TYPE_CHECKING:
    from ._dataset import Case

__all__ = ("Evaluator", "Outcome", "Score", "ScoreValue", "evaluator_name", "run_evaluator")

_MISSING = object()

ScoreValue = bool | int | float | str
"""A score's value: a verdict (bool), a number, or a label (str)."""


def _check_value(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, bool | int | float | str):
        raise TypeError(
            f"score {instance.name!r}: a value is a bool, a number or a label, "
            f"not {type(value).__name__}"
        )


@attrs.frozen
class Score:
    """One named result of an evaluator.

    Attributes:
        name: what was scored (`equals`, `trajectory`, `judge`, ...).
        value: a bool, a number or a label; None when the evaluator failed.
        reason: why, in a sentence (optional).
        passed: whether this score counts as a pass: the value itself for a
            bool, a comparison with the evaluator's threshold for a number
            when it has one, else None (the score does not decide a pass).
        error: the evaluator's error (`Type: message`, secrets masked) when it
            raised or could not produce a value; such a score never passes.
        usage: model usage the evaluator itself spent (an LLM judge), kept
            apart from the agent's.
    """

    name: str
    value: ScoreValue | None = attrs.field(validator=_check_value)
    reason: str | None = None
    passed: bool | None = None
    error: str | None = None
    usage: Usage | None = None

    @classmethod
    def of(
        cls,
        name: str,
        value: ScoreValue,
        reason: str | None = None,
        *,
        threshold: float | None = None,
        usage: Usage | None = None,
    ) -> Score:
        """A score whose `passed` follows from its value (and `threshold` for a number)."""
        passed: bool | None = None
        if isinstance(value, bool):
            passed = value
        elif isinstance(value, int | float) and threshold is not None:
            passed = value >= threshold
        return cls(name, value, reason, passed, None, usage)

    @classmethod
    def failed(cls, name: str, error: BaseException | str) -> Score:
        """The score of an evaluator that raised: no value, an error entry, not passed."""
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        return cls(name, None, None, False, masked(text))


@attrs.frozen
class Outcome:
    """What one run of one case left behind: all an evaluator may read.

    Attributes:
        case: the case that was run.
        context: the final context (the last good one when the run failed).
        events: every event of the run, in order.
        usage: the agent's model usage.
        duration: seconds the run took.
        cost: what the run's model calls cost, when prices were given (else None).
        error: the run's error, when it did not reach finish (or its text, for
            runs made elsewhere: `Type: message`).
        run_id: the run's id.
        repeat: which repetition of the case this is (from 0).
    """

    case: Case
    context: AgentContext[Any] | None
    events: tuple[Event, ...] = ()
    usage: Usage = attrs.field(factory=Usage)
    duration: float = 0.0
    cost: float | None = None
    error: BaseException | str | None = None
    run_id: str = ""
    repeat: int = 0
    _memo: dict[Any, Any] = attrs.field(factory=dict, init=False, eq=False, repr=False)

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """`compute()`, once per outcome and key: what several evaluators derive from the events."""
        found = self._memo.get(key, _MISSING)
        if found is _MISSING:
            found = self._memo[key] = compute()
        return found

    @property
    def output(self) -> Any:
        """The run's output: the final context's input (None when the run failed)."""
        if self.error is not None or self.context is None:
            return None
        return self.context.input

    @property
    def steps(self) -> int:
        """How many steps the run took."""
        from .._core._events import NodeFinished

        return int(
            self.memo("steps", lambda: sum(isinstance(e, NodeFinished) for e in self.events))
        )


@runtime_checkable
class Evaluator(Protocol):
    """Scores an `Outcome`: `evaluate` returns a `Score` or several (sync or async).

    A plain function of the outcome is an evaluator too: it may return a
    bool, a number, a label, a `Score`, or a mapping of names to those.
    """

    @property
    def name(self) -> str:
        """The default name of the scores it gives."""
        ...

    def evaluate(self, outcome: Outcome) -> Any:
        """The scores for `outcome` (a `Score`, several, or an awaitable of those)."""
        ...


EvaluatorLike = Evaluator | Callable[[Outcome], Any]


def evaluator_name(evaluator: EvaluatorLike) -> str:
    """The name an evaluator's scores go by: its `name`, or the function's name."""
    name = getattr(evaluator, "name", None)
    if isinstance(name, str) and hasattr(evaluator, "evaluate"):
        return name
    return getattr(evaluator, "__name__", None) or type(evaluator).__name__


async def run_evaluator(evaluator: EvaluatorLike, outcome: Outcome) -> tuple[Score, ...]:
    """Call `evaluator` on `outcome`; an evaluator that raises gives an error score.

    Cancellation is not caught: it is not the evaluator's failure.
    """
    try:
        # `evaluate` looked up directly: an isinstance check against the protocol costs more
        # than most evaluators do.
        method = getattr(evaluator, "evaluate", None)
        result = method(outcome) if method is not None else evaluator(outcome)  # type: ignore[operator]
        if type(result) is Score:  # what the built-in evaluators return: no more to ask
            return (result,)
        if inspect.isawaitable(result):
            result = await _awaited(result)
        return _scores(evaluator_name(evaluator), result)
    except Exception as exc:
        return (Score.failed(evaluator_name(evaluator), exc),)


async def _awaited(result: Awaitable[Any]) -> Any:
    return await result


def _scores(name: str, result: Any) -> tuple[Score, ...]:
    if isinstance(result, Score):
        return (result,)
    if isinstance(result, bool | int | float | str):
        return (Score.of(name, result),)
    if isinstance(result, Mapping):
        found: list[Score] = []
        for key, value in result.items():
            found.extend(_scores(str(key), value))
        return tuple(found)
    if isinstance(result, Sequence) and all(isinstance(s, Score) for s in result):
        return tuple(result)
    raise TypeError(
        f"evaluator {name!r} returned {type(result).__name__}; return a Score, a bool, "
        "a number, a label, or a mapping of names to those"
    )
