"""The official Python client (`langgraph-sdk`) drives the agent server on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from .support import serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_thread_run_streams_metadata_first_then_values_with_stable_message_ids(
    tmp_path: Path,
):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            thread = await client.threads.create()
            parts = [
                part
                async for part in client.runs.stream(
                    thread["thread_id"],
                    "echo",
                    input={"messages": [{"role": "user", "content": "hi"}]},
                    stream_mode=["values", "updates"],
                )
            ]
            assert parts[0].event == "metadata"
            assert [p.event for p in parts[1:]] == ["values", "updates"]
            messages = parts[1].data["messages"]
            assert [(m["type"], m["content"]) for m in messages] == [
                ("human", "hi"),
                ("ai", "echo: hi"),
            ]
            state = await client.threads.get_state(thread["thread_id"])
            assert [m["id"] for m in state["values"]["messages"]] == [m["id"] for m in messages]
            found = await client.threads.get(thread["thread_id"])
            assert found["status"] == "idle"
            run_id = parts[0].data["run_id"]
            run = await client.runs.get(thread["thread_id"], run_id)
            assert run["status"] == "success"
            listed = await client.runs.list(thread["thread_id"])
            assert [r["run_id"] for r in listed] == [run_id]


async def test_an_interrupt_ends_the_run_and_a_resume_command_continues_it(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            thread = await client.threads.create()
            tid = thread["thread_id"]
            first = await client.runs.wait(
                tid, "asks", input={"messages": [{"type": "human", "content": "the date"}]}
            )
            assert isinstance(first, dict)
            (interrupt,) = first["__interrupt__"]
            assert interrupt["value"] == {"question": "may I answer 'the date'?"}
            assert (await client.threads.get(tid))["status"] == "interrupted"
            state = await client.threads.get_state(tid)
            assert state["next"] == ["interrupt"]
            assert state["tasks"][0]["interrupts"] == [interrupt]
            run = await client.runs.create(tid, "asks", command={"resume": "yes"})
            final = await client.runs.join(tid, run["run_id"])
            assert isinstance(final, dict)
            assert [m["content"] for m in final["messages"]] == ["the date", "told: yes"]
            assert (await client.threads.get(tid))["status"] == "idle"


async def test_a_cancelled_run_ends_interrupted_and_a_failed_one_carries_its_error(
    tmp_path: Path,
):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            run = await client.runs.create(tid, "slow", input={})
            await client.runs.cancel(tid, run["run_id"], wait=True)
            assert (await client.runs.get(tid, run["run_id"]))["status"] == "interrupted"
            failed = await client.runs.wait(None, "fails", input={}, raise_error=False)
            assert isinstance(failed, dict)
            assert failed["__error__"]["error"] == "NodeFailed"
            assert "the node failed" in failed["__error__"]["message"]


async def test_a_stream_rejoined_with_last_event_id_gets_the_rest_once(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            run = await client.runs.create(
                tid,
                "echo",
                input={"messages": [{"role": "user", "content": "x"}]},
                stream_mode=["values", "updates"],
            )
            await client.runs.join(tid, run["run_id"])
            every = [
                p.event
                async for p in client.runs.join_stream(tid, run["run_id"], last_event_id="-1")
            ]
            assert every == ["metadata", "values", "updates"]
            rest = [
                p.event
                async for p in client.runs.join_stream(tid, run["run_id"], last_event_id="2")
            ]
            assert rest == ["updates"]


async def test_bad_ids_modes_and_bodies_are_refused_and_nothing_is_stored(tmp_path: Path):
    with serving(tmp_path) as url:
        async with httpx.AsyncClient(base_url=url) as http:
            assert (await http.get("/threads/not-a-uuid")).status_code == 422
            tid = (await http.post("/threads", json={})).json()["thread_id"]
            body: dict[str, Any] = {"assistant_id": "echo", "stream_mode": ["tools"]}
            refused = await http.post(f"/threads/{tid}/runs", json=body)
            assert refused.status_code == 422
            assert (
                "values, updates, messages, messages-tuple, custom, events"
                in refused.json()["detail"]
            )
            assert (await http.post(f"/threads/{tid}/runs", content=b"{nope")).status_code == 422
            assert (await http.get(f"/threads/{tid}/runs")).json() == []
            assert (await http.post(f"/threads/{tid}/commands", json={})).status_code == 404


async def test_an_api_key_is_required_once_set(tmp_path: Path):
    with serving(tmp_path, api_key="k-123") as url:
        async with httpx.AsyncClient(base_url=url) as http:
            assert (await http.get("/ok")).status_code == 200
            assert (await http.post("/threads", json={})).status_code == 401
        async with get_client(url=url, api_key="k-123") as client:
            assert (await client.assistants.get("echo"))["graph_id"] == "echo"
