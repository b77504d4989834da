"""Authorization hooks, tried as an attacker would: two API-key tenants (`tenants_auth.py`,
an `auth.py` written for LangGraph) on one server, driven by the official Python client.

The second tenant, Bob, goes after everything of the first, Alice's: every endpoint
with her ids, copied, search bodies naming her, her store namespaces, joins and
streams of her runs with `Last-Event-ID`, crons and runs aimed at her thread and
assistant. Nothing of hers is read, changed or streamed, and each refusal is the
answer an id naming nothing gets (no oracle of what exists).
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agentgraph.server._queue import RunQueue
from tests.pg_server import drop_schema, fresh_schema

from .support import GATE, agentgraph, said, served_at, serving
from .tenants_auth import auth

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: Any, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        yield str(tmp_path / "server.db"), "agentgraph"
        return
    dsn = request.getfixturevalue("postgres_server").dsn
    schema = fresh_schema()
    yield dsn, schema
    drop_schema(dsn, schema)


@contextlib.asynccontextmanager
async def tenants(
    tmp_path: Path, database: tuple[str, str]
) -> AsyncIterator[tuple[str, LangGraphClient, LangGraphClient]]:
    where, schema = database
    with serving(tmp_path, where=where, schema=schema, auth=auth) as url:
        async with (
            get_client(url=url, api_key="key-alice") as alice,
            get_client(url=url, api_key="key-bob") as bob,
        ):
            yield url, alice, bob


async def answer(call: Awaitable[Any]) -> tuple[int, str]:
    """The status and detail a refused call got."""
    try:
        await call
    except httpx.HTTPStatusError as refused:
        return refused.response.status_code, refused.response.json()["detail"]
    raise AssertionError("the call was not refused")


async def as_missing(call: Callable[[str], Awaitable[Any]], theirs: str) -> None:
    """`call` with another tenant's id is refused exactly as with an id naming nothing."""
    nothing = str(uuid.uuid4())
    status, detail = await answer(call(theirs))
    assert status == 404, detail
    assert (status, detail.replace(theirs, nothing)) == await answer(call(nothing))


async def test_authentication_refuses_unknown_keys_and_leaves_ok_public(tmp_path: Path) -> None:
    with serving(tmp_path, auth=auth) as url:
        async with httpx.AsyncClient(base_url=url) as raw:
            assert (await raw.get("/ok")).status_code == 200
            for headers in ({}, {"x-api-key": "key-mallory"}):
                refused = await raw.post("/threads/search", json={}, headers=headers)
                assert (refused.status_code, refused.json()) == (401, {"detail": "Invalid API key"})
            allowed = await raw.post("/threads/search", json={}, headers={"x-api-key": "key-bob"})
            assert allowed.status_code == 200


async def test_threads_and_runs_of_another_tenant(
    tmp_path: Path, database: tuple[str, str]
) -> None:
    async with tenants(tmp_path, database) as (url, alice, bob):
        mine = await alice.assistants.create(graph_id="echo", name="alice's")
        thread = await alice.threads.create(metadata={"topic": "secret"})
        tid = thread["thread_id"]
        assert thread["metadata"] == {"topic": "secret", "owner": "alice"}
        await alice.runs.wait(tid, mine["assistant_id"], input=said("my secret"))
        run = (await alice.runs.list(tid))[0]
        rid = run["run_id"]
        assert run["metadata"]["owner"] == "alice"

        await as_missing(lambda t: bob.threads.get(t), tid)
        await as_missing(lambda t: bob.threads.update(t, metadata={"owner": "bob"}), tid)
        await as_missing(lambda t: bob.threads.get_state(t), tid)
        await as_missing(lambda t: bob.threads.get_history(t), tid)
        await as_missing(lambda t: bob.threads.update_state(t, {"messages": []}), tid)
        await as_missing(lambda t: bob.threads.copy(t), tid)
        await as_missing(lambda t: bob.threads.delete(t), tid)
        await as_missing(lambda t: bob.runs.list(t), tid)
        await as_missing(lambda r: bob.runs.get(tid, r), rid)
        await as_missing(lambda r: bob.runs.join(tid, r), rid)
        await as_missing(lambda r: bob.runs.cancel(tid, r), rid)
        await as_missing(lambda r: bob.runs.delete(tid, r), rid)
        await as_missing(lambda t: bob.runs.wait(t, "echo", input=said("in")), tid)
        await as_missing(
            lambda t: bob.runs.create(t, "echo", input=said("in"), if_not_exists="create"), tid
        )
        # Alice's assistant, copied, is not Bob's to run, on his own thread or on none.
        his = (await bob.threads.create())["thread_id"]
        mine_id = mine["assistant_id"]
        await as_missing(lambda a: bob.runs.wait(his, a, input=said("in")), mine_id)
        await as_missing(lambda a: bob.runs.wait(None, a, input=said("in")), mine_id)

        async with httpx.AsyncClient(base_url=url, headers={"x-api-key": "key-bob"}) as raw:
            for path in (f"/threads/{tid}/runs/{rid}/stream", f"/threads/{tid}/stream"):
                joined = await raw.get(path, headers={"last-event-id": "0"})
                assert joined.status_code == 404, path
                assert "data:" not in joined.text
            log = await raw.get(f"/threads/{tid}/runs/{rid}/webhooks")
            assert log.status_code == 404
            taken = await raw.post("/threads", json={"thread_id": tid, "if_exists": "do_nothing"})
            assert taken.status_code == 409
            assert "secret" not in taken.text
            await raw.post("/runs/cancel", json={"run_ids": [rid], "action": "rollback"})

        # Bob's searches, whatever they ask for, find his threads alone (the handler
        # sets the owner his search asks for to him).
        for metadata in (None, {"owner": "alice"}, {"topic": "secret"}):
            found = await bob.threads.search(metadata=metadata)
            assert tid not in [t["thread_id"] for t in found]
            assert all(t["metadata"]["owner"] == "bob" for t in found)
        assert await bob.threads.count(metadata={"topic": "secret"}) == 0
        assert await bob.threads.count(metadata={"owner": "alice"}) == 1  # his own
        assert [t["thread_id"] for t in await bob.threads.search()] == [his]

        # Alice still has all of it, as it was.
        kept = await alice.threads.get(tid)
        assert kept["metadata"] == {"topic": "secret", "owner": "alice"}
        assert (await alice.runs.get(tid, rid))["status"] == "success"
        state = await alice.threads.get_state(tid)
        assert [m["content"] for m in state["values"]["messages"]][-1] == "echo: my secret"
        assert [t["thread_id"] for t in await alice.threads.search()] == [tid]


async def test_a_tenant_cannot_cancel_or_join_a_run_in_flight(tmp_path: Path) -> None:
    async with tenants(tmp_path, (str(tmp_path / "server.db"), "agentgraph")) as (_, alice, bob):
        mine = await alice.assistants.create(graph_id="gated")
        tid = (await alice.threads.create())["thread_id"]
        run = await alice.runs.create(tid, mine["assistant_id"], input=said("wait"))
        rid = run["run_id"]
        await as_missing(lambda r: bob.runs.cancel(tid, r, action="rollback"), rid)
        async with httpx.AsyncClient(base_url=_url(bob), headers={"x-api-key": "key-bob"}) as raw:
            await raw.post("/runs/cancel", json={"run_ids": [rid], "action": "interrupt"})
        GATE.set()
        assert (await alice.runs.join(tid, rid))["messages"][-1]["content"] == "gated: wait"
        assert (await alice.runs.get(tid, rid))["status"] == "success"


def _url(client: LangGraphClient) -> str:
    return str(client.http.client.base_url)


async def test_assistants_of_another_tenant(tmp_path: Path) -> None:
    async with tenants(tmp_path, (str(tmp_path / "server.db"), "agentgraph")) as (_, alice, bob):
        mine = await alice.assistants.create(graph_id="echo", name="alice's", metadata={"k": 1})
        aid = mine["assistant_id"]
        assert mine["metadata"] == {"k": 1, "owner": "alice"}
        await as_missing(lambda a: bob.assistants.get(a), aid)
        await as_missing(lambda a: bob.assistants.update(a, name="bob's now"), aid)
        await as_missing(lambda a: bob.assistants.delete(a), aid)
        await as_missing(lambda a: bob.assistants.get_versions(a), aid)
        await as_missing(lambda a: bob.assistants.set_latest(a, 1), aid)
        await as_missing(lambda a: bob.assistants.get_graph(a), aid)
        await as_missing(lambda a: bob.assistants.get_schemas(a), aid)
        await as_missing(lambda a: bob.assistants.get_subgraphs(a), aid)
        assert await bob.assistants.search(metadata={"owner": "alice"}) == []
        assert await bob.assistants.count() == 0
        status, _ = await answer(bob.assistants.create(graph_id="echo", assistant_id=aid))
        assert status == 409
        assert (await alice.assistants.get(aid))["name"] == "alice's"
        assert [a["assistant_id"] for a in await alice.assistants.search()] == [aid]


async def test_deleting_an_assistant_with_its_threads_leaves_another_tenants(
    tmp_path: Path,
) -> None:
    async with tenants(tmp_path, (str(tmp_path / "server.db"), "agentgraph")) as (_, alice, bob):
        his = (await bob.assistants.create(graph_id="echo"))["assistant_id"]
        his_thread = (await bob.threads.create(metadata={"assistant_id": his}))["thread_id"]
        # Alice's thread names his assistant: deleting it with its threads is not hers to do.
        hers = (await alice.threads.create(metadata={"assistant_id": his}))["thread_id"]
        await bob.assistants.delete(his, delete_threads=True)
        assert (await alice.threads.get(hers))["thread_id"] == hers
        status, _ = await answer(bob.threads.get(his_thread))
        assert status == 404


async def test_crons_of_another_tenant(tmp_path: Path) -> None:
    async with tenants(tmp_path, (str(tmp_path / "server.db"), "agentgraph")) as (_, alice, bob):
        mine = await alice.assistants.create(graph_id="echo")
        aid = mine["assistant_id"]
        tid = (await alice.threads.create())["thread_id"]
        cron = await alice.crons.create_for_thread(tid, aid, schedule="0 0 1 1 *")
        cid = cron["cron_id"]
        assert cron["metadata"]["owner"] == "alice"
        async with httpx.AsyncClient(base_url=_url(bob), headers={"x-api-key": "key-bob"}) as raw:
            for method, path in (("GET", "/runs/crons/{}"), ("DELETE", "/runs/crons/{}")):
                got = await raw.request(method, path.format(cid))
                nothing = await raw.request(method, path.format(uuid.uuid4()))
                assert got.status_code == nothing.status_code == 404
            patched = await raw.patch(f"/runs/crons/{cid}", json={"schedule": "* * * * *"})
            assert patched.status_code == 404
        assert await bob.crons.search() == []
        assert await bob.crons.count(thread_id=tid) == 0
        his = await bob.assistants.create(graph_id="echo")
        await as_missing(
            lambda t: bob.crons.create_for_thread(t, his["assistant_id"], schedule="* * * * *"),
            tid,
        )
        await as_missing(lambda a: bob.crons.create(a, schedule="* * * * *"), aid)
        kept = await alice.crons.search()
        assert [(c["cron_id"], c["schedule"]) for c in kept] == [(cid, "0 0 1 1 *")]


async def test_a_tenant_cannot_prune_or_expire_another_tenants_threads(tmp_path: Path) -> None:
    async with tenants(tmp_path, (str(tmp_path / "server.db"), "agentgraph")) as (_, alice, bob):
        tid = (await alice.threads.create())["thread_id"]
        for strategy in ("delete", "keep_latest"):
            pruned = await bob.threads.prune([tid, str(uuid.uuid4())], strategy=strategy)
            assert pruned == {"pruned_count": 0}
        await as_missing(lambda t: bob.threads.update(t, metadata={}, ttl=1), tid)
        assert (await alice.threads.get(tid))["thread_id"] == tid
        assert await alice.threads.prune([tid]) == {"pruned_count": 1}
        status, _ = await answer(alice.threads.get(tid))
        assert status == 404


async def test_the_store_keeps_each_tenant_in_their_namespace(tmp_path: Path) -> None:
    async with tenants(tmp_path, (str(tmp_path / "server.db"), "agentgraph")) as (_, alice, bob):
        await alice.store.put_item(["notes"], "plan", {"text": "alice's plan"})
        item = await alice.store.get_item(["notes"], "plan")
        assert item["namespace"] == ["alice", "notes"]
        assert item["value"] == {"text": "alice's plan"}
        for namespace in (["notes"], ["alice", "notes"]):
            status, _ = await answer(bob.store.get_item(namespace, "plan"))
            assert status == 404
            await bob.store.delete_item(namespace, "plan")
            assert (await bob.store.search_items(namespace))["items"] == []
        await bob.store.put_item(["alice", "notes"], "plan", {"text": "bob's"})
        assert (await bob.store.search_items([]))["items"][0]["namespace"] == [
            "bob",
            "alice",
            "notes",
        ]
        listed = await bob.store.list_namespaces()
        assert listed["namespaces"] == [["bob", "alice", "notes"]]
        assert (await alice.store.get_item(["notes"], "plan"))["value"] == {"text": "alice's plan"}
        assert (await alice.store.list_namespaces())["namespaces"] == [["alice", "notes"]]


def test_the_server_command_takes_an_auth_py_written_for_langgraph(tmp_path: Path) -> None:
    store = str(tmp_path / "server.db")
    arguments = ("server", "echo=tests.server.support:echo", "--store", store, "--port", "0")
    hooks = ("--auth", "tests.server.tenants_auth:auth")
    with agentgraph(*arguments, *hooks, "--workers", "0", folder=tmp_path) as process:
        url = served_at(process).rstrip("/")
        assert httpx.get(f"{url}/ok").status_code == 200
        assert httpx.post(f"{url}/threads", json={}).status_code == 401
        made = httpx.post(f"{url}/threads", json={}, headers={"x-api-key": "key-alice"})
        assert made.json()["metadata"] == {"owner": "alice"}
    wrong = ("--auth", "tests.server.support:echo")
    with agentgraph(*arguments, *wrong, folder=tmp_path) as refused:
        assert refused.wait(timeout=60) != 0


async def test_the_maker_of_each_resource_is_recorded_as_its_owner(tmp_path: Path) -> None:
    where = str(tmp_path / "server.db")
    async with tenants(tmp_path, (where, "agentgraph")) as (_, alice, _bob):
        aid = (await alice.assistants.create(graph_id="echo"))["assistant_id"]
        tid = (await alice.threads.create())["thread_id"]
        await alice.runs.wait(tid, aid, input=said("hi"))
        rid = (await alice.runs.list(tid))[0]["run_id"]
        cid = (await alice.crons.create_for_thread(tid, aid, schedule="0 0 1 1 *"))["cron_id"]
        stateless = await alice.runs.wait(None, aid, input=said("once"))
        assert stateless["messages"][-1]["content"] == "echo: once"
    queue = RunQueue(where)
    try:
        made = [("assistants", aid), ("threads", tid), ("runs", rid), ("crons", cid)]
        assert [queue.owner(kind, key) for kind, key in made] == ["alice"] * 4
    finally:
        queue.close()
    # Without hooks, the owner is a digest of the caller's API key.
    with serving(tmp_path, where=str(tmp_path / "open.db")) as url:
        async with get_client(url=url, api_key="some key") as anyone:
            tid = (await anyone.threads.create())["thread_id"]
    queue = RunQueue(str(tmp_path / "open.db"))
    try:
        assert queue.owner("threads", tid) == hashlib.sha256(b"some key").hexdigest()
    finally:
        queue.close()


async def test_a_stateless_run_is_its_makers_once_its_thread_is_gone(tmp_path: Path) -> None:
    async with tenants(tmp_path, (str(tmp_path / "server.db"), "agentgraph")) as (_, alice, bob):
        aid = (await alice.assistants.create(graph_id="echo"))["assistant_id"]
        run = await alice.runs.create(None, aid, input=said("once"))
        tid, rid = run["thread_id"], run["run_id"]
        assert (await alice.runs.join(tid, rid))["messages"][-1]["content"] == "echo: once"
        with anyio.fail_after(30):  # its worker deletes the thread once the run has ended
            while await alice.threads.search(metadata={"owner": "alice"}):
                await anyio.sleep(0.05)
        await as_missing(lambda t: alice.threads.get(t), tid)
        assert (await alice.runs.get(tid, rid))["status"] == "success"
        await as_missing(lambda r: bob.runs.get(tid, r), rid)
        await as_missing(lambda r: bob.runs.join(tid, r), rid)
