"""Threads: a run continues the conversation of the turns before it, in every store."""

import anyio
import pytest

from agentgraph import AgentContext, GraphRunner, Interrupted, Message, RunStarted, node
from agentgraph.checkpoint import (
    SQLiteStore,
    ThreadBusy,
    ThreadDamaged,
    ThreadError,
    ThreadMoved,
    ThreadNotFound,
    delete_thread,
    fork_thread,
    list_threads,
    read_thread,
    rewind_thread,
)
from agentgraph.checkpoint._threads import reset_thread
from agentgraph.nodes import chat, react_agent
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def recording_model():
    """A model that answers `answer N` and keeps the texts of every request it was sent."""
    sent: list[list[str]] = []

    def reply(request):
        sent.append([m.content for m in request.messages])
        return f"answer {len(sent)}"

    return ScriptedModel(reply, repeat=True), sent


async def test_chat_continues_a_thread_with_its_system_prompt(store):
    model, sent = recording_model()
    runner = GraphRunner()
    first = AgentContext("hi", system_prompt="be brief")
    await runner.run(chat(model), first, store=store, thread_id="t1")
    out = await runner.run(chat(model), AgentContext("and then?"), store=store, thread_id="t1")
    assert sent[1] == ["be brief", "hi", "answer 1", "and then?"]
    assert out.input.content == "answer 2"
    thread = await read_thread(store, "t1")
    assert [m.content for m in thread.messages] == ["hi", "answer 1", "and then?", "answer 2"]
    assert thread.context.system_prompt == "be brief"
    assert [run for run, _ in thread.runs][-1] == thread.head


async def test_react_agent_continues_a_thread_without_repeating_the_question(store):
    model, sent = recording_model()
    agent = react_agent(model, [], system_prompt="helpful")
    runner = GraphRunner()
    await runner.run(agent, AgentContext("one"), store=store, thread_id="t")
    out = await runner.run(agent, AgentContext("two"), store=store, thread_id="t")
    assert out.input == "answer 2"
    assert sent[1] == ["helpful", "one", "answer 1", "two"]


async def test_a_thread_goes_on_in_a_new_store_object_on_the_same_file(tmp_path):
    model, sent = recording_model()
    async with SQLiteStore(tmp_path / "t.db") as store:
        await GraphRunner().run(chat(model), AgentContext("remember 7"), store=store, thread_id="x")
    async with SQLiteStore(tmp_path / "t.db") as store:
        await GraphRunner().run(chat(model), AgentContext("what?"), store=store, thread_id="x")
    assert sent[1] == ["remember 7", "answer 1", "what?"]


async def test_the_thread_id_is_on_the_runtime_and_run_started(store):
    seen = []

    @node(name="look")
    async def look(ctx, rt):
        seen.append(rt.thread_id)
        return ctx

    events = []
    runner = GraphRunner(sinks=[events.append])
    await runner.run(look, AgentContext("x"), store=store, thread_id="th")
    await runner.run(look, AgentContext("y"))
    started = [e for e in events if isinstance(e, RunStarted)]
    assert seen == ["th", None]
    assert [e.thread_id for e in started] == ["th", None]


async def test_the_state_carries_over_and_the_new_context_sets_what_it_gives(store):
    @node(name="count")
    async def count(ctx):
        return ctx.with_state(turns=ctx.state.get("turns", 0) + 1)

    runner = GraphRunner()
    await runner.run(count, AgentContext("a", state={"user": "ann"}), store=store, thread_id="s")
    out = await runner.run(count, AgentContext("b"), store=store, thread_id="s")
    assert dict(out.state) == {"user": "ann", "turns": 2}


async def test_threads_are_listed_read_forked_rewound_and_deleted(store):
    model, sent = recording_model()
    runner = GraphRunner()
    for text in ("one", "two"):
        await runner.run(chat(model), AgentContext(text), store=store, thread_id="main")
    listed = await list_threads(store)
    assert [t.thread for t in listed] == ["main"] and len(listed[0].runs) == 2

    side = await fork_thread(store, "main", new_thread_id="side", at_message=2)
    assert side == "side"
    await runner.run(chat(model), AgentContext("three"), store=store, thread_id="side")
    assert sent[-1] == ["one", "answer 1", "three"]
    main = await read_thread(store, "main")
    assert len(main.messages) == 4  # the fork left it as it was

    # A turn read by its run id; rewinding keeps the turns after the cut readable.
    first_turn = main.runs[0][0]
    earlier = await read_thread(store, "main", run_id=first_turn)
    assert [m.content for m in earlier.messages] == ["one", "answer 1"]
    await rewind_thread(store, "main", 2)
    await runner.run(chat(model), AgentContext("again"), store=store, thread_id="main")
    assert sent[-1] == ["one", "answer 1", "again"]
    old_head = main.head
    kept = await read_thread(store, "main", run_id=old_head)
    assert [m.content for m in kept.messages][-1] == "answer 2"

    await delete_thread(store, "side")
    assert [t.thread for t in await list_threads(store)] == ["main"]
    with pytest.raises(ThreadNotFound) as missing:
        await read_thread(store, "side")
    assert missing.value.thread_id == "side"
    with pytest.raises(ThreadNotFound):
        await delete_thread(store, "side")
    with pytest.raises(ThreadNotFound, match="run 'nope' is not a turn of this thread") as other:
        await read_thread(store, "main", run_id="nope")
    assert (other.value.thread_id, other.value.run_id) == ("main", "nope")
    with pytest.raises(ThreadError, match="at_message is 0 to"):
        await fork_thread(store, "main", at_message=99)


def gated():
    gate = anyio.Event()
    entered = anyio.Event()

    @node(name="wait")
    async def wait(ctx):
        entered.set()
        await gate.wait()
        return ctx.with_input("done")

    return wait, gate, entered


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        ("", "1 to 256 printable characters, not 0 characters"),
        ("x" * 257, "not 257 characters"),
        ("x" * 100_000, "not 100,000 characters"),
        ("a\nb", "holding unprintable ones"),
        (42, "a thread id is a string, not int"),
    ],
)
async def test_a_bad_thread_id_is_one_error_everywhere_echoed_clipped(store, bad, what):
    model, _ = recording_model()
    await GraphRunner().run(chat(model), AgentContext("hi"), store=store, thread_id="main")
    calls = [
        lambda: GraphRunner().run(chat(model), AgentContext("hi"), store=store, thread_id=bad),
        lambda: read_thread(store, bad),
        lambda: fork_thread(store, "main", new_thread_id=bad),
        lambda: rewind_thread(store, bad, 0),
        lambda: delete_thread(store, bad),
    ]
    for call in calls:
        with pytest.raises(ThreadError, match=what) as refused:
            await call()
        assert type(refused.value) is ThreadError
        assert len(str(refused.value)) < 300
    assert [t.thread for t in await list_threads(store)] == ["main"]


async def test_errors_echo_a_long_id_clipped_and_keep_it_whole(store):
    long = "r" * 100_000
    with pytest.raises(ThreadNotFound) as missing:
        await read_thread(store, "t" * 256)
    assert len(str(missing.value)) < 300
    model, _ = recording_model()
    await GraphRunner().run(chat(model), AgentContext("hi"), store=store, thread_id="main")
    with pytest.raises(ThreadNotFound) as other:
        await read_thread(store, "main", run_id=long)
    assert "(100,000 characters)" in str(other.value) and len(str(other.value)) < 300
    assert other.value.run_id == long


async def test_a_second_run_on_a_busy_thread_is_refused_with_its_context(store):
    wait, gate, entered = gated()
    runner = GraphRunner()
    outcome = []

    async def first():
        outcome.append(await runner.run(wait, AgentContext("a"), store=store, thread_id="b"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        await entered.wait()
        given = AgentContext("second")
        with pytest.raises(ThreadBusy) as busy:
            await runner.run(wait, given, store=store, thread_id="b")
        assert busy.value.context is given and busy.value.thread_id == "b"
        assert "thread 'b' is busy" in str(busy.value)
        with pytest.raises(ThreadBusy):
            await delete_thread(store, "b")
        gate.set()
    assert outcome[0].input == "done"
    # Once the first run ended, the thread is free again.
    again = await runner.run(wait, AgentContext("c"), store=store, thread_id="b")
    assert again.input == "done"


async def test_a_turn_refused_on_a_busy_thread_gives_back_the_lease_of_its_run(store):
    wait, gate, entered = gated()
    runner = GraphRunner()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: runner.run(wait, AgentContext("a"), store=store, thread_id="b"))
        await entered.wait()
        # The turn asks for the thread's lease and its run's at once: refused the first,
        # it gives the second back, so the run id starts elsewhere at once.
        with pytest.raises(ThreadBusy):
            await runner.run(wait, AgentContext("x"), store=store, thread_id="b", run_id="r2")
        gate.set()
        out = await runner.run(wait, AgentContext("y"), store=store, thread_id="c", run_id="r2")
    assert out.input == "done"


async def test_an_interrupted_turn_resumes_and_moves_the_thread_on(store):
    @node(name="ask")
    async def ask(ctx, rt):
        answer = await rt.interrupt("name?")
        return ctx.append(Message.assistant(f"hello {answer}")).with_input(answer)

    runner = GraphRunner()
    with pytest.raises(Interrupted) as stopped:
        await runner.run(ask, AgentContext("hi"), store=store, thread_id="q")
    run_id = stopped.value.run_id
    assert (await read_thread(store, "q")).head is None
    await runner.resume(ask, run_id, store, answer="ann")
    thread = await read_thread(store, "q")
    assert thread.head == run_id and thread.messages[-1].content == "hello ann"


async def test_a_damaged_conversation_is_refused_with_the_given_context(tmp_path):
    model, _ = recording_model()
    async with SQLiteStore(tmp_path / "d.db") as store:
        await GraphRunner().run(chat(model), AgentContext("hi"), store=store, thread_id="d")
    import sqlite3

    with sqlite3.connect(tmp_path / "d.db") as conn:
        conn.execute("UPDATE steps SET context = x'7b7b'")
    async with SQLiteStore(tmp_path / "d.db") as store:
        given = AgentContext("next")
        with pytest.raises(ThreadDamaged) as damaged:
            await GraphRunner().run(chat(model), given, store=store, thread_id="d")
        assert damaged.value.context is given and damaged.value.thread_id == "d"
        with pytest.raises(ThreadDamaged):
            await read_thread(store, "d")


async def test_a_thread_needs_a_store_that_keeps_threads():
    from agentgraph import UsageError

    model, _ = recording_model()
    with pytest.raises(UsageError, match="keeps threads"):
        await GraphRunner().run(chat(model), AgentContext("x"), thread_id="t")
    with pytest.raises(UsageError, match="compaction= applies to a thread"):
        await GraphRunner().run(chat(model), AgentContext("x"), compaction=object())


async def test_a_streamed_run_continues_a_thread(store):
    model, sent = recording_model()
    runner = GraphRunner()
    for text in ("a", "b"):
        async with runner.stream(
            chat(model), AgentContext(text), store=store, thread_id="st"
        ) as ev:
            kinds = [type(e).__name__ async for e in ev]
    assert kinds[0] == "RunStarted"
    assert sent[1] == ["a", "answer 1", "b"]


async def test_reset_thread_makes_a_context_the_head_the_next_turn_goes_on_from(store):
    model, sent = recording_model()
    runner = GraphRunner()
    await runner.run(chat(model), AgentContext("one"), store=store, thread_id="t")
    head = (await read_thread(store, "t")).head
    told = AgentContext(None, history=(Message.user("set by hand"),), state={"mood": "glad"})
    with pytest.raises(ThreadMoved):
        await reset_thread(store, "t", told, expect_head="another run")
    assert (await read_thread(store, "t")).head == head
    made = await reset_thread(store, "t", told, expect_head=head)
    thread = await read_thread(store, "t")
    assert thread.head == made and [m.content for m in thread.messages] == ["set by hand"]
    out = await runner.run(chat(model), AgentContext("two"), store=store, thread_id="t")
    assert sent[-1] == ["set by hand", "two"]
    assert out.state["mood"] == "glad"
    earlier = await read_thread(store, "t", run_id=head)
    assert [m.content for m in earlier.messages] == ["one", "answer 1"]
