"""An LLM judge: a model grades an output against a rubric and returns a structured verdict.

The judge is a `generate` node asking for a `Verdict` (reason, score on a
scale, pass or fail). What it judges travels as labelled context sections
(`Input`, `Output`, `Expected output`), never folded into the rubric, so the
prompt shows plainly what was judged. It runs with a runner of its own, so
its model calls and usage are counted apart from the agent's. `Judge.judge`
takes plain values and knows nothing of evaluations, so a guard can call it
on a live answer as well.
"""

from __future__ import annotations

from typing import Annotated, Any

import attrs

from .._core._context import AgentContext
from .._core._errors import JudgeError, OutputError
from .._core._events import ModelResponded, RunFinished
from .._core._runner import GraphRunner
from ..llm._messages import Usage
from ..llm._model import ChatModel
from ..nodes._generate import Generate, generate
from ..nodes._sections import Section
from ..structured._guide import Guide, generable
from ._score import Outcome, Score

__all__ = ("Judge", "Judgement", "Verdict")


@generable("A judge's verdict on an output, against a rubric.")
@attrs.frozen
class Verdict:
    """What the judge answered: why, how good on the scale, and whether it passes."""

    reason: Annotated[str, Guide("why, in one or two sentences; written before the verdict")]
    score: Annotated[float, Guide("how well the output meets the rubric, on the scale given")]
    passed: Annotated[bool, Guide("true if the output meets the rubric")]


@attrs.frozen
class Judgement:
    """A verdict and the judge's own model usage."""

    verdict: Verdict
    usage: Usage


_SECTIONS = (
    Section("Input", "input"),
    Section("Output", "output"),
    Section("Expected output", "expected"),
)


def _check_scale(instance: Any, attribute: Any, value: tuple[float, float]) -> None:
    if len(value) != 2 or not value[0] < value[1]:
        raise ValueError(f"a scale is (lowest, highest) with lowest < highest, not {value!r}")


@attrs.frozen
class Judge:
    """Grades an output against `rubric` with `model`: a bool score and a number score.

    Args:
        model: the judge's model (not the agent's).
        rubric: what a good output is.
        scale: the range of the number score, (worst, best).
        include_input: show the case's input to the judge.
        include_expected: show the case's expected output to the judge.
        attempts: answers to ask for before a verdict that does not parse is an error.
        threshold: a number score at or above it passes; without it the
            judge's own `passed` decides.
        name: the scores' name (the number score is `<name>_score`).
        runner: the runner the judge runs on (a plain one by default).
    """

    model: ChatModel
    rubric: str
    scale: tuple[float, float] = attrs.field(
        default=(0.0, 1.0), kw_only=True, validator=_check_scale
    )
    include_input: bool = attrs.field(default=True, kw_only=True)
    include_expected: bool = attrs.field(default=False, kw_only=True)
    attempts: int = attrs.field(default=2, kw_only=True)
    threshold: float | None = attrs.field(default=None, kw_only=True)
    name: str = attrs.field(default="judge", kw_only=True)
    runner: GraphRunner = attrs.field(factory=GraphRunner, kw_only=True)

    def node(self, sections: tuple[Section, ...] = _SECTIONS) -> Generate[Verdict]:
        """The `generate` node that asks for the verdict, showing `sections` of the state."""
        low, high = self.scale
        instruction = (
            f"Judge the output against this rubric:\n\n{self.rubric}\n\n"
            f"Give `score` from {low:g} (fails the rubric entirely) to {high:g} (meets it "
            "fully), `passed` true when the output meets the rubric, and `reason` first."
        )
        return generate(
            Verdict,
            instruction=instruction,
            model=self.model,
            context=sections,
            input=False,  # what is judged goes in the sections above, from the state
            attempts=self.attempts,
            name=self.name,
        )

    async def judge(self, output: Any, *, input: Any = None, expected: Any = None) -> Judgement:
        """The verdict on `output` (and the input and expected output, when given).

        Raises:
            JudgeError: the answers did not parse after every attempt, or the
                score is off the scale.
        """
        state = {"output": output, "input": input, "expected": expected}
        shown = tuple(
            s for s in _SECTIONS if s.source == "output" or state[str(s.source)] is not None
        )
        spent = Usage()
        verdict: Verdict | None = None
        ctx = AgentContext(None, state=state)
        try:
            async with self.runner.stream(self.node(shown), ctx) as events:
                async for event in events:
                    if isinstance(event, ModelResponded):
                        spent += event.response.usage
                    elif isinstance(event, RunFinished) and event.error is None:
                        verdict = event.context.input
        except Exception as exc:
            cause = exc.__cause__ if isinstance(exc.__cause__, OutputError) else exc
            raise JudgeError(_why(cause, self.attempts), usage=spent) from exc
        if not isinstance(verdict, Verdict):
            raise JudgeError("the judge's run ended without a verdict", usage=spent)
        low, high = self.scale
        if not low <= verdict.score <= high:
            why = f"the judge's score {verdict.score:g} is off the scale {low:g}..{high:g}"
            raise JudgeError(why, usage=spent)
        return Judgement(verdict, spent)

    async def evaluate(self, outcome: Outcome) -> tuple[Score, ...]:
        """The judge's scores for a run: `<name>` (bool) and `<name>_score` (number)."""
        case = outcome.case
        try:
            done = await self.judge(
                outcome.output,
                input=_judged_input(case.input) if self.include_input else None,
                expected=case.expected if self.include_expected else None,
            )
        except JudgeError as exc:
            failed = Score.failed(self.name, f"JudgeError: {exc}")
            return (attrs.evolve(failed, usage=exc.usage),)
        verdict = done.verdict
        passed = verdict.passed if self.threshold is None else verdict.score >= self.threshold
        return (
            Score(self.name, passed, verdict.reason, passed, None, done.usage),
            Score.of(f"{self.name}_score", verdict.score, threshold=self.threshold),
        )


def _judged_input(value: Any) -> Any:
    if isinstance(value, AgentContext):
        return value.input
    return value


def _why(error: BaseException, attempts: int) -> str:
    if isinstance(error, OutputError):
        problems = "; ".join(error.errors) or str(error)
        n = len(error.attempts) or attempts
        return f"no verdict parsed after {n} attempt{'s' if n != 1 else ''}: {problems}"
    return f"{type(error).__name__}: {error}"
