"""Google ADK eval sets: single-turn cases read, in snake_case or camelCase; the rest refused."""

import orjson
import pytest

from agentgraph.evals import (
    Call,
    DatasetError,
    EqualsExpected,
    Trajectory,
    UnsupportedCase,
    evaluate,
    read_adk_evalset,
)
from tests.evals.agents import agent

pytestmark = pytest.mark.anyio


def invocation(question, answer=None, tools=(), camel=False):
    turn = {"invocation_id": "i1", "user_content": {"role": "user", "parts": [{"text": question}]}}
    if answer is not None:
        turn["final_response"] = {"role": "model", "parts": [{"text": answer}]}
    if tools:
        turn["intermediate_data"] = {"tool_uses": list(tools), "tool_responses": []}
    if camel:
        rename = {
            "invocation_id": "invocationId",
            "user_content": "userContent",
            "final_response": "finalResponse",
            "intermediate_data": "intermediateData",
        }
        turn = {rename[k]: v for k, v in turn.items()}
        if "intermediateData" in turn:
            turn["intermediateData"] = {"toolUses": list(tools)}
    return turn


def write(tmp_path, cases, name="calc.evalset.json"):
    path = tmp_path / name
    path.write_bytes(
        orjson.dumps({"eval_set_id": "calc", "name": "calculator", "eval_cases": cases})
    )
    return path


async def test_single_turn_cases_become_cases_with_expected_tool_calls(tmp_path):
    use = {"id": "u1", "name": "calculate", "args": {"op": "add", "a": 2, "b": 3}}
    path = write(
        tmp_path,
        [
            {
                "eval_id": "add",
                "conversation": [invocation("What is 2 + 3?", "The answer is 5.", [use])],
            },
            {
                "evalId": "div",
                "conversation": [invocation("What is 7 / 2?", "The answer is 3.5.", camel=True)],
                "sessionInput": {"appName": "calc", "userId": "u", "state": {"k": 1}},
            },
        ],
    )
    dataset = read_adk_evalset(path)
    assert dataset.name == "calculator"
    add, div = dataset.cases
    assert (add.name, add.input, add.expected) == ("add", "What is 2 + 3?", "The answer is 5.")
    assert add.evaluators == (
        Trajectory([Call("calculate", {"op": "add", "a": 2, "b": 3})], order="exact"),
    )
    assert div.evaluators == (Trajectory([], order="exact"),)
    assert div.metadata["session_state"] == {"k": 1}
    report = await evaluate(agent(), dataset, [EqualsExpected()], progress=False)
    assert [r.passed for r in report.results] == [True, False]  # the agent rounds divisions


@pytest.mark.parametrize(
    ("case", "feature", "words"),
    [
        (
            {"eval_id": "chat", "conversation": [invocation("hi"), invocation("and then?")]},
            "multi-turn",
            "2 invocations needs a thread",
        ),
        (
            {
                "eval_id": "sim",
                "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "x"},
            },
            "conversation_scenario",
            "simulated user",
        ),
        (
            {
                "eval_id": "pic",
                "conversation": [
                    {"user_content": {"parts": [{"inline_data": {"mime_type": "image/png"}}]}}
                ],
            },
            "content",
            "other than text",
        ),
    ],
)
def test_what_cannot_run_here_is_refused_with_the_reason(tmp_path, case, feature, words):
    with pytest.raises(UnsupportedCase, match=words) as caught:
        read_adk_evalset(write(tmp_path, [case]))
    assert caught.value.case == case.get("eval_id") and caught.value.feature == feature
    assert isinstance(caught.value, DatasetError)


def test_files_that_are_not_eval_sets_are_dataset_errors(tmp_path):
    bad = tmp_path / "bad.evalset.json"
    bad.write_text("{")
    with pytest.raises(DatasetError, match="not JSON"):
        read_adk_evalset(bad)
    bad.write_text('{"evalSetId": "x", "eval_cases": []}')  # the set's own fields are snake_case
    with pytest.raises(DatasetError, match="eval_set_id"):
        read_adk_evalset(bad)
    both = {"eval_id": "x", "conversation": [invocation("a")], "conversation_scenario": {}}
    with pytest.raises(DatasetError, match="exactly one"):
        read_adk_evalset(write(tmp_path, [both]))
