"""Tool results masked before they enter the history and the record; what a judge spends
counts in the run's usage and its limits."""

from __future__ import annotations

import orjson
import pytest

from agentgraph import (
    AgentContext,
    GraphRunner,
    NodeFailed,
    Price,
    RunHandle,
    UsageLimitExceeded,
    UsageLimits,
)
from agentgraph.checkpoint import MemoryStore, SQLiteStore
from agentgraph.evals import Judge
from agentgraph.guards import (
    Decision,
    GuardDecided,
    GuardrailTripped,
    Guards,
    JudgeGuard,
    MaskSecrets,
    check_output,
    guard,
)
from agentgraph.llm import ChatRequest, ChatResponse, Message, Usage
from agentgraph.nodes import chat, react_agent
from agentgraph.testing import ScriptedModel
from agentgraph.tools import tool

pytestmark = pytest.mark.anyio

SECRET = "sk-proj-Zq8v3Lr5Tn1Wx7Yb2Kc9Md4Pf6Hg0Js"


@tool
def read_env(name: str) -> str:
    """Read a configuration value."""
    return f"{name}={SECRET}"


def _agent(model: ScriptedModel):
    return react_agent(model, [read_env])


def _model() -> ScriptedModel:
    return ScriptedModel(ScriptedModel.tool_call("read_env", name="OPENAI_API_KEY"), "done")


async def test_a_result_guard_masks_a_tool_result_before_the_history_and_the_record(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    handle = RunHandle()
    events: list[object] = []
    model = _model()
    guards = Guards(results=[MaskSecrets()])
    runner = GraphRunner(guards=guards, sinks=[events.append])
    out = await runner.run(_agent(model), AgentContext("key?"), store=store, handle=handle)
    result = next(m for m in out.history if m.role == "tool")
    assert result.content == "OPENAI_API_KEY=***"
    assert SECRET not in repr(out.history)
    assert SECRET not in repr(model.requests[1])  # the model read the masked result
    decided = [(e.guard, e.stage, e.action) for e in events if isinstance(e, GuardDecided)]
    assert decided == [("mask_secrets", "result", "rewrite")]
    assert handle.run_id is not None
    log = await store.load(handle.run_id)
    assert log is not None and log.effects
    assert SECRET not in repr(log)
    assert "OPENAI_API_KEY=***" in repr(log)
    await store.aclose()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert SECRET.encode() not in raw
    # A replay is served the masked answer, and asks no guard about it again.
    again = SQLiteStore(tmp_path / "runs.db")
    replayed = await GraphRunner(guards=guards).replay(
        _agent(ScriptedModel()), handle.run_id, again
    )
    await again.aclose()
    assert replayed == out


async def test_input_and_output_guards_alone_leave_the_raw_result_in_the_record():
    store, handle = MemoryStore(), RunHandle()
    runner = GraphRunner(guards=Guards(input=[MaskSecrets()], output=[MaskSecrets()]))
    out = await runner.run(_agent(_model()), AgentContext("key?"), store=store, handle=handle)
    assert SECRET in repr(out.history)  # why the result stage exists


async def test_a_blocked_result_is_withheld_from_the_model_or_raised():
    @guard(name="no_keys", stages=["result"])
    def no_keys(stage: str, value: object) -> Decision | None:
        return Decision.block("holds a key") if SECRET in str(value) else None

    model = _model()
    out = await GraphRunner(guards=Guards(results=[no_keys])).run(
        _agent(model), AgentContext("key?")
    )
    withheld = model.requests[1].messages[-1]
    assert withheld.is_error and "withheld by guard 'no_keys': holds a key" in withheld.content
    assert SECRET not in repr(out.history)
    strict = GraphRunner(guards=Guards(results=[no_keys], refuse_tools=False))
    with pytest.raises(NodeFailed) as caught:
        await strict.run(_agent(_model()), AgentContext("key?"))
    error = caught.value.__cause__
    assert isinstance(error, GuardrailTripped) and error.stage == "result"


def _verdict(request: ChatRequest) -> str:
    return orjson.dumps({"reason": "polite", "score": 1.0, "passed": True}).decode()


def _judge() -> tuple[ScriptedModel, JudgeGuard]:
    judge_model = ScriptedModel(_verdict, repeat=True, name="judge-model")
    return judge_model, JudgeGuard(Judge(judge_model, "The answer is polite."), on=["output"])


async def test_the_judges_calls_count_in_the_runs_usage_and_are_visible_apart():
    judge_model, judge = _judge()
    events: list[object] = []
    runner = GraphRunner(guards=Guards(output=[judge]), sinks=[events.append])
    out = await runner.run(chat(ScriptedModel("hello")), AgentContext("hi"))
    assert len(judge_model.requests) == 1
    assert out.usage.requests == 2  # the answer and the judge's verdict
    decided = next(e for e in events if isinstance(e, GuardDecided))
    assert decided.spent is not None and decided.spent.requests == 1
    responded = [e for e in events if type(e).__name__ == "ModelResponded"]
    assert [e.response.usage.requests for e in responded] == [1]  # the agent model alone


async def test_check_output_adds_the_judges_usage_to_the_context():
    judge_model, judge = _judge()
    out = await GraphRunner().run(check_output(judge), AgentContext("hello"))
    assert out.usage.requests == 1 and len(judge_model.requests) == 1


async def test_usage_limits_cap_the_judge():
    judge_model, judge = _judge()
    limits = UsageLimits(requests=1)  # the answer's call uses it up: the judge may not run
    runner = GraphRunner(guards=Guards(output=[judge]), usage_limits=limits)
    with pytest.raises(UsageLimitExceeded):
        await runner.run(chat(ScriptedModel("hello")), AgentContext("hi"))
    assert judge_model.requests == ()


async def test_a_judges_tokens_count_against_a_token_limit():
    def costly(request: ChatRequest):
        return ChatResponse(Message.assistant(_verdict(request)), usage=Usage(900, 100, 1))

    judge_model = ScriptedModel(costly, repeat=True, name="judge-model")
    judge = JudgeGuard(Judge(judge_model, "The answer is polite."), on=["output"])
    runner = GraphRunner(guards=Guards(output=[judge]), usage_limits=UsageLimits(total_tokens=500))
    with pytest.raises(UsageLimitExceeded, match="total tokens"):
        await runner.run(chat(ScriptedModel("hello")), AgentContext("hi"))
    assert len(judge_model.requests) == 1


async def test_a_judge_that_gives_no_verdict_blocks_and_its_spend_still_counts():
    judge_model = ScriptedModel("not a verdict", repeat=True, name="judge-model")
    judge = JudgeGuard(Judge(judge_model, "The answer is polite."), on=["output"])
    events: list[object] = []
    runner = GraphRunner(guards=Guards(output=[judge]), sinks=[events.append])
    with pytest.raises(NodeFailed) as caught:
        await runner.run(chat(ScriptedModel("hello")), AgentContext("hi"))
    error = caught.value.__cause__
    assert isinstance(error, GuardrailTripped)
    assert error.reason.startswith("the judge gave no verdict: no verdict parsed after 2")
    decided = next(e for e in events if isinstance(e, GuardDecided))
    assert decided.spent is not None and decided.spent.requests == len(judge_model.requests) == 2


async def test_a_cost_limit_prices_the_judge_as_its_own_model():
    def costly(request: ChatRequest):
        return ChatResponse(Message.assistant(_verdict(request)), usage=Usage(1000, 0, 1))

    judge_model = ScriptedModel(costly, repeat=True, name="judge-model")
    judge = JudgeGuard(Judge(judge_model, "The answer is polite."), on=["output"])
    agent_price = {"scripted": Price(input=1.0, output=1.0)}
    unpriced = UsageLimits(cost=1.0, prices=agent_price)
    runner = GraphRunner(guards=Guards(output=[judge]), usage_limits=unpriced)
    with pytest.raises(UsageLimitExceeded, match="'judge-model' has no price"):
        await runner.run(chat(ScriptedModel("hello")), AgentContext("hi"))
    assert judge_model.requests == ()  # refused before the judge was asked
    priced = UsageLimits(
        cost=0.005, prices={**agent_price, "judge-model": Price(input=10.0, output=10.0)}
    )
    with pytest.raises(UsageLimitExceeded, match=r"the cost limit is 0\.005"):
        await runner.evolve(usage_limits=priced).run(
            chat(ScriptedModel("hello")), AgentContext("hi")
        )
    assert len(judge_model.requests) == 1  # 1000 tokens at 10 per million: 0.01 > 0.005
