"""The rest of what the Python client calls: assistants, thread management, batches, the store."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from .support import GRAPHS, said, serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_each_graph_has_one_default_assistant_found_by_either_id(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            found = await client.assistants.search(graph_id="echo")
            assert [a["graph_id"] for a in found] == ["echo"]
            by_id = await client.assistants.get(found[0]["assistant_id"])
            assert by_id == found[0]
            assert await client.assistants.count() == len(GRAPHS)
            drawing = await client.assistants.get_graph("echo")
            assert "reply" in [n["id"] for n in drawing["nodes"]]
            schemas = await client.assistants.get_schemas("echo")
            assert schemas["graph_id"] == "echo"
            assert await client.assistants.get_subgraphs("echo") == {}


async def test_threads_are_searched_counted_updated_copied_and_deleted(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create(metadata={"user": "ann"}))["thread_id"]
            again = await client.threads.create(thread_id=tid, if_exists="do_nothing")
            assert again["thread_id"] == tid
            await client.threads.create(metadata={"user": "bob"})
            assert await client.threads.count() == 2
            (mine,) = await client.threads.search(metadata={"user": "ann"})
            assert mine["thread_id"] == tid
            await client.runs.wait(tid, "echo", input=said("hi"))
            updated = await client.threads.update(tid, metadata={"topic": "greeting"})
            assert updated["metadata"] == {"user": "ann", "topic": "greeting"}
            copy = await client.threads.copy(tid)
            state = await client.threads.get_state(copy["thread_id"])
            assert [m["content"] for m in state["values"]["messages"]] == ["hi", "echo: hi"]
            history = await client.threads.get_history(tid)
            assert history[0]["values"]["messages"][-1]["content"] == "echo: hi"
            await client.threads.update_state(tid, {"mood": "glad"})
            assert (await client.threads.get_state(tid))["values"]["mood"] == "glad"
            await client.threads.delete(tid)
            with pytest.raises(httpx.HTTPStatusError) as gone:
                await client.threads.get(tid)
            assert gone.value.response.status_code == 404


async def test_stateless_streams_batches_bulk_cancel_and_run_deletion(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            events = [
                part.event async for part in client.runs.stream(None, "echo", input=said("x"))
            ]
            assert events == ["metadata", "values"]
            batch = await client.runs.create_batch(
                [
                    {"assistant_id": "slow", "input": said("a")},
                    {"assistant_id": "slow", "input": said("b")},
                ]
            )
            await client.runs.cancel_many(run_ids=[r["run_id"] for r in batch])
            for run in batch:
                await client.runs.join(run["thread_id"], run["run_id"])
                assert (await client.runs.get(run["thread_id"], run["run_id"]))[
                    "status"
                ] == "interrupted"
            tid = (await client.threads.create())["thread_id"]
            run = await client.runs.create(tid, "echo", input=said("y"))
            await client.runs.join(tid, run["run_id"])
            await client.runs.delete(tid, run["run_id"])
            assert await client.runs.list(tid) == []


async def test_the_store_puts_gets_searches_lists_and_deletes_items(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            await client.store.put_item(["users", "ann"], "diet", {"text": "vegetarian"})
            await client.store.put_item(["users", "bob"], "diet", {"text": "vegan"})
            item = await client.store.get_item(["users", "ann"], "diet")
            assert item["value"] == {"text": "vegetarian"}
            found = await client.store.search_items(["users"], filter={"text": "vegan"})
            assert [i["namespace"] for i in found["items"]] == [["users", "bob"]]
            spaces = await client.store.list_namespaces(prefix=["users"])
            assert spaces["namespaces"] == [["users", "ann"], ["users", "bob"]]
            await client.store.delete_item(["users", "ann"], "diet")
            with pytest.raises(httpx.HTTPStatusError) as gone:
                await client.store.get_item(["users", "ann"], "diet")
            assert gone.value.response.status_code == 404


async def test_a_limit_or_offset_that_is_no_count_is_a_422_everywhere(tmp_path: Path):
    with serving(tmp_path) as url, httpx.Client(base_url=url) as http:
        tid = http.post("/threads", json={}).json()["thread_id"]
        asks = [
            ("POST", "/threads/search", {"limit": "ten"}),
            ("POST", "/threads/search", {"offset": -1}),
            ("POST", f"/threads/{tid}/history", {"limit": "ten"}),
            ("GET", f"/threads/{tid}/runs?limit=ten", None),
            ("GET", f"/threads/{tid}/runs?offset=-2", None),
            ("POST", "/assistants/search", {"limit": 2.5}),
            ("POST", "/runs/crons/search", {"limit": True}),
            ("POST", "/store/items/search", {"limit": "many"}),
            ("POST", "/store/namespaces", {"offset": []}),
        ]
        for method, path, body in asks:
            answer = http.request(method, path, json=body)
            assert answer.status_code == 422, (path, body, answer.status_code, answer.text)
            assert "whole number" in answer.text
        assert http.get(f"/threads/{tid}/runs?limit=5&offset=0").status_code == 200
