"""The LLM judge: a structured verdict from its own model, its usage apart from the agent's."""

import re

import orjson
import pytest

from agentgraph.evals import Case, EqualsExpected, Judge, JudgeError, evaluate
from agentgraph.llm import ChatRequest
from agentgraph.testing import ScriptedModel

from .agents import agent, cases

pytestmark = pytest.mark.anyio

RUBRIC = "The output states the expected number."


def section(text: str, label: str) -> str | None:
    found = re.search(rf"### {label}\n(.*?)(?:\n\n##|$)", text, re.S)
    return None if found is None else found[1]


def grade(request: ChatRequest) -> str:
    """A judge that compares the number in the output with the expected one."""
    prompt = request.messages[-1].content or ""
    output, expected = section(prompt, "Output") or "", section(prompt, "Expected output")
    ok = expected is not None and re.search(rf"\b{re.escape(expected)}\b", output) is not None
    verdict = {"reason": f"looked for {expected} in the output", "score": float(ok), "passed": ok}
    return orjson.dumps(verdict).decode()


def numbers() -> list[Case]:
    return [Case(c.name, c.input, c.expected.removeprefix("The answer is ")[:-1]) for c in cases()]


async def test_the_judge_scores_each_run_and_its_usage_is_counted_apart():
    judge_model = ScriptedModel(grade, repeat=True, name="judge-model")
    judge = Judge(judge_model, RUBRIC, include_expected=True)
    report = await evaluate(agent(), numbers(), [judge], repeat=2)
    verdicts = {(r.case, r.repeat): r.score("judge").value for r in report.results}
    assert verdicts == {(n, i): n != "div" for n in ("add", "mul", "div") for i in range(2)}
    score = report.results[0].score("judge_score")
    assert score.value == 1.0 and score.passed is None
    assert report.results[0].score("judge").reason == "looked for 5 in the output"
    assert report.evaluator_usage.requests == 6  # one verdict per run, on the judge's model
    assert report.usage.requests == 10  # the agent's own calls only
    prompts = [r.messages[-1].content for r in judge_model.requests]
    prompt = next(p for p in prompts if section(p, "Input") == "What is 2 + 3?")
    assert RUBRIC in prompt
    assert section(prompt, "Output") == "The answer is 5." and "### Expected output\n5" in prompt


async def test_a_threshold_decides_the_pass_from_the_number_score():
    reply = '{"reason": "fine", "score": 6, "passed": true}'
    judge = Judge(ScriptedModel(reply, repeat=True), RUBRIC, scale=(0, 10), threshold=7)
    report = await evaluate(agent(), cases()[:1], [judge])
    result = report.results[0]
    assert result.score("judge").value is False and result.score("judge_score").passed is False
    assert not result.passed


async def test_an_answer_that_never_parses_is_an_error_score_after_its_attempts():
    judge_model = ScriptedModel("I think it is fine.", repeat=True)
    judge = Judge(judge_model, RUBRIC, attempts=3)
    report = await evaluate(agent(), cases()[:2], [EqualsExpected(), judge])
    for result in report.results:
        (equals, failed) = result.scores
        assert equals.passed is True
        assert failed.name == "judge" and failed.value is None and failed.passed is False
        assert failed.error.startswith("JudgeError: no verdict parsed after 3 attempts")
        assert failed.usage.requests == 3
    assert len(judge_model.requests) == 6
    assert report.evaluator_usage.requests == 6


async def test_a_score_off_the_scale_is_refused():
    judge = Judge(ScriptedModel('{"reason": "r", "score": 3, "passed": true}'), RUBRIC)
    with pytest.raises(JudgeError, match=r"off the scale 0\.\.1") as caught:
        await judge.judge("anything")
    assert caught.value.usage.requests == 1


async def test_the_judge_takes_plain_values_so_a_guard_can_reuse_it():
    judge_model = ScriptedModel('{"reason": "polite", "score": 1, "passed": true}')
    judgement = await Judge(judge_model, "The reply is polite.").judge("Thank you!")
    assert judgement.verdict.passed and judgement.verdict.reason == "polite"
    assert judgement.usage.requests == 1
    prompt = judge_model.requests[0].messages[-1].content
    assert section(prompt, "Output") == "Thank you!" and "### Input" not in prompt


def test_a_scale_must_run_upwards():
    with pytest.raises(ValueError, match="lowest < highest"):
        Judge(ScriptedModel("x"), RUBRIC, scale=(1, 1))
