"""How the server reads a LangGraph SDK `Auth` object: which handler decides, what its
answers mean, the users and parameters of `authenticate`, and the filters' operators."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import Auth
from starlette.requests import Request

from agentgraph import UsageError
from agentgraph.server._api import Refused
from agentgraph.server._auth import USER, Access, AuthUser
from agentgraph.server._auth_filter import Filter

from .support import serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def request_of(user: AuthUser) -> Request:
    return Request({"type": "http", "method": "GET", "path": "/", "headers": [], USER: user})


ALICE = AuthUser.of({"identity": "alice", "permissions": ["admin"], "org": "acme"})


async def test_the_most_specific_handler_decides() -> None:
    auth = Auth()
    seen: list[str] = []

    @auth.on
    async def everything(ctx: Auth.types.AuthContext, value: Any) -> bool:
        seen.append(f"global {ctx.resource}.{ctx.action}")
        return False

    @auth.on.threads
    async def threads(ctx: Auth.types.AuthContext, value: Any) -> None:
        seen.append(f"threads {ctx.action}")

    @auth.on.threads.create
    async def create(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        seen.append(f"create as {ctx.user.identity} {ctx.permissions}")
        return {"owner": ctx.user.identity}

    @auth.on(actions="search")
    async def searches(ctx: Auth.types.AuthContext, value: Any) -> None:
        seen.append(f"search {ctx.resource}")

    access = Access(auth)
    request = request_of(ALICE)
    assert await access.check(request, "threads", "create", {}) == Filter((("owner", "alice"),))
    assert not await access.check(request, "threads", "read", {})
    assert not await access.check(request, "crons", "search", {})
    with pytest.raises(Refused) as refused:
        await access.check(request, "crons", "read", {})
    assert refused.value.status == 403
    assert seen == [
        "create as alice ('admin',)",
        "threads read",
        "search crons",
        "global crons.read",
    ]


async def test_a_runs_action_goes_to_a_runs_handler_else_to_the_threads() -> None:
    auth = Auth()
    seen: list[tuple[str, str]] = []

    @auth.on.threads
    async def threads(ctx: Auth.types.AuthContext, value: Any) -> None:
        seen.append((ctx.resource, ctx.action))

    access = Access(auth)
    request = request_of(ALICE)
    for action in ("create", "read", "update", "delete", "search"):
        await access.check(request, "runs", action, {})
    assert seen == [
        ("threads", "create_run"),
        ("threads", "read"),
        ("threads", "update"),
        ("threads", "delete"),
        ("threads", "read"),
    ]

    @auth.on(resources="runs", actions="read")
    async def runs(ctx: Auth.types.AuthContext, value: Any) -> bool:
        seen.append((ctx.resource, ctx.action))
        return False

    access = Access(auth)
    with pytest.raises(Refused):
        await access.check(request, "runs", "read", {})
    await access.check(request, "runs", "create", {})
    assert seen[-2:] == [("runs", "read"), ("threads", "create_run")]


async def test_a_handler_raising_an_http_exception_is_answered_with_it() -> None:
    auth = Auth()

    @auth.on.assistants.delete
    async def admins_only(ctx: Auth.types.AuthContext, value: Any) -> None:
        if "root" not in ctx.permissions:
            raise Auth.exceptions.HTTPException(status_code=451, detail="not in this country")

    with pytest.raises(Refused) as refused:
        await Access(auth).check(request_of(ALICE), "assistants", "delete", {})
    assert (refused.value.status, refused.value.detail) == (451, "not in this country")


@pytest.mark.parametrize(
    "given",
    [
        [],
        {"owner": ["a list"]},
        {"owner": {"$in": ["alice"]}},
        {"owner": {"$eq": "alice", "$contains": "x"}},
        {"owner": {"$eq": {"nested": 1}}},
    ],
)
async def test_a_handler_answer_that_is_no_filter_refuses_with_a_500(given: Any) -> None:
    auth = Auth()

    @auth.on
    async def confused(ctx: Auth.types.AuthContext, value: Any) -> Any:
        return given

    with pytest.raises(Refused) as refused:
        await Access(auth).check(request_of(ALICE), "threads", "read", {})
    assert refused.value.status == 500


async def test_a_store_handler_allows_or_refuses_and_never_filters() -> None:
    auth = Auth()

    @auth.on.store
    async def scoped(ctx: Auth.types.AuthContext, value: Any) -> Any:
        return {"owner": ctx.user.identity}

    with pytest.raises(Refused) as refused:
        await Access(auth).check(request_of(ALICE), "store", "get", {"namespace": ()})
    assert refused.value.status == 500


def test_filters_match_equality_and_membership() -> None:
    both = Filter.of({"owner": {"$eq": "alice"}, "team": {"$contains": ["red", "blue"]}})
    assert both.matches({"owner": "alice", "team": ["blue", "green", "red"]})
    assert not both.matches({"owner": "alice", "team": ["blue"]})
    assert not both.matches({"owner": "bob", "team": ["blue", "red"]})
    assert not both.matches({"owner": "alice", "team": "red blue"})
    one = Filter.of({"team": {"$contains": "red"}, "level": 1})
    assert one.matches({"team": ["red"], "level": 1})
    assert not one.matches({"team": ["red"], "level": True})
    assert not one.matches({"team": ["red"]})
    assert Filter.of({"owner": "alice"}).stamped({"k": 1}) == {"k": 1, "owner": "alice"}


class Member:
    """A user object of the caller's own, as `authenticate` may return."""

    identity = "carol"
    permissions = ("read",)
    team = "red"


@pytest.mark.parametrize(
    ("returned", "identity", "permissions", "extra"),
    [
        ("dave", "dave", (), None),
        ({"identity": "erin", "permissions": ["a"], "team": "blue"}, "erin", ("a",), "blue"),
        (Member(), "carol", ("read",), "red"),
    ],
)
def test_users_are_a_string_a_dict_or_an_object(
    returned: Any, identity: str, permissions: tuple[str, ...], extra: str | None
) -> None:
    user = AuthUser.of(returned)
    assert (user.identity, user["identity"], user.permissions) == (identity, identity, permissions)
    assert user.display_name == identity
    assert user.is_authenticated
    if extra is not None:
        assert (user.team, user["team"], "team" in user) == (extra, extra, True)
    assert "nothing" not in user


@pytest.mark.parametrize("returned", [None, {"name": "no identity"}, 42])
def test_a_user_without_an_identity_is_refused(returned: Any) -> None:
    with pytest.raises(Refused) as refused:
        AuthUser.of(returned)
    assert refused.value.status == 500


def test_an_authenticate_function_asks_only_for_what_the_server_gives() -> None:
    auth = Auth()

    @auth.authenticate
    async def authenticate(headers: dict[bytes, bytes], session: str) -> str:
        return "x"

    with pytest.raises(UsageError, match="asks for 'session'"):
        Access(auth)
    with pytest.raises(UsageError, match=r"langgraph_sdk\.Auth"):
        Access(object())


async def test_authenticate_is_given_what_it_names(tmp_path: Path) -> None:
    auth = Auth()
    given: list[Any] = []

    @auth.authenticate
    async def authenticate(
        request: Any,
        body: Any,
        path: str,
        method: str,
        path_params: dict[str, str],
        query_params: dict[str, str],
        headers: dict[bytes, bytes],
        authorization: str | None,
    ) -> Auth.types.MinimalUserDict:
        given.append((body, path, method, path_params, query_params, authorization))
        if authorization != "Bearer good":
            raise Auth.exceptions.HTTPException(headers={"WWW-Authenticate": "Bearer"})
        return {"identity": headers[b"x-user"].decode()}

    with serving(tmp_path, auth=auth) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            tid = "7b4ad46e-3b35-4a47-9d3a-0c0b8f9f2a10"
            made = await client.post(
                "/threads?x=1",
                json={"thread_id": tid, "metadata": {"m": 1}},
                headers={"authorization": "Bearer good", "x-user": "frank"},
            )
            assert made.status_code == 200, made.text
            assert made.json()["metadata"] == {"m": 1}  # the body reached the route too
            got = await client.get(f"/threads/{tid}", headers={"authorization": "Bearer bad"})
            assert (got.status_code, got.json()) == (401, {"detail": "Unauthorized"})
            assert got.headers["www-authenticate"] == "Bearer"
    assert given == [
        (
            {"thread_id": tid, "metadata": {"m": 1}},
            "/threads",
            "POST",
            {},
            {"x": "1"},
            "Bearer good",
        ),
        (None, f"/threads/{tid}", "GET", {"thread_id": tid}, {}, "Bearer bad"),
    ]


ROWS = [
    {},
    {"owner": "alice"},
    {"owner": "bob", "team": ["red", "blue"]},
    {"owner": "alice", "team": ["red"], "level": 1},
    {"owner": "alice", "team": "red", "level": 1.0},
    {"owner": ["alice"], "level": True, "gone": None},
    {"owner": "alice's", "team": [["red"], 1, True], "level": "1"},
    {"team": ["blue", "red", "red"], "nested": {"owner": "alice"}},
]
FILTERS = [
    {"owner": "alice"},
    {"owner": {"$eq": "alice's"}},
    {"team": {"$contains": "red"}},
    {"team": {"$contains": ["red", "blue"]}},
    {"team": {"$contains": []}},  # holds a list, whatever is in it: not every row
    {"team": {"$contains": 1}},
    {"team": {"$contains": True}},
    {"level": 1},
    {"level": True},
    {"level": "1"},
    {"gone": None},
    {"owner": "alice", "team": {"$contains": "red"}},
    {"nested": "alice"},
]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_search_filters_in_sql_as_a_lookup_does(kind: str, tmp_path: Path, request: Any) -> None:
    from agentgraph.server._queue import RunQueue
    from tests.pg_server import drop_schema, fresh_schema

    if kind == "sqlite":
        where, schema = str(tmp_path / "server.db"), "agentgraph"
    else:
        where, schema = request.getfixturevalue("postgres_server").dsn, fresh_schema()
    queue = RunQueue(where, schema=schema)
    try:
        ids = [str(uuid.uuid4()) for _ in ROWS]
        for thread_id, metadata in zip(ids, ROWS, strict=True):
            queue.put_thread(thread_id, metadata, replace=False)
        for given in FILTERS:
            chosen = Filter.of(given)
            only = chosen.sql("metadata", postgres=queue.postgres)
            found = {t.thread_id for t in queue.threads(limit=-1, offset=0, only=only)}
            expected = {t for t, m in zip(ids, ROWS, strict=True) if chosen.matches(m)}
            assert found == expected, given
            assert expected or given == {"nested": "alice"}, given
    finally:
        queue.close()
        if kind == "postgresql":
            drop_schema(where, schema)


async def test_a_filter_returned_on_create_is_stamped_and_an_update_cannot_leave_it(
    tmp_path: Path,
) -> None:
    auth = Auth()

    @auth.authenticate
    async def authenticate(headers: dict[bytes, bytes]) -> Auth.types.MinimalUserDict:
        return {"identity": headers[b"x-user"].decode()}

    @auth.on
    async def owned(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
        return {"owner": ctx.user.identity}  # filters only: writes no metadata itself

    with serving(tmp_path, auth=auth) as url:
        alice = httpx.AsyncClient(base_url=url, headers={"x-user": "alice"})
        bob = httpx.AsyncClient(base_url=url, headers={"x-user": "bob"})
        async with alice, bob:
            # Metadata naming another owner is not planted in their searches.
            made = await alice.post("/threads", json={"metadata": {"owner": "bob"}})
            thread = made.json()
            assert thread["metadata"] == {"owner": "alice"}
            assert (await bob.post("/threads/search", json={})).json() == []
            tid = thread["thread_id"]
            moved = await alice.patch(f"/threads/{tid}", json={"metadata": {"owner": "bob"}})
            assert moved.status_code == 403
            kept = await alice.patch(f"/threads/{tid}", json={"metadata": {"k": 1}})
            assert kept.json()["metadata"] == {"owner": "alice", "k": 1}
            copy = (await alice.post(f"/threads/{tid}/copy")).json()
            assert copy["metadata"]["owner"] == "alice"

            body = {"graph_id": "echo", "metadata": {"owner": "bob"}}
            assistant = (await alice.post("/assistants", json=body)).json()
            assert assistant["metadata"] == {"owner": "alice"}
            aid = assistant["assistant_id"]
            assert (await bob.post("/assistants/search", json={})).json() == []
            moved = await alice.patch(f"/assistants/{aid}", json={"metadata": {"owner": "bob"}})
            assert moved.status_code == 403
            assert (await alice.get(f"/assistants/{aid}")).json()["metadata"]["owner"] == "alice"
