"""Assistants through the Python client: stored, versioned, searched, deleted, run, described."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agentgraph import AgentContext, Graph, GraphBuilder, node
from agentgraph.llm import Message
from agentgraph.server._api import assistant_id_of
from tests.pg_server import drop_schema, fresh_schema

from .support import GATE, GRAPHS, said, serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def configured() -> Graph[str, str]:
    """Greets with the `greeting` and `tone` its state holds (an assistant's context)."""

    @node(name="greet")
    async def greet(ctx: AgentContext[str]) -> AgentContext[str]:
        greeting, tone = ctx.state.get("greeting", "hello"), ctx.state.get("tone", "plain")
        answer = f"{greeting}, {ctx.input} ({tone})"
        return ctx.append(Message.user(ctx.input), Message.assistant(answer)).with_input(answer)

    with GraphBuilder[str, str]("configured") as g:
        g.start.edge_to(greet).edge_to(g.finish)
    return g.build()


@attrs.frozen
class Trip:
    """Where to and for how long."""

    city: str
    days: int


@attrs.frozen
class Plan:
    city: str
    stops: list[str]


def typed() -> Graph[Trip, Plan]:
    """Takes a `Trip`, answers with a `Plan` (and says so in a message)."""

    @node(name="plan")
    async def plan(ctx: AgentContext[Trip]) -> AgentContext[Plan]:
        stops = [f"day {n}" for n in range(1, ctx.input.days + 1)]
        told = Message.assistant(f"{ctx.input.city}: {', '.join(stops)}")
        return ctx.append(told).with_input(Plan(ctx.input.city, stops))

    with GraphBuilder[Trip, Plan]("typed", types=(Trip, Plan)) as g:
        g.start.edge_to(plan).edge_to(g.finish)
    return g.build()


def nested() -> Graph[str, str]:
    """`outer` holds the graph `inner`, which holds the graph `deep`; `check` routes."""

    @node(name="leaf")
    async def leaf(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx

    @node(name="middle")
    async def middle(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx

    @node(name="check")
    async def check(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx

    with GraphBuilder[str, str]("deep") as d:
        d.start.edge_to(leaf).edge_to(d.finish)
    deep = d.build()
    with GraphBuilder[str, str]("inner") as i:
        i.start.edge_to(middle).edge_to(deep).edge_to(i.finish)
    inner = i.build()
    with GraphBuilder[str, str]("outer") as g:
        g.start.edge_to(check)
        check.edge_to(lambda ctx: inner if ctx.input else g.finish, targets=(inner, g.finish))
        inner.edge_to(g.finish)
    return g.build()


SERVED = {**GRAPHS, "configured": configured(), "typed": typed(), "nested": nested()}


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """Where the server keeps its queue: SQLite in the test's folder, or a schema of the
    test's own on the test PostgreSQL server."""
    if request.param == "sqlite":
        yield {}
        return
    server = request.getfixturevalue("postgres_server")
    schema = fresh_schema()
    yield {"where": server.dsn, "schema": schema}
    drop_schema(server.dsn, schema)


@pytest.fixture
async def client(tmp_path: Path, database: dict[str, str]) -> AsyncIterator[LangGraphClient]:
    with serving(tmp_path, graphs=SERVED, **database) as url:
        async with get_client(url=url) as found:
            yield found


async def status_of(call: Any) -> int:
    """The HTTP status a client call failed with."""
    with pytest.raises(httpx.HTTPStatusError) as failed:
        await call
    return failed.value.response.status_code


async def test_every_graph_has_a_default_assistant_there_without_being_created(
    client: LangGraphClient,
):
    assert await client.assistants.count() == len(SERVED)
    (default,) = await client.assistants.search(graph_id="echo")
    assert default["assistant_id"] == assistant_id_of("echo")
    assert default["metadata"] == {"created_by": "system"}
    assert (default["version"], default["name"]) == (1, "echo")
    assert await client.assistants.get("echo") == default
    assert await client.assistants.get(default["assistant_id"]) == default
    changed = await client.assistants.update("echo", metadata={"team": "search"})
    assert changed["version"] == 2
    assert changed["metadata"] == {"created_by": "system", "team": "search"}
    assert await status_of(client.assistants.delete("echo")) == 409


async def test_a_restarted_server_keeps_the_assistants_and_versions_it_had(tmp_path: Path):
    with serving(tmp_path, graphs=SERVED) as url:
        async with get_client(url=url) as client:
            await client.assistants.update("echo", metadata={"team": "search"})
            made = await client.assistants.create("configured", name="kept")
    with serving(tmp_path, graphs=SERVED) as url:
        async with get_client(url=url) as client:
            default = await client.assistants.get("echo")
            assert (default["version"], default["metadata"]["team"]) == (2, "search")
            assert await client.assistants.get(made["assistant_id"]) == made
            assert await client.assistants.count() == len(SERVED) + 1


async def test_assistants_are_created_updated_versioned_and_set_back(client: LangGraphClient):
    made = await client.assistants.create(
        "configured",
        config={"configurable": {"tone": "warm"}},
        context={"greeting": "hi"},
        metadata={"team": "a"},
        name="Warm greeter",
        description="greets warmly",
    )
    aid = made["assistant_id"]
    assert made["graph_id"] == "configured"
    assert (made["version"], made["name"], made["description"]) == (
        1,
        "Warm greeter",
        "greets warmly",
    )
    assert made["config"] == {"configurable": {"tone": "warm"}}
    assert made["context"] == {"greeting": "hi"}
    assert await client.assistants.get(aid) == made

    again = await client.assistants.create(
        "configured", assistant_id=aid, if_exists="do_nothing", name="other"
    )
    assert again == made
    assert await status_of(client.assistants.create("configured", assistant_id=aid)) == 409

    second = await client.assistants.update(
        aid, context={"greeting": "hey"}, metadata={"stage": "beta"}
    )
    assert second["version"] == 2
    assert second["context"] == {"greeting": "hey"}
    assert second["config"] == made["config"]  # not given: kept
    assert second["metadata"] == {"team": "a", "stage": "beta"}  # merged
    assert second["name"] == "Warm greeter"
    third = await client.assistants.update(aid, name="Greeter")
    assert third["version"] == 3

    versions = await client.assistants.get_versions(aid)
    assert [v["version"] for v in versions] == [3, 2, 1]
    assert [v["context"] for v in versions] == [{"greeting": "hey"}] * 2 + [{"greeting": "hi"}]
    assert "updated_at" not in versions[0]
    betas = await client.assistants.get_versions(aid, metadata={"stage": "beta"})
    assert [v["version"] for v in betas] == [3, 2]
    assert [v["version"] for v in await client.assistants.get_versions(aid, limit=1, offset=1)] == [
        2
    ]

    back = await client.assistants.set_latest(aid, 1)
    assert (back["version"], back["context"], back["name"]) == (
        1,
        {"greeting": "hi"},
        "Warm greeter",
    )
    assert (await client.assistants.get(aid))["version"] == 1
    after = await client.assistants.update(aid, description="again")
    assert after["version"] == 4  # after the newest, not after the one pointed at
    assert after["context"] == {"greeting": "hi"}
    assert await status_of(client.assistants.set_latest(aid, 9)) == 404


async def test_assistants_are_searched_counted_sorted_paged_and_selected(client: LangGraphClient):
    for name, team in (("beta bot", "x"), ("alpha bot", "y"), ("gamma", "x")):
        await client.assistants.create("echo", name=name, metadata={"team": team})
    mine = await client.assistants.search(graph_id="echo", metadata={"team": "x"})
    assert sorted(a["name"] for a in mine) == ["beta bot", "gamma"]
    assert await client.assistants.count(graph_id="echo") == 4  # with the default
    assert await client.assistants.count(metadata={"team": "x"}) == 2
    assert await client.assistants.count(name="BOT") == 2  # a substring, any case
    by_name = await client.assistants.search(graph_id="echo", sort_by="name", sort_order="asc")
    assert [a["name"] for a in by_name] == ["alpha bot", "beta bot", "echo", "gamma"]
    newest = await client.assistants.search(graph_id="echo", metadata={"team": "x"})
    assert [a["name"] for a in newest] == ["gamma", "beta bot"]  # created_at, newest first
    page = await client.assistants.search(
        graph_id="echo", sort_by="name", sort_order="asc", limit=2, response_format="object"
    )
    assert [a["name"] for a in page["assistants"]] == ["alpha bot", "beta bot"]
    assert page["next"] == "2"
    rest = await client.assistants.search(
        graph_id="echo",
        sort_by="name",
        sort_order="asc",
        limit=2,
        offset=2,
        response_format="object",
    )
    assert [a["name"] for a in rest["assistants"]] == ["echo", "gamma"]
    assert rest["next"] is None
    picked = await client.assistants.search(name="gamma", select=["assistant_id", "name"])
    assert [sorted(a) for a in picked] == [["assistant_id", "name"]]
    refused = client.assistants.search(sort_by="colour")  # type: ignore[arg-type]
    assert await status_of(refused) == 422


async def test_a_run_takes_its_assistants_config_and_context_under_its_own(
    client: LangGraphClient,
):
    made = await client.assistants.create(
        "configured", config={"configurable": {"tone": "warm"}}, context={"greeting": "hi"}
    )
    aid = made["assistant_id"]
    tid = (await client.threads.create())["thread_id"]
    values = await client.runs.wait(tid, aid, input=said("ann"))
    assert values["messages"][-1]["content"] == "hi, ann (warm)"
    (run,) = await client.runs.list(tid)
    assert run["assistant_id"] == aid
    assert run["kwargs"]["config"] == {"configurable": {"tone": "warm"}}
    assert run["kwargs"]["context"] == {"greeting": "hi"}

    own = await client.runs.wait(
        tid, aid, input=said("bob"), context={"greeting": "yo"}, config={"tags": ["t"]}
    )
    assert own["messages"][-1]["content"] == "yo, bob (warm)"

    await client.assistants.update(aid, context={"greeting": "hey"})
    later = await client.runs.wait(None, aid, input=said("cy"))
    assert later["messages"][-1]["content"] == "hey, cy (warm)"
    await client.assistants.set_latest(aid, 1)
    first = await client.runs.wait(None, aid, input=said("di"))
    assert first["messages"][-1]["content"] == "hi, di (warm)"
    plain = await client.runs.wait(None, "configured", input=said("ed"))
    assert plain["messages"][-1]["content"] == "hello, ed (plain)"


async def test_unknown_ids_are_404_and_ids_that_are_not_uuids_422(client: LangGraphClient):
    nobody = "00000000-0000-4000-8000-000000000000"
    assert await status_of(client.assistants.get(nobody)) == 404
    assert await status_of(client.assistants.get("nope")) == 422
    assert await status_of(client.assistants.update(nobody, name="x")) == 404
    assert await status_of(client.assistants.delete(nobody)) == 404
    assert await status_of(client.assistants.get_versions(nobody)) == 404
    assert await status_of(client.assistants.set_latest(nobody, 1)) == 404
    assert await status_of(client.assistants.get_schemas(nobody)) == 404
    assert await status_of(client.assistants.get_graph("nope")) == 422
    assert await status_of(client.assistants.create("no-such-graph")) == 404
    assert await status_of(client.assistants.create("echo", assistant_id="nope")) == 422
    assert await status_of(client.assistants.update("echo", graph_id="no-such-graph")) == 404
    tid = (await client.threads.create())["thread_id"]
    assert await status_of(client.runs.create(tid, nobody, input=said("x"))) == 404
    assert await status_of(client.runs.create(tid, "nope", input=said("x"))) == 422
    assert await client.assistants.count() == len(SERVED)  # nothing was made


async def test_deleting_an_assistant_keeps_its_threads_unless_asked(client: LangGraphClient):
    kept = (await client.assistants.create("echo", name="kept"))["assistant_id"]
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, kept, input=said("a"))
    await client.assistants.delete(kept)
    assert await status_of(client.assistants.get(kept)) == 404
    assert await status_of(client.assistants.get_versions(kept)) == 404
    (run,) = await client.runs.list(tid)
    assert run["assistant_id"] == kept  # the run keeps its record
    assert (await client.threads.get_state(tid))["values"]["messages"][-1]["content"] == "echo: a"
    assert await status_of(client.runs.create(tid, kept, input=said("b"))) == 404

    gone = (await client.assistants.create("echo", name="gone"))["assistant_id"]
    ran = (await client.threads.create())["thread_id"]
    await client.runs.wait(ran, gone, input=said("c"))
    named = (await client.threads.create(metadata={"assistant_id": gone}))["thread_id"]
    other = (await client.threads.create())["thread_id"]
    await client.runs.wait(other, "echo", input=said("d"))
    await client.assistants.delete(gone, delete_threads=True)
    assert await status_of(client.threads.get(ran)) == 404
    assert await status_of(client.threads.get(named)) == 404
    assert (await client.threads.get(other))["thread_id"] == other
    assert (await client.threads.get(tid))["thread_id"] == tid


async def test_a_run_queued_on_a_deleted_assistant_still_runs_as_queued(client: LangGraphClient):
    aid = (await client.assistants.create("gated", context={"mood": "calm"}))["assistant_id"]
    tid = (await client.threads.create())["thread_id"]
    held = await client.runs.create(tid, aid, input=said("a"))
    await client.assistants.delete(aid)
    GATE.set()
    values = await client.runs.join(tid, held["run_id"])
    assert values["messages"][-1]["content"] == "gated: a"
    assert values["mood"] == "calm"  # the deleted assistant's context, taken when queued
    assert (await client.runs.get(tid, held["run_id"]))["status"] == "success"


async def test_schemas_come_from_the_graphs_types(tmp_path: Path):
    with serving(tmp_path, graphs=SERVED) as url:
        async with get_client(url=url) as client:
            found = await client.assistants.get_schemas("typed")
            assert found["graph_id"] == "typed"
            trip = found["input_schema"]
            assert trip["type"] == "object"
            assert trip["properties"]["city"]["type"] == "string"
            assert trip["properties"]["days"]["type"] == "integer"
            assert sorted(trip["required"]) == ["city", "days"]
            plan = found["output_schema"]
            assert plan["properties"]["stops"] == {"type": "array", "items": {"type": "string"}}
            state = found["state_schema"]
            assert state["properties"]["messages"]["items"] == {"$ref": "#/$defs/Message"}
            assert state["$defs"]["Message"]["properties"]["type"]["enum"] == [
                "human",
                "ai",
                "tool",
                "system",
            ]
            assert found["config_schema"]["properties"]["configurable"]["type"] == "object"
            assert found["context_schema"]["type"] == "object"

            text = await client.assistants.get_schemas("echo")
            assert text["input_schema"]["properties"]["messages"]["type"] == "array"
            assert text["output_schema"]["properties"] == state["properties"]

            wrong = client.runs.wait(None, "typed", input={"city": "Oslo", "days": "two"})
            assert await status_of(wrong) == 422
            extra = client.runs.create(None, "typed", input={"city": "Oslo", "days": 1, "x": 1})
            assert await status_of(extra) == 422
            assert await client.threads.count() == 0  # nothing was stored
            values = await client.runs.wait(None, "typed", input={"city": "Oslo", "days": 2})
            assert values["messages"][-1]["content"] == "Oslo: day 1, day 2"


async def test_the_drawing_opens_nested_graphs_as_deep_as_xray_asks(tmp_path: Path):
    with serving(tmp_path, graphs=SERVED) as url:
        async with get_client(url=url) as client:
            flat = await client.assistants.get_graph("nested")
            assert [n["id"] for n in flat["nodes"]] == ["__start__", "check", "inner", "__end__"]
            assert {(e["source"], e["target"], e["conditional"]) for e in flat["edges"]} == {
                ("__start__", "check", False),
                ("check", "inner", True),
                ("check", "__end__", True),
                ("inner", "__end__", False),
            }
            one = await client.assistants.get_graph("nested", xray=1)
            assert "inner:middle" in [n["id"] for n in one["nodes"]]
            assert "inner:deep" in [n["id"] for n in one["nodes"]]
            assert ("check", "inner:__start__") in {
                (e["source"], e["target"]) for e in one["edges"]
            }
            assert ("inner:__end__", "__end__") in {
                (e["source"], e["target"]) for e in one["edges"]
            }
            full = await client.assistants.get_graph("nested", xray=True)
            ids = [n["id"] for n in full["nodes"]]
            assert "inner:deep:leaf" in ids and "inner:deep" not in ids
            assert ("inner:middle", "inner:deep:__start__") in {
                (e["source"], e["target"]) for e in full["edges"]
            }

            assert sorted(await client.assistants.get_subgraphs("nested")) == ["inner"]
            assert sorted(await client.assistants.get_subgraphs("nested", recurse=True)) == [
                "inner",
                "inner|deep",
            ]
            assert sorted(await client.assistants.get_subgraphs("nested", "inner|deep")) == [
                "inner|deep"
            ]
            below = await client.assistants.get_subgraphs("nested", "inner", recurse=True)
            assert sorted(below) == ["inner", "inner|deep"]
            assert below["inner"]["input_schema"]["properties"]["messages"]["type"] == "array"
            assert await client.assistants.get_subgraphs("echo") == {}
