"""A second run on a busy thread (`multitask_strategy`), delayed starts, disconnects, timeouts."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from .support import GATE, said, serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def until_status(client: LangGraphClient, tid: str, rid: str, status: str) -> dict[str, Any]:
    """The run once it has `status` (the test's timeout bounds the wait)."""
    while True:
        run = await client.runs.get(tid, rid)
        if run["status"] == status:
            return dict(run)
        await anyio.sleep(0.02)


async def test_reject_refuses_a_second_run_while_one_is_in_flight(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            first = await client.runs.create(tid, "gated", input=said("a"))
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await client.runs.create(tid, "echo", input=said("b"), multitask_strategy="reject")
            assert refused.value.response.status_code == 409
            GATE.set()
            await client.runs.join(tid, first["run_id"])
            assert [r["run_id"] for r in await client.runs.list(tid)] == [first["run_id"]]


async def test_enqueue_runs_a_threads_runs_first_in_first_out(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            first = await client.runs.create(tid, "gated", input=said("a"))
            await until_status(client, tid, first["run_id"], "running")
            second = await client.runs.create(tid, "echo", input=said("b"))
            assert (await client.runs.get(tid, second["run_id"]))["status"] == "pending"
            GATE.set()
            final = await client.runs.join(tid, second["run_id"])
            assert isinstance(final, dict)
            assert [m["content"] for m in final["messages"]] == ["a", "gated: a", "b", "echo: b"]


async def test_interrupt_cancels_the_run_in_flight_and_the_new_one_runs(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            first = await client.runs.create(tid, "slow", input=said("a"))
            await until_status(client, tid, first["run_id"], "running")
            second = await client.runs.create(
                tid, "echo", input=said("b"), multitask_strategy="interrupt"
            )
            await client.runs.join(tid, second["run_id"])
            assert (await client.runs.get(tid, first["run_id"]))["status"] == "interrupted"
            assert (await client.runs.get(tid, second["run_id"]))["status"] == "success"


async def test_rollback_deletes_the_run_in_flight(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            first = await client.runs.create(tid, "slow", input=said("a"))
            await until_status(client, tid, first["run_id"], "running")
            second = await client.runs.create(
                tid, "echo", input=said("b"), multitask_strategy="rollback"
            )
            final = await client.runs.join(tid, second["run_id"])
            assert isinstance(final, dict)
            assert [m["content"] for m in final["messages"]] == ["b", "echo: b"]
            assert [r["run_id"] for r in await client.runs.list(tid)] == [second["run_id"]]


async def test_if_not_exists_creates_the_thread_and_a_missing_thread_is_404_otherwise(
    tmp_path: Path,
):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = str(uuid.uuid4())
            with pytest.raises(httpx.HTTPStatusError) as missing:
                await client.runs.create(tid, "echo", input=said("a"))
            assert missing.value.response.status_code == 404
            run = await client.runs.create(tid, "echo", input=said("a"), if_not_exists="create")
            await client.runs.join(tid, run["run_id"])
            assert (await client.threads.get(tid))["status"] == "idle"


async def test_after_seconds_delays_the_start(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            later = await client.runs.create(tid, "echo", input=said("a"), after_seconds=3600)
            soon = await client.runs.create(tid, "echo", input=said("b"), after_seconds=0.1)
            assert (await client.runs.get(tid, later["run_id"]))["status"] == "pending"
            await client.runs.cancel(tid, later["run_id"])
            await client.runs.join(tid, soon["run_id"])
            assert (await client.runs.get(tid, later["run_id"]))["status"] == "interrupted"
            assert (await client.runs.get(tid, soon["run_id"]))["status"] == "success"


@pytest.mark.parametrize(("mode", "status"), [("cancel", "interrupted"), ("continue", "success")])
async def test_on_disconnect_cancels_or_lets_the_run_go_on(tmp_path: Path, mode: str, status: str):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            body = {"assistant_id": "gated", "input": said("a"), "on_disconnect": mode}
            async with (
                httpx.AsyncClient(base_url=url) as http,
                http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response,
            ):
                lines = response.aiter_lines()
                assert await anext(lines) == "event: metadata"
            (run,) = await client.runs.list(tid)
            if mode == "continue":
                GATE.set()
            await until_status(client, tid, run["run_id"], status)


async def test_a_stateless_runs_thread_is_deleted_on_completion_unless_kept(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client, httpx.AsyncClient(base_url=url) as http:
            dropped = await http.post(
                "/runs/wait", json={"assistant_id": "echo", "input": said("a")}
            )
            kept = await http.post(
                "/runs/wait",
                json={"assistant_id": "echo", "input": said("b"), "on_completion": "keep"},
            )
            assert [m["content"] for m in kept.json()["messages"]] == ["b", "echo: b"]
            gone = dropped.headers["content-location"].split("/")[2]
            there = kept.headers["content-location"].split("/")[2]
            assert (await http.get(f"/threads/{gone}")).status_code == 404
            assert (await client.threads.get(there))["status"] == "idle"


async def test_a_run_past_the_run_timeout_ends_timeout(tmp_path: Path):
    with serving(tmp_path, run_timeout=0.2) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            run = await client.runs.create(tid, "slow", input=said("a"))
            await client.runs.join(tid, run["run_id"])
            assert (await client.runs.get(tid, run["run_id"]))["status"] == "timeout"


async def first_values(client: LangGraphClient, tid: str, rid: str) -> None:
    """Return once run `rid` has sent its first `values` (a step of it finished)."""
    async for part in client.runs.join_stream(tid, rid, last_event_id="-1"):
        if part.event == "values":
            return


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
async def test_interrupt_carries_the_cancelled_runs_progress_into_the_new_run(
    tmp_path: Path, database: str, request: pytest.FixtureRequest
):
    where: dict[str, Any] = {}
    if database == "postgres":
        dsn, schema = request.getfixturevalue("pg")
        where = {"where": dsn, "schema": schema}
    with serving(tmp_path, **where) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            await client.runs.wait(tid, "echo", input=said("zero"))
            first = await client.runs.create(tid, "notes_then_sleeps", input=said("a"))
            await first_values(client, tid, first["run_id"])
            second = await client.runs.create(
                tid, "echo", input=said("b"), multitask_strategy="interrupt"
            )
            final = await client.runs.join(tid, second["run_id"])
            assert isinstance(final, dict)
            assert [m["content"] for m in final["messages"]] == [
                "zero", "echo: zero", "a", "noted: a", "b", "echo: b",
            ]  # fmt: skip
            assert (await client.runs.get(tid, first["run_id"]))["status"] == "interrupted"
            state = await client.threads.get_state(tid)
            assert [m["content"] for m in state["values"]["messages"]][2:4] == ["a", "noted: a"]


async def test_a_cancelled_runs_tool_calls_without_results_get_error_results(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            first = await client.runs.create(tid, "calls_then_sleeps", input=said("a"))
            await first_values(client, tid, first["run_id"])
            await client.runs.cancel(tid, first["run_id"], action="interrupt", wait=True)
            thread = await client.threads.get(tid)
            assert (thread["status"], thread["interrupts"]) == ("idle", {})
            messages = thread["values"]["messages"]
            assert [(m["type"], m.get("tool_call_id"), m.get("status")) for m in messages] == [
                ("human", None, None), ("ai", None, None), ("tool", "call-1", "error"),
            ]  # fmt: skip
            # The next run's model request is a valid conversation: the check passes.
            final = await client.runs.wait(tid, "chats", input=said("b"))
            assert isinstance(final, dict)
            assert [m["content"] for m in final["messages"]][-2:] == ["b", "answered"]


async def test_a_cancelled_resume_leaves_its_question_waiting_and_the_thread_interrupted(
    tmp_path: Path,
):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            await client.runs.wait(tid, "asks", input=said("the date"))
            resume = await client.runs.create(
                tid, "asks", command={"resume": "yes"}, after_seconds=3600
            )
            await client.runs.cancel(tid, resume["run_id"], action="interrupt", wait=True)
            thread = await client.threads.get(tid)
            assert thread["status"] == "interrupted"
            assert next(iter(thread["interrupts"].values()))[0]["value"] == {
                "question": "may I answer 'the date'?"
            }
            again = await client.runs.create(tid, "asks", command={"resume": "yes"})
            final = await client.runs.join(tid, again["run_id"])
            assert isinstance(final, dict)
            assert [m["content"] for m in final["messages"]] == ["the date", "told: yes"]
            assert (await client.threads.get(tid))["status"] == "idle"


async def test_a_cancelled_resume_that_answered_clears_the_interrupt(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            await client.runs.wait(tid, "asks_then_waits", input=said("the date"))
            resume = await client.runs.create(tid, "asks_then_waits", command={"resume": "yes"})
            await first_values(client, tid, resume["run_id"])
            await client.runs.cancel(tid, resume["run_id"], action="interrupt", wait=True)
            thread = await client.threads.get(tid)
            assert (thread["status"], thread["interrupts"]) == ("idle", {})
            assert [m["content"] for m in thread["values"]["messages"]] == [
                "the date", "told: yes",
            ]  # fmt: skip
