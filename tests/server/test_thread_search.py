"""Thread search as the official client sends it: filters by containment, ids, status,
order, page, selected fields and extracted paths; what it cannot read is a 422."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from agentgraph.server._thread_search import ThreadQuery, contains

from .support import said, serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(
    ("document", "query", "expected"),
    [
        ({"a": 1, "b": 2}, {"a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1}}, True),
        ({"a": [1, 2, 3]}, {"a": [3, 1]}, True),
        ({"a": [1, 2]}, {"a": [4]}, False),
        ({"a": [{"k": 1, "x": 2}]}, {"a": [{"k": 1}]}, True),
        ({"a": 1}, {"a": True}, False),
        ({"a": 1}, {"a": 1.0}, False),
        ({"a": "1"}, {"a": 1}, False),
        ({"a": None}, {"a": None}, True),
        ({}, {}, True),
    ],
)
def test_containment_is_postgresqls_for_json(document, query, expected):
    assert contains(document, query) is expected


async def test_a_search_filters_orders_pages_selects_and_extracts(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            made = []
            for n, team in enumerate(("red", "blue", "red")):
                thread = await client.threads.create(metadata={"team": team, "n": n})
                made.append(thread["thread_id"])
            first, second, third = made
            await client.runs.wait(first, "echo", input=said("hello"))
            await client.runs.wait(third, "echo", input=said("bye"))

            red = await client.threads.search(metadata={"team": "red"})
            assert [t["thread_id"] for t in red] == [third, first]  # newest first
            oldest_first = await client.threads.search(
                metadata={"team": "red"}, sort_by="created_at", sort_order="asc"
            )
            assert [t["thread_id"] for t in oldest_first] == [first, third]
            by_id = await client.threads.search(sort_by="thread_id", sort_order="asc", limit=3)
            assert [t["thread_id"] for t in by_id] == sorted(made)
            page = await client.threads.search(sort_order="asc", limit=1, offset=1)
            assert [t["thread_id"] for t in page] == [second]

            said_hello = await client.threads.search(values={"messages": [{"content": "hello"}]})
            assert [t["thread_id"] for t in said_hello] == [first]
            assert await client.threads.search(values={"messages": [{"content": "nope"}]}) == []
            assert await client.threads.count(values={"messages": [{"content": "bye"}]}) == 1

            only = await client.threads.search(ids=[second, third], sort_order="asc")
            assert [t["thread_id"] for t in only] == [second, third]
            idle = await client.threads.search(status="idle", metadata={"team": "blue"})
            assert [t["thread_id"] for t in idle] == [second]
            assert await client.threads.search(status="busy") == []

            picked = await client.threads.search(
                ids=[first],
                select=["thread_id", "status"],
                extract={
                    "last": "values.messages[-1].content",
                    "team": "metadata.team",
                    "missing": "values.messages[9].content",
                },
            )
            assert picked == [
                {
                    "thread_id": first,
                    "status": "idle",
                    "extracted": {"last": "echo: hello", "team": "red", "missing": None},
                }
            ]


async def test_what_a_search_cannot_read_is_a_422(tmp_path: Path):
    with serving(tmp_path) as url, httpx.Client(base_url=url) as http:
        bodies = [
            {"status": "sleeping"},
            {"sort_by": "colour"},
            {"sort_order": "sideways"},
            {"select": ["thread_id", "secrets"]},
            {"select": "thread_id"},
            {"ids": "not-a-list"},
            {"ids": ["not-a-uuid"]},
            {"values": ["a"]},
            {"metadata": "team"},
            {"extract": {"x": "values..messages"}},
            {"extract": {"x": ""}},
            {"extract": {"x": 3}},
            {"extract": {str(n): "values" for n in range(11)}},
        ]
        for body in bodies:
            answer = http.post("/threads/search", json=body)
            assert answer.status_code == 422, body
            assert answer.json()["detail"]


def test_a_query_keeps_what_it_was_given():
    query = ThreadQuery.read(
        {"extract": {"m": "values.messages[-2].content"}, "select": ["values", "config"]},
        metadata={"team": "red"},
    )
    assert query.extract == (("m", ("values", "messages", -2, "content")),)
    assert query.select == ("values",)  # `config` is no field of a thread here
    assert query.metadata == {"team": "red"} and query.descending


async def test_a_threads_runs_are_listed_by_status_with_the_selected_fields(tmp_path: Path):
    with serving(tmp_path) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            await client.runs.wait(tid, "echo", input=said("one"))
            with pytest.raises(Exception, match="the node failed"):  # the client raises on error
                await client.runs.wait(tid, "fails", input=said("two"))
            everything = await client.runs.list(tid)
            assert [r["status"] for r in everything] == ["error", "success"]
            (failed,) = await client.runs.list(tid, status="error")
            assert failed["run_id"] == everything[0]["run_id"]
            assert await client.runs.list(tid, status="timeout") == []
            picked = await client.runs.list(tid, select=["run_id", "status", "cancel_reason"])
            assert picked == [{"run_id": r["run_id"], "status": r["status"]} for r in everything]
        async with httpx.AsyncClient(base_url=url) as http:
            for query in ("status=asleep", "select=secrets"):
                answer = await http.get(f"/threads/{tid}/runs?{query}")
                assert answer.status_code == 422, query
