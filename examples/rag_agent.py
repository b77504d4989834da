"""Questions about agentgraph answered from its own documentation, offline.

The README and the docstrings of the core, node and RAG APIs are cut into chunks, embedded
with the local all-MiniLM-L6-v2 model (no network) and kept in a `NumpyStore`
file. Each question then runs through a graph: `retrieve` puts the best
passages into the context, a small node of ours presents them in the system
prompt, and `react_agent` answers, with a `search_docs` tool for more.

Model choice, in order: `AGENTGRAPH_MODEL` (e.g. `ollama:qwen2.5:7b`), an
Ollama server on `OLLAMA_HOST`, `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, and
otherwise an offline model that answers with the source sentence closest to
the question. It prints which one it used.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import tempfile
from pathlib import Path
from time import perf_counter
from typing import Any

import anyio

from agentgraph import AgentContext, Graph, GraphBuilder, GraphRunner, Tool, node, tool
from agentgraph.llm import ChatModel, ChatRequest, model_from_string
from agentgraph.nodes import format_sources, react_agent, retrieve
from agentgraph.rag import Document, Embedder, LocalEmbedder, NumpyStore, VectorStore, ingest
from agentgraph.testing import ScriptedModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from react_agent import local_ollama_model

ROOT = Path(__file__).resolve().parent.parent

QUESTIONS = (
    "What does the summarize node do with an assistant tool call and its tool results?",
    "What happens to the vector store file when the process crashes during a write?",
    "How do I stream the events of a run as they happen?",
)
INSTRUCTIONS = (
    "Answer the question from the sources below, in one or two sentences, and cite the "
    "label of every source you use. If the sources do not hold the answer, say so."
)


def documentation() -> list[Document]:
    """The README, the documentation's concept and guide pages, and the docstring of every
    public name of the core, nodes and rag packages."""
    import agentgraph
    import agentgraph.nodes
    import agentgraph.rag

    docs = [Document("README.md", (ROOT / "README.md").read_text(encoding="utf-8"))]
    for folder in ("concepts", "guides"):
        for page in sorted((ROOT / "docs" / folder).glob("*.md")):
            docs.append(Document(f"docs/{folder}/{page.name}", page.read_text(encoding="utf-8")))
    seen: set[int] = set()
    for package in (agentgraph, agentgraph.nodes, agentgraph.rag):
        for name in package.__all__:
            obj = getattr(package, name)
            text = inspect.getdoc(obj) if inspect.isclass(obj) or callable(obj) else None
            if text and id(obj) not in seen and obj.__module__.startswith("agentgraph"):
                seen.add(id(obj))
                docs.append(Document(f"{package.__name__}.{name}", f"{name}: {text}"))
    return docs


def docs_tool(embedder: Embedder, store: VectorStore) -> Tool[..., str]:
    @tool
    async def search_docs(query: str) -> str:
        """Search the agentgraph documentation for passages about a topic.

        Args:
            query: what to look for.
        """
        vector = (await embedder.embed([query]))[0]
        hits = await store.search(vector, k=3)
        return "\n\n".join(f"{h.metadata['source']}: {h.text}" for h in hits)

    return search_docs


def rag_agent(model: ChatModel, embedder: Embedder, store: VectorStore) -> Graph[str, str]:
    """retrieve → present → react_agent: an ordinary graph, nothing hidden."""
    find = retrieve(embedder, store, k=3, max_chars=2400)

    @node
    def present(ctx: AgentContext[str]) -> AgentContext[str]:
        sources = format_sources(ctx.state["sources"])
        return ctx.evolve(system_prompt=f"{INSTRUCTIONS}\n\n{sources}")

    agent = react_agent(model, [docs_tool(embedder, store)], max_turns=2)
    with GraphBuilder[str, str]("rag_agent") as g:
        g.start.edge_to(find).edge_to(present).edge_to(agent).edge_to(g.finish)
    return g.build()


_WORD = re.compile(r"[a-z][a-z_]{3,}")
_COMMON = frozenset(("what", "when", "does", "with", "that", "this", "from", "they", "have"))


def _stems(text: str) -> set[str]:
    # Five letters are stem enough to match "crashes" with "crash" in a demo.
    return {w[:5] for w in _WORD.findall(text.lower()) if w not in _COMMON}


def answer_from_sources(request: ChatRequest) -> str:
    """The offline model: the source sentence sharing the most words with the question."""
    wanted = _stems(request.messages[-1].content)
    system = request.messages[0].content
    best, best_label, best_score = "", "", 0
    for block in re.split(r"\n\n(?=\[\d+\] )", system.split("\n\n", 1)[-1]):
        label, _, text = block.partition("\n")
        for paragraph in re.split(r"\n\s*\n", text):
            for sentence in re.split(r"(?<=[.!?])\s+", " ".join(paragraph.split())):
                score = len(wanted & _stems(sentence))
                if score > best_score:
                    best, best_label, best_score = sentence, label.split()[0], score
    if not best:
        return "The sources do not say."
    return f"{best} {best_label}"


async def choose_model() -> tuple[ChatModel, str]:
    spec = os.environ.get("AGENTGRAPH_MODEL") or await local_ollama_model()
    if spec is None and os.environ.get("OPENAI_API_KEY"):
        spec = "openai:gpt-4o-mini"
    if spec is None and os.environ.get("ANTHROPIC_API_KEY"):
        spec = "anthropic:claude-3-5-haiku-latest"
    if spec is None:
        offline = ScriptedModel(*[answer_from_sources] * len(QUESTIONS), name="offline")
        return offline, (
            "the offline model that answers with the source sentence closest to the question "
            "(no real model configured)"
        )
    return model_from_string(spec), f"the real model {spec}"


async def build_store(folder: Path, embedder: LocalEmbedder) -> NumpyStore:
    started = perf_counter()
    await embedder.load()
    print(
        f"Loaded the local all-MiniLM-L6-v2 ({embedder.dimensions} dimensions) "
        f"in {perf_counter() - started:.1f} s."
    )
    docs = documentation()
    path = folder / "docs.vectors"
    started = perf_counter()
    report = await ingest(docs, embedder=embedder, store=await NumpyStore.open(path))
    took = perf_counter() - started
    print(f"Ingested {len(docs)} documents: {report.added} chunks embedded in {took:.1f} s.")
    store = await NumpyStore.open(path)  # read back from the file: nothing is embedded again
    again = await ingest(docs, embedder=embedder, store=store)
    print(f"Reopened {path.name}: {len(store)} chunks; ingesting again added {again.added}.\n")
    return store


async def main() -> None:
    model, which = await choose_model()
    print(f"Using {which}.")
    embedder = LocalEmbedder()
    with tempfile.TemporaryDirectory() as folder:
        store = await build_store(Path(folder), embedder)
        graph = rag_agent(model, embedder, store)
        runner = GraphRunner(max_steps=40)
        for question in QUESTIONS:
            result: AgentContext[Any] = await runner.run(graph, AgentContext(question))
            print(f"question: {question}")
            for source in result.state["sources"]:
                clipped = ", clipped" if source.clipped else ""
                print(f"  {source.label}  (score {source.score:.2f}{clipped})")
            print(f"answer: {result.input}\n")


if __name__ == "__main__":
    anyio.run(main)
