"""Interrupts: a node asks, the run stops with `Interrupted`, and `resume(answer=...)` goes on."""

from collections import Counter

import pytest

from agentgraph import (
    AgentContext,
    GraphRunner,
    Interrupted,
    Message,
    NodeFailed,
    ResumeError,
    RetryPolicy,
    RunFinished,
    RunHandle,
    ToolCall,
    node,
    tool,
)
from agentgraph.nodes import react_agent, tool_use
from agentgraph.testing import ScriptedModel
from tests.checkpoint.support import Tally, chain

pytestmark = pytest.mark.anyio


def asking(work: Counter):
    @node
    async def review(ctx: AgentContext[int], rt) -> AgentContext[str]:
        draft = await rt.once("draft", lambda: work.update(["draft"]) or f"draft {ctx.input}")
        try:
            verdict = await rt.interrupt({"approve": draft})
        except Exception:  # a node's own error handling must not swallow the interrupt
            work["swallowed"] += 1
            raise
        work["after question"] += 1
        return ctx.with_input(f"{draft}: {verdict}")

    return review


async def test_an_interrupt_stops_the_run_and_the_answer_resumes_it(store):
    work = Counter()
    tally = Tally()
    review = asking(work).with_retry(RetryPolicy(retry_on=lambda e: True, initial=0, jitter=0))

    @node
    async def after(ctx):
        tally.runs["after"] += 1
        return ctx

    graph = chain("g", tally.adder("before"), chain("inner", review), after)
    events = []
    runner = GraphRunner(sinks=[events.append])
    with pytest.raises(Interrupted) as info:
        await runner.run(graph, AgentContext(1), store=store)
    stopped = info.value
    assert stopped.question == {"approve": "draft 2"}
    assert stopped.path == ("g", "inner", "review") and stopped.step == 3
    assert stopped.context.input == 2 and stopped.run_id
    assert "waiting for an answer at g/inner/review (step 3)" in str(stopped)
    assert isinstance(events[-1], RunFinished) and events[-1].error is stopped
    assert work == Counter({"draft": 1})  # not swallowed, not retried

    handle = RunHandle()
    out = await runner.resume(graph, stopped.run_id, store, answer="yes", handle=handle)
    assert out.input == "draft 2: yes"
    assert work == Counter({"draft": 1, "after question": 1})  # the draft was not made again
    assert tally.runs == Counter({"before": 1, "after": 1})
    assert handle.run_id == stopped.run_id


async def test_resuming_without_an_answer_asks_again(store):
    work = Counter()
    graph = chain("g", asking(work))
    with pytest.raises(Interrupted) as first:
        await GraphRunner().run(graph, AgentContext(1), store=store)
    with pytest.raises(Interrupted) as second:
        await GraphRunner().resume(graph, first.value.run_id, store)
    assert second.value.question == first.value.question and work["draft"] == 1
    out = await GraphRunner().resume(graph, first.value.run_id, store, answer=None)
    assert out.input == "draft 1: None"


async def test_an_answer_with_no_question_waiting_is_refused(store):
    handle = RunHandle()
    graph = Tally().three_levels()
    await GraphRunner().run(graph, AgentContext(0), store=store, handle=handle)
    with pytest.raises(ResumeError, match="no question is waiting"):
        await GraphRunner().resume(graph, handle.run_id, store, answer="yes")


async def test_an_interrupt_needs_a_store():
    with pytest.raises(NodeFailed) as info:
        await GraphRunner().run(chain("g", asking(Counter())), AgentContext(1))
    assert "needs a checkpoint store" in str(info.value.__cause__)


async def test_two_questions_in_one_step_are_answered_one_resume_at_a_time(store):
    @node
    async def form(ctx, rt):
        name = await rt.interrupt("name?")
        age = await rt.interrupt("age?")
        return ctx.with_input((name, age))

    graph = chain("g", form)
    with pytest.raises(Interrupted) as info:
        await GraphRunner().run(graph, AgentContext(None), store=store)
    rid = info.value.run_id
    with pytest.raises(Interrupted) as info:
        await GraphRunner().resume(graph, rid, store, answer="Ada")
    assert info.value.question == "age?"
    out = await GraphRunner().resume(graph, rid, store, answer=36)
    assert out.input == ("Ada", 36)


class Files:
    def __init__(self):
        self.deleted = []

        @tool(retry_safe=False)
        def delete(path: str) -> str:
            """Delete a file."""
            self.deleted.append(path)
            return f"deleted {path}"

        @tool
        def listing() -> str:
            """List the files."""
            return "a.txt b.txt"

        self.delete, self.listing = delete, listing


def cleanup_model():
    return ScriptedModel(
        ScriptedModel.tool_calls(("listing", {}), ("delete", {"path": "a.txt"})),
        "Cleaned up.",
    )


async def test_react_agent_waits_for_approval_and_runs_an_approved_call_once(store):
    files = Files()
    model = cleanup_model()
    agent = react_agent(model, [files.listing, files.delete], approve=("delete",))
    with pytest.raises(Interrupted) as info:
        await GraphRunner().run(agent, AgentContext("clean up"), store=store)
    call = info.value.question
    assert (
        isinstance(call, ToolCall)
        and call.name == "delete"
        and dict(call.arguments) == {"path": "a.txt"}
    )
    assert files.deleted == [] and info.value.path == ("react_agent", "tools")
    out = await GraphRunner().resume(agent, info.value.run_id, store, answer=True)
    assert out.input == "Cleaned up."
    assert files.deleted == ["a.txt"] and len(model.requests) == 2
    tool_results = [(m.name, m.content, m.is_error) for m in out.history if m.role == "tool"]
    assert tool_results == [("listing", "a.txt b.txt", False), ("delete", "deleted a.txt", False)]


async def test_react_agent_tells_the_model_about_a_refused_call(store):
    files = Files()
    model = cleanup_model()
    agent = react_agent(model, [files.listing, files.delete], approve=("delete",))
    with pytest.raises(Interrupted) as info:
        await GraphRunner().run(agent, AgentContext("clean up"), store=store)
    out = await GraphRunner().resume(agent, info.value.run_id, store, answer="keep a.txt")
    assert files.deleted == []
    refusal = next(m for m in out.history if m.role == "tool" and m.name == "delete")
    assert refusal.is_error
    assert refusal.content == "the call to tool 'delete' was refused by the user: keep a.txt"
    assert refusal.tool_call_id == call_id(out, "delete")
    # The model read the refusal in its next request.
    assert refusal in model.requests[1].messages
    assert out.input == "Cleaned up."


def call_id(ctx, name):
    return next(c.id for m in ctx.history for c in m.tool_calls if c.name == name)


async def test_approval_names_must_be_tools_of_the_node():
    files = Files()
    with pytest.raises(ValueError, match=r"approve names tools this node does not have: \['rm'\]"):
        tool_use([files.delete], approve=("rm",))


async def test_tool_use_without_approval_needs_no_store():
    files = Files()
    model = ScriptedModel(ScriptedModel.tool_call("delete", path="x"), "done")
    out = await GraphRunner().run(react_agent(model, [files.delete]), AgentContext("go"))
    assert files.deleted == ["x"] and out.input == "done"
    assert isinstance(out.history[-1], Message)
