"""Stored data never chooses which code runs: tags decode only into registered types."""

import enum
import sqlite3
import sys

import attrs
import orjson
import pytest

from agentgraph import (
    AgentContext,
    ContextDecodingError,
    ContextEncodingError,
    GraphBuilder,
    GraphRunner,
    Message,
    NodeFailed,
    RunHandle,
    Types,
    generable,
    generate,
    node,
)
from agentgraph.checkpoint import SQLiteStore
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio

HOSTILE = "tests.trust.hostile_module"
TAGS = [
    ("$type", "subprocess:Popen"),
    ("$type", "os:system"),
    ("$type", "builtins:eval"),
    ("$type", "importlib:import_module"),
    ("$type", f"{HOSTILE}:Payload"),
    ("$enum", f"{HOSTILE}:Payload"),
    ("$enum", "subprocess:Popen"),
]


@pytest.fixture
def sentinel(tmp_path, monkeypatch):
    path = tmp_path / "sentinel"
    monkeypatch.setenv("AGENTGRAPH_HOSTILE_SENTINEL", str(path))
    monkeypatch.delitem(sys.modules, HOSTILE, raising=False)
    yield path
    assert not path.exists(), "hostile data ran code"
    assert HOSTILE not in sys.modules, "hostile data imported a module"


def hostile(kind: str, tag: str, sentinel) -> dict:
    if kind == "$enum":
        return {"$enum": tag, "value": ["touch", str(sentinel)]}
    return {"$type": tag, "args": ["touch", str(sentinel)], "source": "print(1)"}


def context_json(where: str, payload: dict) -> bytes:
    data = orjson.loads(AgentContext("x").append(Message.user("hi")).to_json())
    if where == "input":
        data["input"] = payload
    elif where == "state":
        data["state"] = {"key": payload}
    else:  # a message of the history
        data["history"][0] = payload
    return orjson.dumps(data)


@pytest.mark.parametrize(("kind", "tag"), TAGS)
@pytest.mark.parametrize("where", ["input", "state", "history"])
def test_a_context_naming_foreign_code_is_refused(kind, tag, where, sentinel):
    with pytest.raises(ContextDecodingError, match=tag):
        AgentContext.from_json(context_json(where, hostile(kind, tag, sentinel)))


@pytest.mark.parametrize(("kind", "tag"), TAGS)
async def test_an_edited_checkpoint_naming_foreign_code_is_refused_on_resume(
    kind, tag, sentinel, tmp_path
):
    crash = {"on": True}

    class Crash(BaseException):
        pass

    @node
    def step(ctx):
        if crash["on"]:
            raise Crash
        return ctx

    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(step).edge_to(g.finish)
    graph = g.build()
    db = tmp_path / "runs.db"
    async with SQLiteStore(db) as store:
        with pytest.raises(Crash):
            await GraphRunner().run(graph, AgentContext("x"), store=store, run_id="r")
    edited = orjson.dumps({"H": [], "i": hostile(kind, tag, sentinel)})
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET context = ? WHERE run_id = 'r'", (edited,))
    crash["on"] = False
    async with SQLiteStore(db) as store:
        with pytest.raises(ContextDecodingError, match=tag):
            await GraphRunner().resume(graph, "r", store)


def test_stored_names_are_public_and_stable():
    ctx = AgentContext("x", state={"m": Message.user("hi")})
    text = ctx.to_json().decode()
    assert '"agentgraph:AgentContext"' in text and '"agentgraph:Message"' in text
    assert "agentgraph._" not in text and "agentgraph.llm" not in text


def test_records_written_with_private_module_paths_still_load():
    old = (
        b'{"$type": "agentgraph._context:AgentContext", "input": {"$type": '
        b'"agentgraph.llm._messages:Message", "role": "user", "content": "hi"}}'
    )
    back = AgentContext.from_json(old)
    assert back.input == Message.user("hi")


def test_every_path_records_named_before_the_stable_names_resolves_to_its_class():
    import agentgraph.mcp
    import agentgraph.nodes  # each feature's types take their stable names as it loads
    from agentgraph._core._json_types import _LEGACY

    assert agentgraph.mcp.Elicitation and agentgraph.nodes.Source
    for old, stable in _LEGACY.items():
        cls = Types().resolve(old)
        assert cls is not None, old
        assert cls is Types().resolve(stable)
        assert cls.__qualname__ == old.partition(":")[2] == stable.partition(":")[2]


def test_a_feature_type_named_before_its_feature_loaded_says_what_to_import():
    import subprocess

    code = (
        "import sys, agentgraph\n"
        "try:\n"
        '    old = b\'{"$type": "agentgraph.nodes._retrieve:Source"}\'\n'
        "    agentgraph.AgentContext.from_json(old)\n"
        "except agentgraph.ContextDecodingError as error:\n"
        "    print(error)\n"
        "print('agentgraph.nodes' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert out == [
        "cannot rebuild a context from this data: the data names type "
        "'agentgraph.nodes._retrieve:Source', defined in agentgraph.nodes, which has not "
        "been imported: import agentgraph.nodes before decoding",
        "False",
    ]


class Tone(enum.Enum):
    CALM = "calm"


@attrs.frozen
class Ticket:
    title: str
    tone: Tone = Tone.CALM


def test_registered_classes_decode_with_their_fields_checked():
    data = AgentContext(Ticket("help")).to_json()
    with pytest.raises(ContextDecodingError, match="Ticket"):
        AgentContext.from_json(data)
    types = Types.of(Ticket)  # Tone comes along: Ticket's field holds it
    assert AgentContext.from_json(data, types=types).input == Ticket("help")
    extra = data.replace(b'"title"', b'"__class__": 1, "title"')
    with pytest.raises(ContextDecodingError, match="no field '__class__'"):
        AgentContext.from_json(extra, types=types)
    with pytest.raises(ContextDecodingError, match="not a context"):
        AgentContext.from_json(b'{"$tuple": [1]}')


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_one_nesting_limit_for_encoding_and_decoding():
    at_limit = AgentContext(nested(99))
    assert AgentContext.from_json(at_limit.to_json()) == at_limit
    with pytest.raises(ContextEncodingError, match="deeper than 100 levels"):
        AgentContext(nested(300)).to_json()
    deep = b'{"$type": "agentgraph:AgentContext", "input": ' + b"[" * 600 + b"]" * 600 + b"}"
    with pytest.raises(ContextDecodingError, match="deeper than 100 levels"):
        AgentContext.from_json(deep)


async def test_a_deep_output_in_a_checkpointed_run_fails_its_step_naming_the_path(tmp_path):
    @node
    def deep(ctx):
        return ctx.with_state(tree=nested(300))

    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(deep).edge_to(g.finish)
    async with SQLiteStore(tmp_path / "d.db") as store:
        with pytest.raises(NodeFailed) as failed:
            await GraphRunner().run(g.build(), AgentContext("x"), store=store)
    assert isinstance(failed.value.error, ContextEncodingError)
    assert failed.value.path == ("g", "deep") and "state['tree']" in str(failed.value)


@generable
@attrs.frozen
class Verdict:
    ok: bool
    ticket: Ticket


async def test_resume_allows_the_types_the_graph_declares():
    crash = {"on": True}

    class Crash(BaseException):
        pass

    @node
    def stop(ctx):
        if crash["on"]:
            raise Crash
        return ctx

    model = ScriptedModel('{"ok": true, "ticket": {"title": "t", "tone": "calm"}}')
    judge = generate(Verdict, instruction="Judge.", model=model)
    with GraphBuilder[str, Verdict]("g") as g:
        g.start.edge_to(judge).edge_to(stop).edge_to(g.finish)
    graph = g.build()
    assert set(graph.data_types()) == {Verdict}
    from agentgraph.checkpoint import MemoryStore

    store = MemoryStore()
    handle = RunHandle()
    with pytest.raises(Crash):
        await GraphRunner().run(graph, AgentContext("x"), store=store, handle=handle)
    crash["on"] = False
    out = await GraphRunner().resume(graph, handle.run_id, store)
    assert out.input == Verdict(True, Ticket("t"))


async def test_state_classes_are_declared_on_the_builder_or_the_runner():
    crash = {"on": True}

    class Crash(BaseException):
        pass

    @node
    def put(ctx):
        return ctx.with_state(ticket=Ticket("t"))

    @node
    def stop(ctx):
        if crash["on"]:
            raise Crash
        return ctx

    def build(types=()):
        with GraphBuilder[str, str]("g", types=types) as g:
            g.start.edge_to(put).edge_to(stop).edge_to(g.finish)
        return g.build()

    from agentgraph.checkpoint import MemoryStore

    store = MemoryStore()
    with pytest.raises(Crash):
        await GraphRunner().run(build(), AgentContext("x"), store=store, run_id="r")
    crash["on"] = False
    with pytest.raises(ContextDecodingError, match="Ticket"):
        await GraphRunner().resume(build(), "r", store)
    runner = GraphRunner(types=Types.of(Ticket))
    assert (await runner.resume(build(), "r", store)).state["ticket"] == Ticket("t")
    with pytest.raises(Crash):
        crash["on"] = True
        await GraphRunner().run(build(), AgentContext("x"), store=store, run_id="r2")
    crash["on"] = False
    assert (await GraphRunner().resume(build([Ticket]), "r2", store)).state["ticket"]
