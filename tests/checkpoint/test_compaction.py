"""Compaction keeps a thread within its budget, and keeps what a conversation cannot lose."""

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    Message,
    Runtime,
    ToolCall,
    node,
)
from agentgraph.checkpoint import (
    Compaction,
    CompactionFailed,
    MemoryStore,
    apply_compaction,
    read_thread,
)
from agentgraph.checkpoint._compact_step import COMPACTION_KEY
from agentgraph.checkpoint._compaction import compact, is_summary, measure
from agentgraph.checkpoint._journal import decode_value
from agentgraph.nodes import chat
from agentgraph.testing import ScriptedModel

words = st.text(alphabet="abcdefgh ", min_size=0, max_size=60)


@st.composite
def conversations(draw):
    """A history of turns: user, maybe tool-call rounds, maybe system notes, an answer."""
    history: list[Message] = []
    calls = 0
    for _ in range(draw(st.integers(1, 7))):
        if draw(st.booleans()) and draw(st.integers(0, 4)) == 0:
            history.append(Message.system("note " + draw(words)))
        history.append(Message.user(draw(words)))
        for _ in range(draw(st.integers(0, 2))):
            ids = [f"c{calls + i}" for i in range(draw(st.integers(1, 3)))]
            calls += len(ids)
            history.append(
                Message.assistant(
                    draw(words), tool_calls=tuple(ToolCall(i, "look", {"q": 1}) for i in ids)
                )
            )
            history.extend(Message.tool(i, draw(words)) for i in ids)
        history.append(Message.assistant(draw(words)))
    return AgentContext(draw(words), history=tuple(history), system_prompt=draw(words) or None)


def summarizer(text: str = "short summary") -> ScriptedModel:
    return ScriptedModel(text, repeat=True)


def policies():
    return st.builds(
        lambda budget, strategy: Compaction(
            budget,
            model=None if strategy == "drop" else summarizer(),
            strategy=strategy,
            keep_last=2,
            summary_tokens=20,
        ),
        st.integers(20, 400),
        st.sampled_from(["drop", "whole", "keep_last", "chunked"]),
    )


def check_pairs(history):
    seen_calls: dict[str, int] = {}
    for i, message in enumerate(history):
        if message.role == "assistant":
            for call in message.tool_calls:
                seen_calls[call.id] = i
        if message.role == "tool":
            assert message.tool_call_id in seen_calls, "a tool result lost its call"
    return seen_calls


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), policies())
def test_compaction_keeps_its_invariants(ctx, policy):
    try:
        out, done = anyio.run(compact, ctx, policy, "t")
    except CompactionFailed as failed:
        assert failed.context is ctx and failed.needed > policy.budget
        return
    assert measure(out, policy.count) <= policy.budget
    assert out.system_prompt == ctx.system_prompt
    if done is None:
        assert out is ctx
        return
    original, kept = list(ctx.history), list(out.history)
    # System messages (other than summaries) stay, in order.
    notes = [m for m in original if m.role == "system" and not is_summary(m)]
    assert [m for m in kept if m.role == "system" and not is_summary(m)] == notes
    # What follows the kept notes and summary is a suffix of the original (its tool
    # results clipped when the latest turn alone was over the budget).
    tail = kept[len(done.kept) + (done.summary is not None) :]
    assert len(tail) == len(original) - done.cut
    for now, then in zip(tail, original[done.cut :], strict=True):
        if done.clip is None or then.role != "tool":
            assert now == then
        else:
            assert (now.tool_call_id, now.role) == (then.tool_call_id, "tool")
            assert now.content == then.content or len(then.content) > done.clip
    # Every tool result keeps its call, and every kept call keeps all of its results.
    calls = check_pairs(kept)
    for message in original:
        if message.role == "tool" and message.tool_call_id in calls:
            assert message in kept
    # The record alone redoes the compaction.
    assert apply_compaction(ctx, done).history == out.history


@pytest.mark.anyio
async def test_a_thread_is_compacted_recorded_and_replayed_exactly():
    store = MemoryStore()
    sent = []

    def reply(request):
        sent.append(request)
        return "x" * 80

    model = ScriptedModel(reply, repeat=True)
    policy = Compaction(120, model=summarizer("they talked"), summary_tokens=20)
    runner = GraphRunner()
    for n in range(6):
        await runner.run(
            chat(model),
            AgentContext(f"question {n}"),
            store=store,
            thread_id="c",
            compaction=policy,
        )
    thread = await read_thread(store, "c")
    assert any(is_summary(m) and "they talked" in m.content for m in thread.messages)
    assert measure(AgentContext(None, history=sent[-1].messages)) <= 120 + 25  # plus the answer
    log = await store.load(thread.head)
    records = [e for e in log.effects if e.key == COMPACTION_KEY]
    if not records:  # the last turn fitted: an earlier one compacted
        logs = [await store.load(run) for run, _ in thread.runs]
        records = [e for lg in logs for e in lg.effects if e.key == COMPACTION_KEY]
    assert records and decode_value(records[0].value)["summary"] == "they talked"
    replayed = await runner.replay(chat(ScriptedModel()), thread.head, store)
    assert replayed.history == thread.context.history


def big_turn(tokens, *, tools):
    """A latest turn of about `tokens` tokens: in tool results, or in the user's message."""
    if not tools:
        return (Message.user("u" * 4 * tokens), Message.assistant("done"))
    calls = (ToolCall("c1", "look", {}), ToolCall("c2", "look", {}))
    return (
        Message.user("look it up"),
        Message.assistant("", tool_calls=calls),
        Message.tool("c1", "a" * 2 * tokens),
        Message.tool("c2", "b" * 2 * tokens),
        Message.assistant("done"),
    )


@pytest.mark.anyio
@pytest.mark.parametrize("times", [2, 10])
@pytest.mark.parametrize("tools", [True, False])
@pytest.mark.parametrize("strategy", ["whole", "keep_last", "chunked", "drop"])
async def test_a_latest_turn_over_the_budget_never_locks_the_thread(times, tools, strategy):
    budget = 200
    store = MemoryStore()
    earlier = (Message.user("hello"), Message.assistant("hi there"))
    seed = AgentContext(None, history=(*earlier, *big_turn(budget * times, tools=tools)))
    await _seed_thread(store, "t", seed)
    policy = Compaction(
        budget,
        model=None if strategy == "drop" else summarizer("they looked things up"),
        strategy=strategy,
        keep_last=2,
        summary_tokens=20,
    )
    model = ScriptedModel("fine", repeat=True)
    runner = GraphRunner()
    for n in range(3):  # the turn after, and the one after that, run under the same policy
        ctx = AgentContext(f"next {n}")
        await runner.run(chat(model), ctx, store=store, thread_id="t", compaction=policy)
        assert measure(AgentContext(None, history=model.requests[-1].messages)) <= budget
    first = model.requests[0].messages
    if tools:  # the results were clipped, the turn kept: its call and results still pair
        check_pairs(first)
        results = [m for m in first if m.role == "tool"]
        assert [m.tool_call_id for m in results] == ["c1", "c2"]
        assert all("characters were cut here" in m.content for m in results)
    else:  # the turn itself was summarized (or dropped)
        assert not any(m.content.startswith("uuuu") for m in first)
        if strategy != "drop":
            assert is_summary(first[0]) and "they looked things up" in first[0].content
    assert len((await read_thread(store, "t")).runs) == 4


async def _seed_thread(store, thread_id, ctx):
    """A thread whose head holds `ctx`, as a turn that ran without compaction left it."""

    @node
    async def replay(c: AgentContext[None], rt: Runtime) -> AgentContext[None]:
        return c.evolve(history=ctx.history)

    with GraphBuilder[None, None]("seed") as g:
        g.start.edge_to(replay).edge_to(g.finish)
    await GraphRunner().run(g.build(), AgentContext(None), store=store, thread_id=thread_id)


@pytest.mark.anyio
async def test_a_clipped_turn_is_recorded_and_replayed_exactly():
    store = MemoryStore()
    seed = AgentContext(None, history=big_turn(2000, tools=True))
    await _seed_thread(store, "t", seed)
    policy = Compaction(300, model=summarizer(), summary_tokens=20)
    runner = GraphRunner()
    out = await runner.run(
        chat(ScriptedModel("fine")),
        AgentContext("next"),
        store=store,
        thread_id="t",
        compaction=policy,
    )
    head = (await read_thread(store, "t")).head
    log = await store.load(head)
    [record] = [e for e in log.effects if e.key == COMPACTION_KEY]
    done = decode_value(record.value)
    assert done["cut"] == 0 and done["summary"] is None and done["clip"] > 0
    replayed = await runner.replay(chat(ScriptedModel()), head, store)
    assert replayed.history == out.history


@pytest.mark.anyio
async def test_a_budget_the_prompt_and_new_message_pass_fails_before_anything_runs():
    store = MemoryStore()
    model = ScriptedModel("fine", repeat=True)
    runner = GraphRunner()
    await runner.run(chat(model), AgentContext("a" * 400), store=store, thread_id="f")
    given_ctx = AgentContext("next " * 40, system_prompt="be brief")
    with pytest.raises(CompactionFailed) as failed:
        await runner.run(
            chat(model),
            given_ctx,
            store=store,
            thread_id="f",
            compaction=Compaction(30, strategy="drop"),
        )
    assert failed.value.budget == 30 and failed.value.needed > 30
    assert "cannot be compacted to 30 tokens" in str(failed.value)
    assert "the system prompt, system messages and the new message" in str(failed.value)
    assert failed.value.context.input == given_ctx.input
    # Nothing ran: the thread is as it was, and free.
    assert len((await read_thread(store, "f")).runs) == 1
    assert model.requests[-1].messages[-1].content == "a" * 400
    await runner.run(chat(model), AgentContext("ok"), store=store, thread_id="f")


def test_a_policy_that_cannot_work_is_refused():
    with pytest.raises(ValueError, match="needs a model"):
        Compaction(100)
    with pytest.raises(ValueError, match="positive integer"):
        Compaction(0, strategy="drop")
    with pytest.raises(ValueError, match="strategy is"):
        Compaction(10, strategy="shrink")
