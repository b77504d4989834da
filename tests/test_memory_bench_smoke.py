"""The memory benchmark runs end to end at a tiny size; its figures are checked for sanity only."""

import anyio
import pytest

from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("memory")


@pytest.mark.parametrize(
    "store", ["memory", "sqlite", "postgres", "langgraph-memory", "langgraph-postgres"]
)
def test_case_produces_sane_figures(bench, store, request):
    dsn = None
    if store.startswith("langgraph"):
        pytest.importorskip("langgraph.store.postgres")
    if store.endswith("postgres"):
        dsn = request.getfixturevalue("postgres_server").dsn
    result = anyio.run(lambda: bench.run_case(store, 50, lookups=5, searches=2, dsn=dsn))
    assert (result["store"], result["items"]) == (store, 50)
    assert result["put_per_s"] > 0 and result["get_us"] > 0 and result["filter_ms"] > 0
    if store == "langgraph-postgres":
        assert result["search_ms"] is None  # its semantic search needs pgvector
    else:
        assert result["search_ms"] > 0


def test_unknown_store_is_refused(bench):
    with pytest.raises(ValueError, match="unknown store"):
        anyio.run(lambda: bench.run_case("redis", 10))
