"""The RAG benchmark runs at tiny sizes; its figures are checked for sanity only."""

import anyio
import pytest

from tests.helpers import load_benchmark

pytest.importorskip("numpy", reason="the `rag` extra (numpy) is not installed")


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("rag")


def test_search_figures_and_the_report(bench):
    sizes = bench.Sizes(vectors=600, dimensions=16, queries=8, k=5, embed=False)
    vectors, queries = bench.data(sizes)
    ours = anyio.run(bench.measure_store, vectors, queries, sizes.k)
    assert len(ours["latencies"]) == 8 and all(t > 0 for t in ours["latencies"])
    assert all(len(ids) == 5 for ids in ours["ids"]) and ours["reopen_same"]
    peer = bench.measure_faiss(vectors, queries, sizes.k)
    if peer is not None:
        assert peer["ids"] == ours["ids"]  # exact search: the same hits, in the same order
    report = bench.render(sizes, ours, peer, None)
    assert report.startswith("## RAG\n") and "### Targets" in report
    assert "Local embedder: not measured" in report
    if peer is not None:
        assert "| identical top-5 results | 8/8 queries | met |" in report


def test_only_the_rag_section_is_replaced(bench):
    document = "# Engine\n\ntext\n\n## Targets\n\nrows\n\n## RAG\n\nold\n\n### Method\n\nold\n"
    document += "\n## Structured output parsing\n\nkept\n"
    replaced = bench.replace_section(document, "## RAG\n\nnew\n")
    assert replaced == (
        "# Engine\n\ntext\n\n## Targets\n\nrows\n\n## RAG\n\nnew\n\n"
        "## Structured output parsing\n\nkept\n"
    )
    assert bench.replace_section("# Engine\n", "## RAG\n\nnew\n") == "# Engine\n\n## RAG\n\nnew\n"
