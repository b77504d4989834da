import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("numpy", reason="the `rag` extra (numpy) is not installed")

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    Message,
    NodeFailed,
    Retrieved,
    RetrievedSource,
    node,
)
from agentgraph.nodes import Source, format_sources, react_agent, retrieve
from agentgraph.rag import Document, Hit, NumpyStore, Record, ingest
from agentgraph.testing import ScriptedModel

from .support import WordEmbedder, run_node, word_vector

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
PASSAGES = {
    "retry.md": "The runner retries failed nodes with backoff and jitter.",
    "store.md": "The store writes a temporary file and renames it, so a crash keeps the old file.",
    "tools.md": "Tool calls run concurrently and their results keep the call order.",
}


async def docs_store() -> NumpyStore:
    store = NumpyStore()
    documents = [Document(name, text) for name, text in PASSAGES.items()]
    await ingest(documents, embedder=WordEmbedder(), store=store)
    return store


async def test_hits_go_into_state_as_labelled_sources_and_the_trace():
    store = await docs_store()
    events: list[Any] = []
    ctx = AgentContext("does a crash keep the old file", history=(Message.user("hi"),))
    out = await run_node(retrieve(WordEmbedder(), store, k=2), ctx, events)
    assert out.input == ctx.input and out.history == ctx.history
    sources = out.state["sources"]
    assert [s.label for s in sources] == ["[1] store.md", sources[1].label]
    assert sources[0].text == PASSAGES["store.md"] and not sources[0].clipped
    assert sources[0].metadata["source"] == "store.md" and 0 < sources[0].score <= 1
    assert len(sources) == 2
    (found,) = [e for e in events if isinstance(e, Retrieved)]
    assert found.query == ctx.input and found.k == 2 and found.max_chars == 4000
    assert [e.id for e in found.sources] == [s.id for s in sources]
    assert found.sources[0] == RetrievedSource(
        "[1] store.md",
        sources[0].id,
        sources[0].score,
        len(PASSAGES["store.md"]),
        len(PASSAGES["store.md"]),
        False,
    )
    assert format_sources(sources).startswith(f"[1] store.md\n{PASSAGES['store.md']}\n\n[2] ")


async def test_the_budget_clips_at_a_word_and_leaves_out_the_rest():
    store = NumpyStore()
    await store.add(
        [
            Record("one", word_vector("alpha"), "alpha " * 10, {"source": "a"}),
            Record("two", word_vector("alpha beta"), "beta words here " * 5, {"source": "b"}),
            Record("three", word_vector("gamma"), "gamma", {"source": "c"}),
        ]
    )
    events: list[Any] = []
    out = await run_node(
        retrieve(WordEmbedder(), store, k=3, max_chars=90), AgentContext("alpha"), events
    )
    first, second = out.state["sources"]
    assert first.text == "alpha " * 10 and not first.clipped
    assert second.clipped and len(second.text) <= 30 and second.text.endswith("words")
    entries = next(e for e in events if isinstance(e, Retrieved)).sources
    assert [(e.id, e.chars, e.shown, e.clipped) for e in entries] == [
        ("one", 60, 60, False),
        ("two", 80, len(second.text), True),
        ("three", 5, 0, True),
    ]


async def test_a_token_budget_uses_the_counter():
    store = await docs_store()
    words = lambda text: len(text.split())  # noqa: E731
    out = await run_node(
        retrieve(WordEmbedder(), store, k=3, max_chars=None, max_tokens=12, count=words),
        AgentContext("runner retries failed nodes"),
    )
    sources = out.state["sources"]
    assert sum(words(s.text) for s in sources) <= 12
    assert sources[0].text == PASSAGES["retry.md"] and sources[-1].clipped


async def test_query_function_filters_min_score_and_custom_labels():
    store = await docs_store()
    embedder = WordEmbedder()
    step = retrieve(
        embedder,
        store,
        query=lambda ctx: ctx.state["question"],
        where={"source": "tools.md"},
        label=lambda n, hit: f"S{n}:{hit.metadata['index']}",
        key="docs",
    )
    out = await run_node(step, AgentContext(42, state={"question": "tool call order"}))
    assert [s.label for s in out.state["docs"]] == ["S1:0"]
    assert embedder.calls == [["tool call order"]]
    strict = retrieve(WordEmbedder(), store, k=3, min_score=0.99)
    out = await run_node(strict, AgentContext("retries"))
    assert out.state["sources"] == ()


async def test_a_message_input_is_its_text_and_a_blank_query_retrieves_nothing():
    store = await docs_store()
    embedder = WordEmbedder()
    out = await run_node(retrieve(embedder, store), AgentContext(Message.user("tool call order")))
    assert out.state["sources"][0].label == "[1] tools.md"
    events: list[Any] = []
    out = await run_node(retrieve(embedder, store), AgentContext("   "), events)
    assert out.state["sources"] == () and len(embedder.calls) == 1
    assert next(e for e in events if isinstance(e, Retrieved)).sources == ()


async def test_an_input_without_a_query_is_a_clear_node_failure():
    with pytest.raises(NodeFailed) as caught:
        await run_node(retrieve(WordEmbedder(), NumpyStore()), AgentContext(42))
    assert isinstance(caught.value.__cause__, TypeError)
    assert "query=lambda ctx" in str(caught.value.__cause__)
    bad = retrieve(WordEmbedder(), NumpyStore(), query=lambda ctx: 7)
    with pytest.raises(NodeFailed, match="not a str"):
        await run_node(bad, AgentContext("x"))


@pytest.mark.parametrize(
    ("options", "message"),
    [({"k": 0}, "k must"), ({"max_chars": -1}, "max_chars"), ({"max_tokens": 1.5}, "max_tokens")],
)
def test_bad_options(options, message):
    with pytest.raises(ValueError, match=message):
        retrieve(WordEmbedder(), NumpyStore(), **options)


async def test_sources_survive_a_checkpoint_round_trip():
    out = await run_node(retrieve(WordEmbedder(), await docs_store()), AgentContext("crash"))
    back = AgentContext.from_json(out.to_json())
    assert back.state["sources"] == out.state["sources"]
    assert isinstance(back.state["sources"][0], Source)


async def test_any_vector_store_will_do():
    class OneHit:
        dimensions = 2

        async def search(self, vector, *, k=4, where=None):
            return [Hit("h1", 0.5, "from elsewhere", {"source": "remote"})]

    out = await run_node(retrieve(WordEmbedder(), OneHit()), AgentContext("q"))  # type: ignore[arg-type]
    assert out.state["sources"][0].label == "[1] remote"


async def test_retrieve_in_front_of_a_react_agent():
    store = await docs_store()
    find = retrieve(WordEmbedder(), store, k=1)

    @node
    def present(ctx: AgentContext[str]) -> AgentContext[str]:
        sources = format_sources(ctx.state["sources"])
        return ctx.evolve(system_prompt=f"Answer from the sources.\n\n{sources}")

    model = ScriptedModel("The old file survives [1].")
    agent = react_agent(model, [])
    with GraphBuilder[str, str]("rag") as g:
        g.start.edge_to(find).edge_to(present).edge_to(agent).edge_to(g.finish)
    out = await GraphRunner().run(g.build(), AgentContext("what survives a crash"))
    assert out.input == "The old file survives [1]."
    system = model.requests[0].messages[0]
    assert system.role == "system" and "[1] store.md" in system.content


def test_importing_agentgraph_does_not_import_numpy():
    code = (
        "import sys, agentgraph, agentgraph.nodes, agentgraph.llm; "
        "assert 'numpy' not in sys.modules, 'numpy was imported'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
