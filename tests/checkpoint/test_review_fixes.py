"""Checkpoint fixes: questions asked in retries and fan-outs, retried fan-outs, store safety."""

import itertools
import sqlite3
from collections import Counter

import anyio
import pytest

from agentgraph import (
    AgentContext,
    CheckpointError,
    GraphRunner,
    Interrupted,
    ResumeError,
    RetryPolicy,
    RunBusy,
    node,
)
from agentgraph.checkpoint import Effect, MemoryStore, RunRecord, SQLiteStore, StepRecord, fork
from agentgraph.checkpoint._resume import attempts
from agentgraph.nodes import map_each, parallel
from tests.checkpoint.support import Crash, chain

pytestmark = pytest.mark.anyio

NO_WAIT = RetryPolicy(initial=0, jitter=0)


async def test_a_question_asked_in_a_retry_is_answered_in_that_retry(store):
    drafts, flaky = itertools.count(1), [True]

    @node
    async def review(ctx: AgentContext[int], rt) -> AgentContext[str]:
        draft = await rt.once("draft", lambda: f"draft #{next(drafts)}")
        if flaky and flaky.pop():
            raise ConnectionError("transient")  # retried by the default policy
        return ctx.with_input(f"{draft}: {await rt.interrupt({'approve': draft})}")

    graph, runner = chain("g", review), GraphRunner(retry=NO_WAIT)
    with pytest.raises(Interrupted) as stop:
        await runner.run(graph, AgentContext(1), store=store)
    assert stop.value.question == {"approve": "draft #2"}
    out = await runner.resume(graph, stop.value.run_id, store, answer="yes")
    assert out.input == "draft #2: yes"  # the approved draft, not asked again
    assert next(drafts) == 3


async def test_a_retried_fan_out_does_not_reuse_the_failed_attempts_results(store):
    calls = itertools.count(1)

    @node
    async def fetch(ctx: AgentContext[int], rt) -> AgentContext[int]:
        n = await rt.once("fetch", lambda: next(calls))
        if n == 1:
            raise ValueError(f"unusable answer #{n}")
        return ctx.with_input(n)

    @node
    async def other(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx

    fan = parallel(fetch, other, merge=lambda ctx, outs: outs[0]).with_retry(
        RetryPolicy(attempts=3, initial=0, jitter=0, retry_on=lambda e: isinstance(e, ValueError))
    )
    out = await GraphRunner().run(chain("g", fan), AgentContext(0), store=store, run_id="fan")
    assert out.input == 2
    log = await store.load("fan")
    assert {e.key for e in log.effects if e.kind == "value"} == {
        "1.1/1.1.1:fetch",
        "1.2/1.1.1:fetch",
    }


def both_ask():
    @node
    async def review(ctx: AgentContext[str], rt) -> AgentContext[str]:
        return ctx.with_input(f"{ctx.input}={await rt.interrupt(f'approve {ctx.input}?')}")

    return chain("g", map_each(review, items=lambda ctx: ["A", "B"]))


async def test_an_answer_goes_to_the_question_shown_and_the_other_is_asked_next(store):
    graph, runner = both_ask(), GraphRunner()
    with pytest.raises(Interrupted) as first:
        await runner.run(graph, AgentContext(0), store=store)
    rid = first.value.run_id
    with pytest.raises(Interrupted) as second:
        await runner.resume(graph, rid, store, answer="first")
    assert {first.value.question, second.value.question} == {"approve A?", "approve B?"}
    out = await runner.resume(graph, rid, store, answer="second")
    shown_first = first.value.question[len("approve ")]
    shown_second = second.value.question[len("approve ")]
    assert sorted(out.input) == sorted([f"{shown_first}=first", f"{shown_second}=second"])


async def test_the_last_recorded_question_is_the_one_answered():
    store = MemoryStore()
    graph = both_ask()
    with pytest.raises(Interrupted) as stop:
        await GraphRunner().run(graph, AgentContext(0), store=store, run_id="q")
    log = await store.load("q")
    asked = [e for e in log.effects if e.kind == "interrupt"]
    assert len(asked) == 2
    assert asked[-1].value == next(
        e.value for e in asked if stop.value.question in e.value.decode()
    )


def test_resume_attempts_are_read_from_pending_question_keys():
    def asked(key):
        return Effect("r", key, "interrupt", b"{}")

    assert attempts([asked("4.2.1:interrupt")]) == {"4": 2}
    assert attempts([asked("3.2/2.1/1.4.1:interrupt"), asked("3.1/2.1.1:interrupt")]) == {
        "3": 2,
        "3.2/2": 1,
        "3.2/2.1/1": 4,
        "3.1/2": 1,
    }
    with pytest.raises(CheckpointError, match="names no step"):
        attempts([asked("custom:interrupt")])


@node
async def same(ctx: AgentContext[int]) -> AgentContext[int]:
    return ctx


async def test_fork_onto_a_taken_id_fails_and_leaves_the_store_working(store):
    graph = chain("s", same)
    await GraphRunner().run(graph, AgentContext(0), store=store, run_id="a")
    await GraphRunner().run(graph, AgentContext(0), store=store, run_id="b")
    with pytest.raises(CheckpointError, match="'b' is already in the store"):
        await fork(store, "a", 1, new_id="b")
    assert len((await store.load("a")).steps) == 1
    await GraphRunner().run(graph, AgentContext(0), store=store, run_id="c")
    assert (await store.load("c")).run.graph == "s"


async def test_a_refused_sqlite_write_takes_no_other_runs_records_with_it(tmp_path):
    async with SQLiteStore(tmp_path / "runs.db") as store:
        store.write((RunRecord("a", "g", b"{}", b"{}", 0.0),))
        await store.flush(run_id="a")
        step = StepRecord("a", 1, 1, ("g",), "n", "finish", 1, 1, b"{}", 0.0, 0.0)
        # One batch: a second start of "a" (refused), then a new run and a step of "a".
        store.write((RunRecord("a", "g", b"{}", b"{}", 1.0),))
        store.write((RunRecord("b", "g", b"{}", b"{}", 1.0),))
        store.write((step,))
        await store.flush(run_id="b")
        with pytest.raises(CheckpointError, match="'a' is already in the store"):
            await store.flush(run_id="a")
        await store.flush(run_id="a")  # reported once
        assert len((await store.load("a")).steps) == 1
        assert await store.run_ids() == ("a", "b")
        # A rejected step (its sequence number is taken) leaves the store working.
        store.write((step,))
        with pytest.raises(CheckpointError, match="refused records of run 'a'"):
            await store.flush(run_id="a")
        await GraphRunner().run(chain("s", same), AgentContext(0), store=store, run_id="c")


async def test_two_runs_started_with_one_id_at_once_let_one_go_ahead(store):
    outcomes = []

    async def start():
        try:
            await GraphRunner().run(chain("s", same), AgentContext(0), store=store, run_id="x")
            outcomes.append("ran")
        except (CheckpointError, RunBusy) as error:
            outcomes.append(str(error))

    async with anyio.create_task_group() as tg:
        tg.start_soon(start)
        tg.start_soon(start)
    assert outcomes.count("ran") == 1
    assert any("'x' is already" in o for o in outcomes), outcomes


async def test_a_run_is_resumed_by_one_runner_at_a_time(store):
    sent = Counter()

    @node
    async def ask(ctx: AgentContext[int], rt) -> AgentContext[int]:
        return ctx.with_input(ctx.input + int(await rt.interrupt("send the email?")))

    @node
    async def send(ctx: AgentContext[int]) -> AgentContext[int]:
        await anyio.sleep(0.01)
        sent["email"] += 1
        return ctx

    graph = chain("g", ask, send)
    with pytest.raises(Interrupted):
        await GraphRunner().run(graph, AgentContext(0), store=store, run_id="r")
    outcomes = []

    async def go():
        try:
            outcomes.append((await GraphRunner().resume(graph, "r", store, answer=True)).input)
        except RunBusy as error:
            outcomes.append(error)

    async with anyio.create_task_group() as tg:
        tg.start_soon(go)
        tg.start_soon(go)
    assert sent["email"] == 1
    assert 1 in outcomes
    (busy,) = [o for o in outcomes if isinstance(o, RunBusy)]
    assert busy.run_id == "r" and ":" in busy.owner and "is already being run" in str(busy)


async def test_the_lease_is_released_however_the_run_ends(store):
    crash = [True]

    @node
    async def fragile(ctx: AgentContext[int]) -> AgentContext[int]:
        if crash and crash.pop():
            raise Crash("fragile")
        return ctx.with_input(ctx.input + 1)

    graph = chain("g", fragile)
    with pytest.raises(Crash):
        await GraphRunner().run(graph, AgentContext(0), store=store, run_id="r")
    assert (await GraphRunner().resume(graph, "r", store)).input == 1
    with pytest.raises(CheckpointError, match="'r' is already in the store"):
        await GraphRunner().run(graph, AgentContext(0), store=store, run_id="r")
    with pytest.raises(ResumeError, match="no question is waiting"):
        await GraphRunner().resume(graph, "r", store, answer="late")
    assert (await GraphRunner().resume(graph, "r", store)).input == 1  # not held by a failure


@pytest.mark.parametrize("path", [":memory:", ""])
def test_an_in_memory_sqlite_database_is_refused(path):
    with pytest.raises(ValueError, match="needs a database file"):
        SQLiteStore(path)


async def test_sqlite_read_errors_are_checkpoint_errors(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE runs (something TEXT)")  # not this library's table
    conn.commit()
    conn.close()
    async with SQLiteStore(path) as store:
        with pytest.raises(CheckpointError, match="cannot be read"):
            await store.load("r")
        with pytest.raises(CheckpointError, match="cannot be read"):
            await store.run_ids()
