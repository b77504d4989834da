"""A guard's block is never retried, whatever the retry policy says."""

from __future__ import annotations

import pytest

from agentgraph import AgentContext, GraphRunner, NodeFailed, RetryPolicy
from agentgraph.guards import Decision, GuardrailTripped, Guards, guard
from agentgraph.nodes import chat, react_agent
from agentgraph.testing import ScriptedModel
from agentgraph.tools import tool

pytestmark = pytest.mark.anyio


async def _no_wait(seconds: float) -> None:
    return None


EVERYTHING = RetryPolicy(attempts=3, retry_on=lambda error: True, sleep=_no_wait)


class Counted:
    """A guard function that blocks, counting how often it was asked."""

    def __init__(self) -> None:
        self.asked = 0

    def __call__(self, stage: str, value: object) -> Decision:
        self.asked += 1
        return Decision.block("not this one")


async def _tripped(runner: GraphRunner, model: ScriptedModel) -> GuardrailTripped:
    with pytest.raises(NodeFailed) as caught:
        await runner.run(chat(model), AgentContext("hi"))
    assert caught.value.attempts == 1
    error = caught.value.__cause__
    assert isinstance(error, GuardrailTripped)
    return error


@pytest.mark.parametrize("retry_on_node", [False, True])
async def test_an_input_block_is_asked_once_and_never_sent(retry_on_node: bool) -> None:
    counted = Counted()
    guards = Guards(input=[guard(counted, name="strict", stages=["input"])])
    model = ScriptedModel("ok", repeat=True)
    runner = GraphRunner(guards=guards, retry=EVERYTHING)
    if retry_on_node:  # the node's own policy: excluded all the same
        runner = GraphRunner(guards=guards)
        node = chat(model).with_retry(EVERYTHING)
        with pytest.raises(NodeFailed) as caught:
            await runner.run(node, AgentContext("hi"))
        assert caught.value.attempts == 1
    else:
        await _tripped(runner, model)
    assert counted.asked == 1
    assert not model.requests


async def test_a_block_beside_the_call_never_lets_the_request_be_sent_again() -> None:
    counted = Counted()
    beside = guard(counted, name="judge", stages=["input"], rewrites=False)
    model = ScriptedModel("ok", repeat=True)
    runner = GraphRunner(guards=Guards(input=[beside]), retry=EVERYTHING)
    error = await _tripped(runner, model)
    assert error.stage == "input"
    assert counted.asked == 1
    assert len(model.requests) <= 1  # sent once at most, beside the guard, then dropped


async def test_an_output_block_is_asked_once_and_the_model_once() -> None:
    counted = Counted()
    model = ScriptedModel("rude", repeat=True)
    guards = Guards(output=[guard(counted, name="tone", stages=["output"])])
    await _tripped(GraphRunner(guards=guards, retry=EVERYTHING), model)
    assert counted.asked == 1
    assert len(model.requests) == 1


async def test_a_retry_rule_is_never_asked_about_a_block() -> None:
    seen: list[str] = []

    def rule(attempt: object) -> bool:
        seen.append(type(getattr(attempt, "error", None)).__name__)
        return True

    counted = Counted()
    guards = Guards(output=[guard(counted, name="tone", stages=["output"])])
    policy = RetryPolicy(attempts=3, sleep=_no_wait, rule=rule)
    await _tripped(GraphRunner(guards=guards, retry=policy), ScriptedModel("x", repeat=True))
    assert counted.asked == 1
    assert seen == []


async def test_a_tool_block_raised_is_not_retried() -> None:
    ran: list[str] = []

    @tool
    def wipe(path: str) -> str:
        """Delete a path."""
        ran.append(path)
        return "gone"

    counted = Counted()
    guards = Guards(tools=[guard(counted, name="no_wipe", stages=["tool"])], refuse_tools=False)
    model = ScriptedModel(ScriptedModel.tool_call("wipe", path="/"), repeat=True)
    runner = GraphRunner(guards=guards, retry=EVERYTHING)
    with pytest.raises(NodeFailed) as caught:
        await runner.run(react_agent(model, [wipe]), AgentContext("clean up"))
    assert isinstance(caught.value.__cause__, GuardrailTripped)
    assert counted.asked == 1
    assert ran == []
    assert len(model.requests) == 1
