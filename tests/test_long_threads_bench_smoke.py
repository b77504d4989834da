"""The long-thread and reads-beside-writes benchmarks run end to end at tiny sizes; their
figures are checked for sanity only."""

import asyncio

import pytest

from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def threads():
    yield from load_benchmark("long_threads")


@pytest.fixture(scope="module")
def reads():
    yield from load_benchmark("reads_under_writes")


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_a_turn_on_each_store_is_measured_with_its_bytes(threads, kind, request):
    dsn = request.getfixturevalue("postgres_server").dsn if kind == "postgres" else None
    result = asyncio.run(threads.measure_agentgraph(kind, threads.QUICK, dsn))
    for thread in ("long", "short"):
        assert result[thread]["ms"] > 0
        assert result[thread]["written"] > 0 and result[thread]["read"] > 0
    # A turn writes the same on the long thread as on the short one.
    assert result["long"]["written"] <= result["short"]["written"] + 16


def test_langgraph_runs_the_same_turns(threads):
    pytest.importorskip("langgraph.graph")
    result = asyncio.run(threads.measure_langgraph("memory", threads.QUICK, None))
    assert result["long"]["ms"] > 0 and result["short"]["ms"] > 0


def test_the_report_names_every_target(threads):
    row = {"ms": 1.0, "written": 500, "read": 400}
    rows = [
        {"store": kind, "framework": framework, "long": row, "short": row}
        for kind in threads.STORES
        for framework in ("agentgraph", "langgraph")
    ]
    cold = {"sqlite:agentgraph": 5.0, "sqlite:langgraph": 6.0, "postgres:agentgraph": "failed"}
    report = threads.render({"rows": rows, "cold": cold}, threads.QUICK, (0.5, 0.5))
    assert report.startswith("## Long threads\n")
    assert report.count("≤ 1.5x short") == 9 and report.count("faster than LangGraph") == 3
    assert "a cold turn no slower than LangGraph's | 5.0 ms vs 6.0 ms | met" in report
    assert "not measured" in report


def test_reads_under_load_are_measured(reads, tmp_path):
    result = asyncio.run(reads.under_load("sqlite", reads.QUICK, None))
    assert result["commits_per_s"] > 0
    assert all(result[what]["n"] > 0 for what in ("status", "thread", "threads"))


def test_score_runs_is_measured_per_store(reads):
    assert asyncio.run(reads.scoring("memory", 3, None)) > 0
