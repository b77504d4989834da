"""The waiting-runs benchmark runs at a tiny size; what a waiting run costs is counted."""

import asyncio

import pytest

from agentgraph import GraphRunner
from agentgraph.checkpoint import PostgresStore
from tests.helpers import load_benchmark
from tests.pg_server import drop_schema, fresh_schema


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("waiting_runs")


def test_waiting_runs_hold_nothing_in_process_and_one_resumes_from_its_own_records(
    bench, postgres_server
):
    schema = fresh_schema()

    async def main():
        store = PostgresStore(postgres_server.dsn, schema=schema)
        try:
            ids = await bench.fill(store, 30, 10)
            # Nothing in this process stands for a waiting run: no lease, nothing queued.
            assert len(ids) == 30 and not store._held and not store._pending
            loaded = []
            load = store.load

            async def counted(run_id):
                loaded.append(run_id)
                return await load(run_id)

            store.load = counted
            out = await GraphRunner().resume(bench.approval(), ids[17], store, answer="yes")
            assert out.input == "yes" and loaded == [ids[17]]  # its own records only
            assert not store._held
        finally:
            await store.aclose()

    try:
        asyncio.run(main())
    finally:
        drop_schema(postgres_server.dsn, schema)


def test_the_report_holds_the_target(bench):
    result = {
        "count": 10,
        "fill_s": 0.1,
        "bytes_per_run": 2000.0,
        "rss_before": 50.0,
        "rss_after": 50.0,
        "peak_rss": 50.0,
        "records": 3,
        "find_ms": 1.0,
        "resume_ms": 5.0,
        "resume_max_ms": 6.0,
    }
    report = bench.render(result, 0.5)
    assert report.startswith("## Runs waiting on an interrupt\n")
    assert "| find and resume one < 20 ms | 6.0 ms | met |" in report
