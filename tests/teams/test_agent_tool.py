"""Agents as tools: schema from the input type, usage and trace nested, questions and resumes.

Resume semantics under test: a sub-run runs inside its caller's tool step, so
a resume of the caller runs that step again; everything the sub-run did
through the runtime (model calls, tool results, answers) is served from the
record, so nothing it did is done twice, whether it stopped at a question
or was cut off mid-way.
"""

import anyio
import attrs
import pytest

from agentgraph import (
    AgentContext,
    CheckpointError,
    GraphCancelled,
    GraphRunner,
    Interrupted,
    ModelResponded,
    NodeFinished,
    RunHandle,
    StepLimitExceeded,
    ToolError,
    Usage,
    UsageLimitExceeded,
    UsageLimits,
    tool,
)
from agentgraph.checkpoint import MemoryStore, SQLiteStore
from agentgraph.llm import ToolCall
from agentgraph.nodes import react_agent
from agentgraph.teams import agent_tool
from agentgraph.testing import ScriptedModel
from agentgraph.tools import ToolSite, run_tool_calls

pytestmark = pytest.mark.anyio
call = ScriptedModel.tool_call


@attrs.frozen
class Trip:
    city: str
    days: int


@tool
def book(city: str) -> str:
    """Book a hotel."""
    return f"booked {city}"


def test_the_input_type_is_the_argument_schema():
    sub = react_agent(ScriptedModel("x"), [], name="planner")
    made = agent_tool(sub, input_type=Trip, description="Plan a trip.")
    assert made.name == "planner" and made.spec.description == "Plan a trip."
    assert made.spec.parameters["properties"].keys() == {"city", "days"}
    assert made.spec.parameters["required"] == ["city", "days"]
    text = agent_tool(sub, name="ask_planner")
    assert list(text.spec.parameters["properties"]) == ["task"]


async def test_the_sub_run_is_nested_and_its_usage_joins_the_caller_s():
    inner = ScriptedModel(call("book", city="Rome"), "Booked in Rome.")
    sub = react_agent(inner, [book], name="booker")
    outer = ScriptedModel(call("booker", task="book Rome"), "All set.")
    caller = react_agent(outer, [agent_tool(sub)], name="caller")
    events = []
    out = await GraphRunner(sinks=[events.append]).run(caller, AgentContext("go"))
    assert out.input == "All set."
    assert out.history[2].content == "Booked in Rome."
    responded = [e.response.usage for e in events if isinstance(e, ModelResponded)]
    assert out.usage.requests == 4 and out.usage == sum(responded, Usage())
    paths = {e.step.path for e in events if isinstance(e, NodeFinished)}
    assert ("caller", "tools", "booker", "chat") in paths
    assert ("caller", "tools", "booker", "tools") in paths


async def test_a_sub_run_that_fails_is_an_error_result_the_caller_reads():
    sub = react_agent(ScriptedModel(ValueError("boom")), [], name="broken")
    outer = ScriptedModel(call("broken", task="x"), "Sorry.")
    caller = react_agent(outer, [agent_tool(sub)])
    out = await GraphRunner().run(caller, AgentContext("go"))
    assert out.history[2].is_error and "NodeFailed" in out.history[2].content


async def test_the_step_cap_covers_the_sub_run_and_stops_the_caller():
    loop = ScriptedModel(call("book", city="x"), repeat=True)
    sub = react_agent(loop, [book], name="looper", max_turns=50)
    caller = react_agent(ScriptedModel(call("looper", task="x"), "done"), [agent_tool(sub)])
    with pytest.raises(StepLimitExceeded) as info:
        await GraphRunner(max_steps=20).run(caller, AgentContext("go"))
    assert info.value.path[:3] == ("react_agent", "tools", "looper")


async def test_a_site_tool_outside_a_run_is_refused():
    sub = react_agent(ScriptedModel("x"), [], name="helper")
    with pytest.raises(ToolError, match="call it from a tool_use node"):
        await run_tool_calls(
            [agent_tool(sub)], [ToolCall("1", "helper", {"task": "x"})], context=AgentContext("")
        )
    assert ToolSite  # the type a tool annotates to receive the runtime


@pytest.fixture(params=["memory", "sqlite"])
async def store(request, tmp_path):
    if request.param == "memory":
        yield MemoryStore()
        return
    made = SQLiteStore(tmp_path / "runs.db")
    yield made
    await made.aclose()


async def test_a_question_in_the_sub_run_stops_the_caller_and_the_answer_resumes_it(store):
    inner = ScriptedModel(call("book", city="Rome"), "Booked in Rome.")
    sub = react_agent(inner, [book], name="booker", approve=["book"])
    outer = ScriptedModel(call("booker", task="book Rome"), "All set.")
    caller = react_agent(outer, [agent_tool(sub)], name="caller")
    runner = GraphRunner()
    with pytest.raises(Interrupted) as info:
        await runner.run(caller, AgentContext("go"), store=store)
    stopped = info.value
    assert stopped.question.name == "book"
    assert stopped.path == ("caller", "tools", "booker", "tools")
    assert (len(outer.requests), len(inner.requests)) == (1, 1)
    out = await runner.resume(caller, stopped.run_id, store, answer=True)
    assert out.input == "All set."
    assert out.history[2].content == "Booked in Rome."
    # Neither model was asked again for what the record held.
    assert (len(outer.requests), len(inner.requests)) == (2, 2)
    assert out.usage.requests == 4


async def test_a_refusal_reaches_the_sub_agent(store):
    inner = ScriptedModel(call("book", city="Rome"), "Could not book.")
    sub = react_agent(inner, [book], name="booker", approve=["book"])
    caller = react_agent(ScriptedModel(call("booker", task="x"), "Sorry."), [agent_tool(sub)])
    with pytest.raises(Interrupted) as info:
        await GraphRunner().run(caller, AgentContext("go"), store=store)
    out = await GraphRunner().resume(caller, info.value.run_id, store, answer="too expensive")
    assert out.history[2].content == "Could not book."
    assert "too expensive" in inner.requests[1].messages[-1].content


async def test_a_sub_run_cut_off_mid_way_resumes_without_repeating_its_work(store):
    handle = RunHandle()
    booked = []

    @tool
    def pay(city: str) -> str:
        """Pay for the hotel."""
        booked.append(city)
        return "paid"

    def cut(request):
        handle.cancel()  # the run is stopped while the sub-run waits for this answer
        return "Paid for Rome."

    inner = ScriptedModel(call("pay", city="Rome"), cut, "Paid for Rome.")
    sub = react_agent(inner, [pay], name="payer")
    outer = ScriptedModel(call("payer", task="pay"), "All set.")
    caller = react_agent(outer, [agent_tool(sub)], name="caller")
    with pytest.raises(GraphCancelled):
        await GraphRunner().run(caller, AgentContext("go"), store=store, handle=handle)
    assert booked == ["Rome"]
    run_id = handle.run_id
    out = await GraphRunner().resume(caller, run_id, store)
    assert out.input == "All set."
    assert booked == ["Rome"]  # the sub-run's tool result came from the record
    assert len(outer.requests) == 2  # the caller's first call was served from the record


async def test_two_sub_runs_in_one_turn_ask_in_call_order(store):
    def asker(name):
        inner = ScriptedModel(call("book", city=name), f"{name} booked.")
        return react_agent(inner, [book], name=f"booker_{name}", approve=["book"])

    tools = [agent_tool(asker("a")), agent_tool(asker("b"))]
    outer = ScriptedModel(
        ScriptedModel.tool_calls(("booker_a", {"task": "a"}), ("booker_b", {"task": "b"})),
        "Both booked.",
    )
    caller = react_agent(outer, tools, name="caller")
    runner = GraphRunner()
    with pytest.raises(Interrupted) as first:
        await runner.run(caller, AgentContext("go"), store=store)
    assert first.value.path[2] == "booker_a"
    with pytest.raises(Interrupted) as second:
        await runner.resume(caller, first.value.run_id, store, answer=True)
    assert second.value.path[2] == "booker_b"
    out = await runner.resume(caller, first.value.run_id, store, answer=True)
    assert [m.content for m in out.history if m.role == "tool"] == ["a booked.", "b booked."]
    assert len(outer.requests) == 2


def _looper(name):
    loop = ScriptedModel(call("book", city="x"), repeat=True)
    return agent_tool(react_agent(loop, [book], name=name, max_turns=50))


def _both(*names):
    return ScriptedModel.tool_calls(*[(name, {"task": "x"}) for name in names])


async def test_a_step_limit_hit_by_two_sub_runs_of_one_turn_is_the_limit_itself():
    outer = ScriptedModel(_both("a", "b"), "done")
    caller = react_agent(outer, [_looper("a"), _looper("b")])
    with pytest.raises(StepLimitExceeded) as info:
        await GraphRunner(max_steps=20).run(caller, AgentContext("go"))
    assert info.value.context is not None and info.value.step == 20
    assert info.value.path[:2] == ("react_agent", "tools")
    assert info.value.path[2] in ("a", "b")


async def test_a_usage_limit_hit_by_two_sub_runs_of_one_turn_is_the_limit_itself():
    outer = ScriptedModel(_both("a", "b"), "done")
    caller = react_agent(outer, [_looper("a"), _looper("b")])
    runner = GraphRunner(usage_limits=UsageLimits(requests=4))
    with pytest.raises(UsageLimitExceeded) as info:
        await runner.run(caller, AgentContext("go"))
    assert info.value.context is not None and info.value.path[:2] == ("react_agent", "tools")


async def test_of_two_calls_that_end_the_run_the_first_call_s_error_ends_it():
    ready = anyio.Event()

    @tool
    async def first(site: ToolSite) -> str:
        """Fails after the second call did."""
        with anyio.CancelScope(shield=True):  # so both errors are raised, in reverse order
            await ready.wait()
        raise StepLimitExceeded(context=AgentContext("first"), step=1, path=("first",))

    @tool
    async def second(site: ToolSite) -> str:
        """Fails at once."""
        ready.set()
        raise CheckpointError("the store is gone")

    outer = ScriptedModel(ScriptedModel.tool_calls(("first", {}), ("second", {})), "done")
    with pytest.raises(StepLimitExceeded) as info:
        await GraphRunner().run(react_agent(outer, [first, second]), AgentContext("go"))
    assert info.value.context == AgentContext("first")


async def test_a_run_cancelled_during_two_sub_runs_is_cancelled_with_its_last_context():
    handle = RunHandle()

    def cut(request):
        handle.cancel()
        return call("book", city="x")

    quick = agent_tool(react_agent(ScriptedModel(cut, repeat=True), [book], name="a"))
    caller = react_agent(ScriptedModel(_both("a", "b"), "done"), [quick, _looper("b")])
    with pytest.raises(GraphCancelled) as info:
        await GraphRunner().run(caller, AgentContext("go"), handle=handle)
    assert info.value.context is not None and info.value.context.history[-1].tool_calls
