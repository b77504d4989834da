"""A turn costs the same on a long thread as on a short one; long runs resume and replay in
one pass. Costs are counted (bytes, messages decoded and compared), never timed."""

import json
from pathlib import Path

import attrs
import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    Interrupted,
    Message,
    node,
)
from agentgraph.checkpoint import (
    MemoryStore,
    RunLog,
    SQLiteStore,
    ThreadHead,
    _bases,
    _codec,
    read_thread,
)

pytestmark = pytest.mark.anyio

DATA = Path(__file__).parent / "data"


@node(name="reply")
async def reply(ctx):
    return ctx.append(Message.assistant(f"noted {len(ctx.history)}"))


def said(turn, n):
    return [Message.user(f"turn {turn} message {i}") for i in range(n)]


class Counted:
    """The payload bytes a store was given and gave back since the last `reset`."""

    def __init__(self, store):
        self.written = self.read = 0
        write, load = store.write, store.load

        def counted_write(records):
            self.written += sum(r.nbytes for r in records)
            write(records)

        async def counted_load(run_id):
            log = await load(run_id)
            self.read += 0 if log is None else log.nbytes
            return log

        store.write, store.load = counted_write, counted_load

    def reset(self):
        self.written = self.read = 0


@pytest.fixture
def decoded(monkeypatch):
    """How many messages were decoded from the store."""
    count = [0]
    real = _codec.decode_message

    def counting(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(_codec, "decode_message", counting)
    return count


async def _turns(runner, store, thread, turns, each):
    for turn in range(turns):
        await runner.run(reply, AgentContext(None, said(turn, each)), store=store, thread_id=thread)


async def test_a_turn_writes_and_reads_the_same_on_a_long_thread_as_on_a_short_one(store):
    runner, counted = GraphRunner(), Counted(store)
    await _turns(runner, store, "long", 20, 49)  # 1,000 messages
    await _turns(runner, store, "short", 2, 4)  # 10 messages
    costs = {}
    for thread in ("long", "short"):
        await _turns(runner, store, thread, 1, 1)  # the head is now a turn of two messages
        counted.reset()
        await runner.run(reply, AgentContext(None, said(99, 1)), store=store, thread_id=thread)
        costs[thread] = (counted.written, counted.read)
    assert costs["long"][0] <= costs["short"][0] + 16  # only the digits of a longer count
    assert costs["long"][1] <= costs["short"][1] + 16
    assert len((await read_thread(store, "long")).messages) == 1000 + 4


async def test_the_next_turn_decodes_nothing_of_the_thread(decoded):
    store, runner = MemoryStore(), GraphRunner()
    await _turns(runner, store, "t", 10, 99)
    decoded[0] = 0
    out = await runner.run(reply, AgentContext(None, said(10, 1)), store=store, thread_id="t")
    assert decoded[0] == 0 and len(out.history) == 1002


async def test_a_new_store_object_reads_the_thread_through_its_bases(tmp_path, decoded):
    path = tmp_path / "threads.db"
    runner = GraphRunner()
    async with SQLiteStore(path) as store:
        await _turns(runner, store, "t", 5, 9)
        expected = (await read_thread(store, "t")).messages
    decoded[0] = 0
    async with SQLiteStore(path) as fresh:  # nothing kept for it: every turn is decoded once
        thread = await read_thread(fresh, "t")
        assert thread.messages == expected and len(expected) == 50
        assert decoded[0] == 50
        out = await runner.run(reply, AgentContext(None, said(5, 1)), store=fresh, thread_id="t")
        assert decoded[0] == 50 and out.history[:50] == list(expected)


@pytest.mark.parametrize("store", ["sqlite", "postgres"], indirect=True)
async def test_a_cold_read_of_a_thread_reads_its_turns_in_one_go(store, decoded):
    runner = GraphRunner()
    await _turns(runner, store, "t", 6, 9)
    _bases._kept.clear()  # as in a new process: no context kept for the store
    calls = {"load": 0, "load_chain": 0}
    load, load_chain = store.load, store.load_chain

    async def counted_load(run_id):
        calls["load"] += 1
        return await load(run_id)

    async def counted_chain(run_id):
        calls["load_chain"] += 1
        logs = await load_chain(run_id)
        assert len(logs) == 5  # the turns before the head, newest first, back to the first
        return logs

    store.load, store.load_chain = counted_load, counted_chain
    decoded[0] = 0
    thread = await read_thread(store, "t")
    assert len(thread.messages) == 60 and decoded[0] == 60
    assert calls == {"load": 1, "load_chain": 1}  # the head's log, then its bases': two reads
    assert [m.content for m in thread.messages[:2]] == ["turn 0 message 0", "turn 0 message 1"]


async def test_a_kept_context_is_not_used_for_a_run_that_changed_since(decoded):
    store, runner = MemoryStore(), GraphRunner()
    await _turns(runner, store, "t", 3, 3)
    head = (await read_thread(store, "t")).head
    log = await store.load(head)
    # Another process adds a step to the head run: the context kept for it is stale.
    extra = attrs.evolve(log.steps[-1], seq=len(log.steps) + 1, context=b'{"h":[{"r":"user"}]}')
    store.write((extra,))
    decoded[0] = 0
    thread = await read_thread(store, "t")
    assert decoded[0] > 0 and len(thread.messages) == 13


async def test_a_thread_written_before_turns_were_stored_as_changes_loads_and_resumes(store):
    saved = json.loads((DATA / "thread_turns_v1.json").read_text())
    for text in saved["logs"]:
        store.write(RunLog.loads(text).records())
    first, waiting = saved["runs"]
    store.write((ThreadHead(first, saved["thread"], None, saved["updated"]),))
    await store.flush()
    thread = await read_thread(store, "old")
    assert [m.content for m in thread.messages] == ["my name is ann", "hello ann"]

    @node(name="ask")
    async def ask(ctx, rt):
        answer = await rt.interrupt("name?")
        return ctx.append(Message.assistant(f"hello {answer}")).with_input(answer)

    runner = GraphRunner()
    out = await runner.resume(ask, waiting, store, answer="bob")
    assert [m.content for m in out.history][-2:] == ["and again", "hello bob"]
    assert (await read_thread(store, "old")).head == waiting
    await runner.replay(ask, waiting, store)
    with pytest.raises(Exception) as stopped:
        await runner.run(
            ask, AgentContext("more", [Message.user("three")]), store=store, thread_id="old"
        )
    later = (await read_thread(store, "old")).messages
    assert stopped.typename == "Interrupted" and len(later) == 4


@pytest.fixture
def compared(monkeypatch):
    """How many times two messages were compared."""
    count = [0]
    real = Message.__eq__

    def counting(self, other):
        count[0] += 1
        return real(self, other)

    monkeypatch.setattr(Message, "__eq__", counting)
    return count


def _loop(steps):
    @node(name="grow")
    async def grow(ctx, rt):
        if len(ctx.history) == steps - 1:
            await rt.interrupt("last one?")
        return ctx.append(Message.assistant(f"step {len(ctx.history)}"))

    def again(ctx):
        return grow if len(ctx.history) < steps else None

    with GraphBuilder("loop") as g:
        g.start.edge_to(grow)
        grow.edge_to(again, targets=(grow,))
        grow.edge_to(g.finish)
    return g.build()


async def test_resume_and_replay_of_a_1000_step_run_decode_and_compare_each_message_once(
    decoded, compared
):
    steps = 1000
    graph, store, runner = _loop(steps), MemoryStore(), GraphRunner(max_steps=steps + 10)
    with pytest.raises(Interrupted) as stopped:
        await runner.run(graph, AgentContext(None), store=store)
    run_id = stopped.value.run_id
    decoded[0] = 0
    out = await runner.resume(graph, run_id, store, answer="yes")
    assert len(out.history) == steps and decoded[0] <= steps
    decoded[0] = compared[0] = 0
    await runner.replay(graph, run_id, store)
    assert decoded[0] <= steps + 1 and compared[0] <= steps + 1
