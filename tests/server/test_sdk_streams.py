"""Reconnect addresses, thread streams and the stream modes, through `langgraph-sdk`."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from .support import GATE, said, serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_wait_join_and_cancel_answer_with_a_location_to_reconnect_to(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            seen: list[httpx.Headers] = []
            result = await client.http.request_reconnect(
                f"/threads/{tid}/runs/wait",
                "POST",
                json={"assistant_id": "echo", "input": said("hi")},
                on_response=lambda r: seen.append(r.headers),
            )
            base = seen[0]["content-location"]
            assert base.startswith(f"/threads/{tid}/runs/")
            assert seen[0]["location"] == f"{base}/join"
            assert await client.http.get(seen[0]["location"]) == result
            run_id = base.rsplit("/", 1)[1]
            await client.http.request_reconnect(
                f"{base}/join", "GET", on_response=lambda r: seen.append(r.headers)
            )
            assert seen[1]["location"] == f"{base}/join"
            slow = await client.runs.create(tid, "slow", input={})
            where = f"/threads/{tid}/runs/{slow['run_id']}"
            await client.http.request_reconnect(
                f"{where}/cancel",
                "POST",
                params={"wait": 1},
                on_response=lambda r: seen.append(r.headers),
            )
            assert seen[2]["location"] == f"{where}/join"
            assert (await client.runs.get(tid, slow["run_id"]))["status"] == "interrupted"
            assert (await client.runs.get(tid, run_id))["status"] == "success"


async def test_a_thread_stream_joins_the_run_in_flight_and_honours_last_event_id(
    tmp_path: Path,
):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            run = await client.runs.create(
                tid, "gated", input=said("x"), stream_mode=["values", "updates"]
            )
            joined = []
            async for part in await client.threads.join_stream(tid):
                joined.append(part)
                GATE.set()  # the run is in flight while the stream is joined
            assert [p.event for p in joined] == ["metadata", "values", "updates"]
            assert joined[0].data["run_id"] == run["run_id"]
            assert joined[1].data["messages"][-1]["content"] == "gated: x"
            rest = [p.event async for p in await client.threads.join_stream(tid, last_event_id="2")]
            assert rest == ["updates"]
            with pytest.raises(httpx.HTTPStatusError) as refused:
                async for _ in await client.threads.join_stream(tid, stream_mode="lifecycle"):
                    pass
            assert refused.value.response.status_code == 422
            empty = (await client.threads.create())["thread_id"]
            with pytest.raises(httpx.HTTPStatusError) as missing:
                async for _ in await client.threads.join_stream(empty):
                    pass
            assert missing.value.response.status_code == 404


async def test_messages_mode_frames_metadata_partials_and_complete_messages(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            parts = [
                part
                async for part in client.runs.stream(
                    tid, "streams", input=said("hi"), stream_mode="messages"
                )
            ]
            assert parts[0].event == "metadata"
            partials = [p.data[0]["content"] for p in parts if p.event == "messages/partial"]
            assert partials == [
                "hell",
                "hello th",
                "hello there,",
                "hello there, fri",
                "hello there, friend",
            ]
            partial_ids = {p.data[0]["id"] for p in parts if p.event == "messages/partial"}
            complete = [p.data[0] for p in parts if p.event == "messages/complete"]
            # The streamed answer keeps the id its partials carried.
            assert partial_ids == {complete[1]["id"]}
            assert [(m["type"], m["content"]) for m in complete] == [
                ("human", "hi"),
                ("ai", "hello there, friend"),
            ]
            metadata = [p.data for p in parts if p.event == "messages/metadata"]
            assert [next(iter(m)) for m in metadata] == [m["id"] for m in complete]
            assert metadata[1][complete[1]["id"]]["metadata"]["langgraph_node"] == "talk"
            state = await client.threads.get_state(tid)
            assert [m["id"] for m in state["values"]["messages"]] == [m["id"] for m in complete]


async def test_events_mode_sends_chain_and_model_events_and_other_modes_are_refused(
    tmp_path: Path,
):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            parts = [
                part
                async for part in client.runs.stream(
                    tid, "streams", input=said("hi"), stream_mode=["events", "values"]
                )
            ]
            events = [(p.data["event"], p.data["name"]) for p in parts if p.event == "events"]
            assert events[:2] == [("on_chain_start", "streams"), ("on_chain_start", "talk")]
            assert events[2:7] == [("on_chat_model_stream", "model")] * 5
            assert events[7:] == [
                ("on_chat_model_end", "scripted"),
                ("on_chain_end", "talk"),
                ("on_chain_end", "streams"),
            ]
            streamed = [p.data for p in parts if p.event == "events"][2:7]
            chunks = [e["data"]["chunk"]["content"] for e in streamed]
            assert "".join(chunks) == "hello there, friend"
            assert [p.event for p in parts].count("values") == 1
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await client.runs.create(tid, "echo", input=said("x"), stream_mode="debug")
            assert refused.value.response.status_code == 422
            detail = refused.value.response.json()["detail"]
            assert "values, updates, messages, messages-tuple, custom, events" in detail


async def test_stream_subgraphs_sends_a_nested_graphs_steps_under_its_namespace(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            parts = [
                part
                async for part in client.runs.stream(
                    tid,
                    "nests",
                    input=said("hi"),
                    stream_mode=["values", "updates"],
                    stream_subgraphs=True,
                )
            ]
            names = [part.event for part in parts]
            namespaced = [name for name in names if "|" in name]
            assert [name.split("|")[0] for name in namespaced] == [
                "values", "updates", "values", "updates",
            ]  # fmt: skip
            (ns,) = {name.split("|", 1)[1] for name in namespaced}
            assert ns.startswith("inner:")
            steps = [
                (node, [(m["type"], m["content"]) for m in body["messages"]])
                for part in parts
                if part.event.startswith("updates|")
                for node, body in part.data.items()
            ]
            assert steps == [("hear", [("human", "hi")]), ("answer", [("ai", "inner: hi")])]
            # The top level's parts come after, as without stream_subgraphs.
            assert names[-2:] == ["values", "updates"]
            assert [m["content"] for m in parts[-2].data["messages"]] == ["hi", "inner: hi"]
            plain = [
                part.event
                async for part in client.runs.stream(
                    tid, "nests", input=said("again"), stream_mode=["values", "updates"]
                )
            ]
            assert plain == ["metadata", "values", "updates"]
