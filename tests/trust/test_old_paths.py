"""What earlier releases stored by module path still loads after the modules moved.

Pickles name classes and functions by their modules, and records written before
the stable names (`agentgraph:Message`) name agentgraph's types by
`module:qualname`: the private modules those name, once at the package's root,
now live in `_core/`, `_util/` and `_cli/`.
"""

import importlib
import pickle
import sqlite3

import orjson
import pytest

import agentgraph
from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    Message,
    NodeFailed,
    Price,
    Settings,
    Types,
    node,
)
from agentgraph._core._json_types import _qualname
from agentgraph._util._moved import MOVED
from agentgraph.checkpoint import SQLiteStore

pytestmark = pytest.mark.anyio

OLD_CONTEXT = {
    "$type": "agentgraph._context:AgentContext",
    "input": {"$type": "agentgraph.llm._messages:Message", "role": "user", "content": "hi"},
    "settings": {"$type": "agentgraph._context:Settings", "model": "m"},
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_old_module_path_imports_the_module_now_elsewhere(old):
    assert importlib.import_module(old) is importlib.import_module(MOVED[old])


def test_a_pickle_naming_the_old_private_modules_loads():
    ctx = AgentContext("x", settings=Settings(model="m"))
    error = NodeFailed(context=ctx, step=3, path=("g", "n"), attempts=1, error=ValueError("boom"))
    for value, public, old in (
        (ctx, b"cagentgraph\nAgentContext\n", b"cagentgraph._context\nAgentContext\n"),
        (
            error,
            b"cagentgraph._core._errors_root\n_rebuild\n",
            b"cagentgraph._errors_root\n_rebuild\n",
        ),
    ):
        data = pickle.dumps(value, protocol=0)
        assert public in data
        back = pickle.loads(data.replace(public, old))
        assert type(back) is type(value)
        assert back.context == ctx if isinstance(value, NodeFailed) else back == value


def test_a_temporal_payload_naming_the_old_paths_decodes():
    from temporalio.api.common.v1 import Payload

    from agentgraph.temporal import ContextPayloadConverter

    payload = Payload(metadata={"encoding": b"json/agentgraph"}, data=orjson.dumps(OLD_CONTEXT))
    ctx = ContextPayloadConverter().from_payload(payload)
    assert ctx == AgentContext(Message.user("hi"), settings=Settings(model="m"))


async def test_a_sqlite_record_naming_the_old_paths_resumes(tmp_path):
    crash = {"on": True}

    class Crash(BaseException):
        pass

    @node
    def step(ctx):
        if crash["on"]:
            raise Crash
        return ctx.with_input(ctx.input.content.upper())

    with GraphBuilder[Message, str]("g") as g:
        g.start.edge_to(step).edge_to(g.finish)
    graph = g.build()
    db = tmp_path / "runs.db"
    async with SQLiteStore(db) as store:
        with pytest.raises(Crash):
            await GraphRunner().run(graph, AgentContext(Message.user("x")), store=store, run_id="r")
    # The run's first context as an earlier release wrote it: private module paths.
    with sqlite3.connect(db) as conn:
        (stored,) = conn.execute("SELECT context FROM runs WHERE run_id = 'r'").fetchone()
        data = orjson.loads(stored)
        data["i"] = OLD_CONTEXT["input"]
        conn.execute("UPDATE runs SET context = ? WHERE run_id = 'r'", (orjson.dumps(data),))
    crash["on"] = False
    async with SQLiteStore(db) as store:
        out = await GraphRunner().resume(graph, "r", store)
    assert out.input == "HI"


def test_agentgraph_types_without_a_stable_name_are_stored_under_their_old_paths():
    # So records written now load in earlier releases; both names load here.
    assert _qualname(Price) == "agentgraph._usage:Price"
    types = Types.of(Price)
    assert types.resolve("agentgraph._usage:Price") is Price
    assert types.resolve("agentgraph._core._usage:Price") is Price
    price = Price(1.0, 2.0)
    assert AgentContext.from_json(AgentContext(price).to_json(), types=types).input == price
    assert agentgraph.Price is Price
