"""Thread state and history through the official Python client, on SQLite and PostgreSQL:
checkpoints per run, interrupt and update, the state at any of them, runs from an
earlier one, rollbacks, copies and deletes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agentgraph.server._history import history_of
from agentgraph.server._queue import RunQueue
from tests.pg_server import drop_schema, fresh_schema

from .support import GATE, said, serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: Any, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Where the server keeps its queue and checkpoints, and the schema (PostgreSQL's)."""
    if request.param == "sqlite":
        yield str(tmp_path / "server.db"), "agentgraph"
        return
    dsn = request.getfixturevalue("postgres_server").dsn
    schema = fresh_schema()
    yield dsn, schema
    drop_schema(dsn, schema)


@contextlib.asynccontextmanager
async def client_on(tmp_path: Path, database: tuple[str, str]) -> AsyncIterator[LangGraphClient]:
    where, schema = database
    with serving(tmp_path, where=where, schema=schema) as url:
        async with get_client(url=url) as client:
            yield client


def texts(values: dict[str, Any]) -> list[str]:
    return [m["content"] for m in values["messages"]]


async def status_of(client: LangGraphClient, tid: str, run_id: str) -> int:
    try:
        await client.runs.get(tid, run_id)
    except httpx.HTTPStatusError as gone:
        return gone.response.status_code
    return 200


async def test_history_has_a_checkpoint_per_run_and_interrupt_newest_first(
    tmp_path: Path, database: tuple[str, str]
):
    async with client_on(tmp_path, database) as client:
        tid = (await client.threads.create())["thread_id"]
        first = await client.runs.create(tid, "echo", input=said("one"))
        await client.runs.join(tid, first["run_id"])
        await client.runs.wait(tid, "echo", input=said("two"))
        asked = await client.runs.wait(tid, "asks", input=said("three"))
        assert isinstance(asked, dict)
        history = await client.threads.get_history(tid)
        assert [texts(h["values"]) for h in history] == [
            ["one", "echo: one", "two", "echo: two"],
            ["one", "echo: one", "two", "echo: two"],
            ["one", "echo: one"],
        ]
        newest, middle, oldest = history
        assert newest["next"] == ["interrupt"]
        assert newest["tasks"][0]["interrupts"] == asked["__interrupt__"]
        assert newest["interrupts"] == asked["__interrupt__"]
        assert [h["metadata"]["source"] for h in history] == ["loop", "loop", "loop"]
        assert [h["metadata"]["step"] for h in history] == [2, 1, 0]
        assert oldest["metadata"]["run_id"] == first["run_id"]
        assert oldest["metadata"]["writes"] == {"reply": {"messages": oldest["values"]["messages"]}}
        assert oldest["parent_checkpoint"] is None
        assert middle["parent_checkpoint"] == oldest["checkpoint"]
        assert newest["parent_checkpoint"] == middle["checkpoint"]
        assert len({h["checkpoint"]["checkpoint_id"] for h in history}) == 3
        assert all(h["created_at"] for h in history)
        assert await client.threads.get_state(tid) == newest
        page = await client.threads.get_history(tid, limit=1, before=middle["checkpoint"])
        assert page == [oldest]
        by_run = await client.threads.get_history(tid, metadata={"run_id": first["run_id"]})
        assert by_run == [oldest]
        done = await client.runs.wait(tid, "asks", command={"resume": "yes"})
        assert isinstance(done, dict)
        latest = await client.threads.get_state(tid)
        assert latest["next"] == [] and latest["parent_checkpoint"] == newest["checkpoint"]
        assert texts(latest["values"])[-2:] == ["three", "told: yes"]


async def test_the_state_at_an_old_checkpoint_and_an_unknown_one(
    tmp_path: Path, database: tuple[str, str]
):
    async with client_on(tmp_path, database) as client:
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "echo", input=said("one"))
        old = await client.threads.get_state(tid)
        await client.runs.wait(tid, "echo", input=said("two"))
        old_id = old["checkpoint"]["checkpoint_id"]
        assert await client.threads.get_state(tid, checkpoint_id=old_id) == old
        assert await client.threads.get_state(tid, checkpoint=old["checkpoint"]) == old
        assert texts((await client.threads.get_state(tid))["values"])[-1] == "echo: two"
        unknown = "00000000-0000-4000-8000-000000000000"
        for call in (
            client.threads.get_state(tid, checkpoint_id=unknown),
            client.threads.get_state(
                tid, checkpoint={**old["checkpoint"], "checkpoint_id": unknown}
            ),
            client.runs.wait(tid, "echo", input=said("x"), checkpoint_id=unknown),
        ):
            with pytest.raises(httpx.HTTPStatusError) as missing:
                await call
            assert missing.value.response.status_code == 404
        assert len(await client.threads.get_history(tid)) == 2


async def test_update_state_writes_a_checkpoint_the_next_run_starts_from(
    tmp_path: Path, database: tuple[str, str]
):
    async with client_on(tmp_path, database) as client:
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "recall", input=said("hello"))
        state = await client.threads.get_state(tid)
        answer = state["values"]["messages"][1]
        assert answer["content"] == "saw: nothing; mood: none"
        changed = {**answer, "content": "I said something else"}
        added = {"type": "human", "content": "a note from the client"}
        response = await client.threads.update_state(
            tid, {"messages": [changed, added], "mood": "glad"}, as_node="recall"
        )
        updated = await client.threads.get_state(tid)
        assert updated["checkpoint"] == response["checkpoint"]
        assert updated["parent_checkpoint"] == state["checkpoint"]
        assert updated["metadata"]["source"] == "update"
        assert texts(updated["values"]) == [
            "hello",
            "I said something else",
            "a note from the client",
        ]
        assert updated["values"]["mood"] == "glad"
        assert (await client.threads.get(tid))["values"] == updated["values"]
        final = await client.runs.wait(tid, "recall", input=said("what now?"))
        assert isinstance(final, dict)
        assert texts(final)[-1] == (
            "saw: hello | I said something else | a note from the client; mood: glad"
        )
        after = await client.threads.get_state(tid)
        assert after["parent_checkpoint"] == updated["checkpoint"]


async def test_a_run_from_an_earlier_checkpoint_starts_a_branch_there(
    tmp_path: Path, database: tuple[str, str]
):
    async with client_on(tmp_path, database) as client:
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "recall", input=said("one"))
        first = await client.threads.get_state(tid)
        await client.runs.wait(tid, "recall", input=said("two"))
        parts = [
            part
            async for part in client.runs.stream(
                tid,
                "recall",
                input=said("again"),
                checkpoint=first["checkpoint"],
                stream_mode=["values", "updates"],
            )
        ]
        (update,) = [p.data for p in parts if p.event == "updates"]
        assert texts(update["recall"]) == [
            "again",
            "saw: one | saw: nothing; mood: none; mood: none",
        ]
        branch = parts[-2].data
        assert texts(branch) == [
            "one",
            "saw: nothing; mood: none",
            "again",
            "saw: one | saw: nothing; mood: none; mood: none",
        ]
        state = await client.threads.get_state(tid)
        assert state["parent_checkpoint"] == first["checkpoint"]
        following = await client.runs.wait(tid, "recall", input=said("next"))
        assert isinstance(following, dict)
        assert "two" not in texts(following)[-1] and "again" in texts(following)[-1]
        assert len(await client.threads.get_history(tid)) == 4


async def test_a_rolled_back_run_leaves_the_thread_as_it_was(
    tmp_path: Path, database: tuple[str, str]
):
    async with client_on(tmp_path, database) as client:
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "recall", input=said("one"))
        before = await client.threads.get_state(tid)
        thread_before = await client.threads.get(tid)
        held = await client.runs.create(tid, "gated", input=said("held"))
        while (await client.runs.get(tid, held["run_id"]))["status"] != "running":
            await anyio.sleep(0.02)
        await client.runs.cancel(tid, held["run_id"], action="rollback", wait=True)
        assert await status_of(client, tid, held["run_id"]) == 404
        assert await client.threads.get_state(tid) == before
        after = await client.threads.get(tid)
        assert (after["status"], after["values"]) == ("idle", thread_before["values"])
        assert [h["checkpoint"] for h in await client.threads.get_history(tid)] == [
            before["checkpoint"]
        ]
        assert [r["run_id"] for r in await client.runs.list(tid)] != []
        assert held["run_id"] not in [r["run_id"] for r in await client.runs.list(tid)]
        final = await client.runs.wait(tid, "recall", input=said("two"))
        assert isinstance(final, dict)
        assert texts(final)[-1] == "saw: one | saw: nothing; mood: none; mood: none"


async def test_a_rolled_back_resume_leaves_the_interrupt_waiting(
    tmp_path: Path, database: tuple[str, str]
):
    async with client_on(tmp_path, database) as client:
        tid = (await client.threads.create())["thread_id"]
        asked = await client.runs.wait(tid, "asks_then_waits", input=said("the date"))
        assert isinstance(asked, dict)
        before = await client.threads.get_state(tid)
        resumed = await client.runs.create(tid, "asks_then_waits", command={"resume": "no"})
        async for part in client.runs.join_stream(tid, resumed["run_id"], last_event_id="-1"):
            if part.event == "values":  # the resume went past the question, and waits
                break
        rolled = await client.runs.create(
            tid, "asks_then_waits", command={"resume": "yes"}, multitask_strategy="rollback"
        )
        GATE.set()
        final = await client.runs.join(tid, rolled["run_id"])
        assert isinstance(final, dict)
        assert texts(final) == ["the date", "told: yes"]
        assert await status_of(client, tid, resumed["run_id"]) == 404
        history = await client.threads.get_history(tid)
        assert [h["checkpoint"] for h in history[1:]] == [before["checkpoint"]]
        assert history[0]["parent_checkpoint"] == before["checkpoint"]


async def test_a_copy_has_the_history_and_goes_on_alone_and_delete_removes_it(
    tmp_path: Path, database: tuple[str, str]
):
    async with client_on(tmp_path, database) as client:
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "recall", input=said("one"))
        await client.runs.wait(tid, "recall", input=said("two"))
        history = await client.threads.get_history(tid)
        copy = (await client.threads.copy(tid))["thread_id"]
        copied = await client.threads.get_history(copy)
        assert [h["values"] for h in copied] == [h["values"] for h in history]
        assert [h["checkpoint"]["checkpoint_id"] for h in copied] == [
            h["checkpoint"]["checkpoint_id"] for h in history
        ]
        assert all(h["checkpoint"]["thread_id"] == copy for h in copied)
        on_copy = await client.runs.wait(copy, "recall", input=said("three"))
        assert isinstance(on_copy, dict)
        assert texts(on_copy)[-1].startswith("saw: one | saw: nothing; mood: none | two")
        assert len(await client.threads.get_history(tid)) == 2
        assert len(await client.threads.get_history(copy)) == 3
        await client.threads.delete(copy)
        asked = await client.runs.wait(tid, "asks", input=said("the date"))
        assert isinstance(asked, dict)
        waiting = (await client.threads.copy(tid))["thread_id"]
        assert (await client.threads.get(waiting))["status"] == "interrupted"
        told = await client.runs.wait(waiting, "asks", command={"resume": "on the copy"})
        assert isinstance(told, dict) and texts(told)[-1] == "told: on the copy"
        still = await client.threads.get_state(tid)
        assert still["interrupts"] == asked["__interrupt__"]
        told = await client.runs.wait(tid, "asks", command={"resume": "on the original"})
        assert isinstance(told, dict) and texts(told)[-1] == "told: on the original"
    where, schema = database
    queue = RunQueue(where, schema=schema)
    try:
        history_store = history_of(queue)
        assert history_store.latest(copy) is None
        assert history_store.latest(tid) is not None
    finally:
        queue.close()


async def test_update_state_on_a_question_keeps_it_and_the_resume_sees_the_update(
    tmp_path: Path, database: tuple[str, str]
):
    async with client_on(tmp_path, database) as client:
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "echo", input=said("hi"))
        asked = await client.runs.wait(tid, "asks", input=said("the date"))
        assert isinstance(asked, dict)
        before = await client.threads.get_state(tid)
        note = {"type": "system", "content": "answer in French"}
        await client.threads.update_state(tid, {"messages": [note]})
        updated = await client.threads.get_state(tid)
        assert updated["interrupts"] == before["interrupts"] == asked["__interrupt__"]
        assert updated["next"] == before["next"]
        assert (await client.threads.get(tid))["status"] == "interrupted"
        assert texts(updated["values"]) == ["hi", "echo: hi", "answer in French"]
        told = await client.runs.wait(tid, "asks", command={"resume": "oui"})
        assert isinstance(told, dict)
        assert texts(told) == ["hi", "echo: hi", "answer in French", "the date", "told: oui"]
        again = await client.runs.wait(
            tid, "asks", command={"resume": "yes"}, checkpoint=before["checkpoint"]
        )
        assert isinstance(again, dict)
        assert texts(again) == ["hi", "echo: hi", "the date", "told: yes"]


async def test_a_new_thread_has_an_empty_state_and_no_history(
    tmp_path: Path, database: tuple[str, str]
):
    async with client_on(tmp_path, database) as client:
        tid = (await client.threads.create())["thread_id"]
        state = await client.threads.get_state(tid)
        assert (state["values"], state["next"], state["parent_checkpoint"]) == ({}, [], None)
        assert state["checkpoint"]["checkpoint_id"] is None
        assert await client.threads.get_history(tid) == []
        refused_limit = await client.http.client.post(
            f"/threads/{tid}/history", json={"limit": "many"}
        )
        assert refused_limit.status_code == 422
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await client.threads.get_state(tid, checkpoint_id="not-a-checkpoint")
        assert refused.value.response.status_code == 422


async def test_new_input_on_an_interrupted_thread_goes_on_from_the_values_at_the_question(
    tmp_path: Path, database: tuple[str, str]
):
    async with client_on(tmp_path, database) as client:
        tid = (await client.threads.create())["thread_id"]
        asked = await client.runs.wait(tid, "drafts", input=said("hi"))
        assert isinstance(asked, dict) and texts(asked) == ["hi", "draft: hi"]
        asked_at = await client.threads.get_state(tid)
        instead = await client.runs.wait(tid, "recall", input=said("never mind"))
        assert isinstance(instead, dict)
        assert texts(instead)[-1] == "saw: hi | draft: hi; mood: none"
        sent = await client.runs.wait(
            tid, "drafts", command={"resume": "yes"}, checkpoint=asked_at["checkpoint"]
        )
        assert isinstance(sent, dict) and texts(sent) == ["hi", "draft: hi", "sent: yes"]
