"""Every effect goes through the runtime, one run id everywhere, and one graph loop."""

import ast
from collections import Counter
from pathlib import Path

import attrs
import orjson
import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    ReplayDiverged,
    RunHandle,
    RunStarted,
    generable,
    generate,
    node,
    tool,
)
from agentgraph.checkpoint import MemoryStore, SQLiteStore, StoreBase
from agentgraph.nodes import chat, react_agent, retrieve, tool_use
from agentgraph.rag import Document, NumpyStore, ingest
from agentgraph.testing import ScriptedModel
from agentgraph.tracing import JsonlSink, OtelSink
from tests.helpers import chain
from tests.rag.support import WordEmbedder

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2] / "agentgraph"


@generable
@attrs.frozen
class Verdict:
    city: str
    rain: bool


class Counted:
    """Counts calls of every model, embedder and tool a graph holds."""

    def __init__(self) -> None:
        self.tools = Counter[str]()

        @tool
        def forecast(city: str) -> str:
            """Tomorrow's weather in a city."""
            self.tools[city] += 1
            return f"{city}: rain"

        self.forecast = forecast
        self.embedder = WordEmbedder()
        self.first = ScriptedModel(ScriptedModel.tool_call("forecast", city="Oslo"))
        self.agent = ScriptedModel(
            ScriptedModel.tool_call("forecast", city="Bergen"), "Rain in both."
        )
        self.extract = ScriptedModel('{"city": "Oslo", "rain": true}', chunk_size=5)

    def calls(self) -> tuple[int, int, int, int, int]:
        return (
            len(self.first.requests),
            len(self.agent.requests),
            len(self.extract.requests),
            len(self.embedder.calls),
            sum(self.tools.values()),
        )


async def every_kind_of_effect(counted: Counted):
    """A graph with retrieve, chat, tool_use, react_agent and a streamed generate."""
    store = NumpyStore()
    docs = [Document("oslo", "Oslo is rainy in autumn."), Document("bergen", "Bergen too.")]
    await ingest(docs, embedder=WordEmbedder(), store=store)
    find = retrieve(counted.embedder, store, k=1)
    ask = chat(counted.first, name="ask", tools=[counted.forecast.spec])
    run_tools = tool_use([counted.forecast], name="run_tools")
    agent = react_agent(counted.agent, [counted.forecast], name="agent")
    extract = generate(
        Verdict, instruction="Extract the verdict.", model=counted.extract, stream=True
    )

    with GraphBuilder[str, Verdict]("weather") as g:
        g.start.edge_to(find).edge_to(agent)
        agent.edge_to(lambda ctx: ask, targets=(ask,))
        ask.edge_to(run_tools).edge_to(extract).edge_to(g.finish)
    return g.build()


async def test_a_replay_calls_no_model_embedder_or_tool(store_kind, tmp_path):
    store = MemoryStore() if store_kind == "memory" else SQLiteStore(tmp_path / "r.db")
    counted = Counted()
    graph = await every_kind_of_effect(counted)
    handle = RunHandle()
    ctx = AgentContext("Rain in Oslo and Bergen?")
    out = await GraphRunner().run(graph, ctx, store=store, handle=handle)
    assert out.input == Verdict("Oslo", True)
    before = counted.calls()
    assert before == (1, 2, 1, 1, 2)
    replayed = await GraphRunner().replay(graph, handle.run_id, store)
    assert replayed == out
    assert counted.calls() == before
    if isinstance(store, SQLiteStore):
        await store.aclose()


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request):
    return request.param


async def test_a_streamed_generate_is_served_from_the_record_on_resume():
    model = ScriptedModel('{"city": "Oslo", "rain": true}', chunk_size=3)
    extract = generate(Verdict, instruction="Extract.", model=model, stream=True)
    crashed = Counter[str]()

    class Crash(Exception):
        pass

    @node
    async def boom(ctx):
        crashed["n"] += 1
        if crashed["n"] == 1:
            raise Crash
        return ctx

    with GraphBuilder[str, Verdict]("g") as g:
        g.start.edge_to(extract).edge_to(boom).edge_to(g.finish)
    graph = g.build()
    store = MemoryStore()
    handle = RunHandle()
    with pytest.raises(Exception, match="boom"):
        await GraphRunner().run(graph, AgentContext("Oslo rain"), store=store, handle=handle)
    out = await GraphRunner().resume(graph, handle.run_id, store)
    assert out.input == Verdict("Oslo", True)
    assert len(model.requests) == 1


async def test_a_record_without_an_embedding_fails_the_replay_instead_of_embedding():
    """A record made before embeddings were recorded: the replay says what is missing."""
    counted = Counted()
    store = NumpyStore()
    await ingest([Document("oslo", "Oslo is rainy.")], embedder=WordEmbedder(), store=store)
    find = retrieve(counted.embedder, store, k=1)
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(find).edge_to(g.finish)
    graph = g.build()
    records = MemoryStore()
    handle = RunHandle()
    await GraphRunner().run(graph, AgentContext("Oslo?"), store=records, handle=handle)
    # Forget the recorded embedding, as a record written by an older version would.
    log = records._effects[handle.run_id]
    for key in [k for k in log if k[0].endswith(":embed")]:
        del log[key]
    with pytest.raises(ReplayDiverged, match="embed"):
        await GraphRunner().replay(graph, handle.run_id, records)
    assert len(counted.embedder.calls) == 1


async def test_one_run_id_for_the_handle_the_store_and_every_sink(tmp_path):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    counted = Counted()
    agent = react_agent(counted.agent, [counted.forecast])
    trace = tmp_path / "run.jsonl"
    started: list[str] = []

    def on_event(event):
        if isinstance(event, RunStarted):
            started.append(event.run_id)

    with JsonlSink(trace) as jsonl:
        async with SQLiteStore(tmp_path / "runs.db") as store:
            runner = GraphRunner(sinks=[jsonl, OtelSink(provider), on_event])
            handle = RunHandle()
            await runner.run(agent, AgentContext("Bergen?"), store=store, handle=handle)
            assert await store.run_ids() == (handle.run_id,)
    records = [orjson.loads(line) for line in trace.read_bytes().splitlines()]
    assert {r["run"] for r in records} == {handle.run_id}
    runs = {
        s.attributes["agentgraph.run.id"]
        for s in exporter.get_finished_spans()
        if s.attributes and "agentgraph.run.id" in s.attributes
    }
    assert runs == {handle.run_id}
    assert started == [handle.run_id]


async def test_a_given_run_id_is_used_without_a_store_too():
    seen: list[str] = []
    runner = GraphRunner(
        sinks=[lambda e: seen.append(e.run_id) if isinstance(e, RunStarted) else 0]
    )
    handle = RunHandle()
    agent = chain("g", echo)
    await runner.run(agent, AgentContext("x"), handle=handle, run_id="run-7")
    assert seen == ["run-7"] and handle.run_id == "run-7"
    await runner.run(agent, AgentContext("x"), handle=handle)
    assert len(seen[1]) == 32 and handle.run_id == seen[1]


async def test_a_store_without_the_journal_methods_says_what_to_add():
    class OldStore:
        def write(self, records):
            pass

        async def flush(self, run_id=None):
            pass

        async def load(self, run_id):
            return None

        async def aclose(self):
            pass

    agent = chain("g", echo)
    with pytest.raises(TypeError, match=r"Subclass agentgraph\.checkpoint\.StoreBase"):
        await GraphRunner().run(agent, AgentContext("x"), store=OldStore())

    class Upgraded(StoreBase, OldStore):
        pass

    # The four storage methods are all it takes once the base class is there.
    with pytest.raises(Exception, match="no run"):
        await GraphRunner().resume(agent, "nope", Upgraded())


def test_the_runner_is_frozen_and_evolves():
    runner = GraphRunner(max_steps=10)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        runner.on_step = print  # type: ignore[misc]
    calls: list[int] = []
    changed = runner.evolve(on_step=lambda step, node, ctx: calls.append(step.index))
    assert changed.max_steps == 10 and runner.on_step == () and len(changed.on_step) == 1
    agent = chain("g", echo)
    changed.run_sync(agent, AgentContext("x"))
    assert calls


@node
def echo(ctx):
    return ctx


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    tree = ast.parse(path.read_text())
    package = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
    for item in ast.walk(tree):
        if isinstance(item, ast.ImportFrom):
            base = package.split(".")
            if item.level:
                base = base[: len(base) - item.level + 1]
                module = ".".join([*base, item.module] if item.module else base)
            else:
                module = item.module or ""
            names.add(module)
            names.update(f"{module}.{a.name}" for a in item.names)
        elif isinstance(item, ast.Import):
            names.update(a.name for a in item.names)
    return names


def test_nothing_below_checkpoint_imports_it():
    below = [
        p
        for p in ROOT.rglob("*.py")
        if p.parent == ROOT or p.parent.name in ("nodes", "llm", "tools", "structured")
    ]
    assert len(below) > 40
    offenders = {
        str(p.relative_to(ROOT)): sorted(n for n in _imports(p) if "agentgraph.checkpoint" in n)
        for p in below
        # the command line (`_cli*.py`) is the top layer, whatever folder it sits in
        if p.name != "__init__.py" and not p.name.startswith("_cli")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_there_is_one_graph_loop():
    loops = [
        str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if "graph.route(" in p.read_text()
    ]
    assert loops == ["_core/_runtime.py"]
