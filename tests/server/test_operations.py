"""Operations of the agent server: liveness, readiness, /info, Prometheus metrics read from
the store (one process, and an API beside a worker process on one PostgreSQL), worker
heartbeats and the run lifecycle's log lines."""

from __future__ import annotations

import io
import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from langgraph_sdk import get_client
from prometheus_client.parser import text_string_to_metric_families

import agentgraph
from agentgraph.server._logs import LOG, JsonLines, configure_logging

from .support import said, serving, worker_process

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """A scrape's samples by name and labels."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    return found[(name, tuple(sorted(labels.items())))]


async def until(check: Callable[[], Any], *, within: float = 30.0) -> Any:
    """`check()`'s answer once truthy; fails after `within` seconds."""
    with anyio.fail_after(within):
        while True:
            answer = await check()
            if answer:
                return answer
            await anyio.sleep(0.05)


async def test_ok_ready_and_info_answer_without_the_api_key(tmp_path: Path) -> None:
    with serving(tmp_path, api_key="sesame") as url:
        async with httpx.AsyncClient(base_url=url) as http:
            assert (await http.get("/ok")).json() == {"ok": True}

            async def ready() -> Any:
                answer = await http.get("/ready")
                return answer.json() if answer.status_code == 200 else None

            body = await until(ready)
            assert body["ok"] is True
            assert body["store"] == {"kind": "sqlite", "ok": True}
            assert list(body["workers"]["here"].values()) == [True]
            assert body["workers"]["alive"] == 1
            assert (await http.get("/info")).status_code == 401
            info = (await http.get("/info", headers={"x-api-key": "sesame"})).json()
    assert info["version"] == agentgraph.__version__
    assert info["store"] == "sqlite"
    assert info["flags"]["assistants"] is True
    assert info["flags"]["crons"] is True
    assert info["flags"]["thread_ttl"] is True


async def test_ready_is_503_while_the_store_fails(tmp_path: Path, caplog: Any) -> None:
    with serving(tmp_path) as url:
        async with httpx.AsyncClient(base_url=url) as http:

            async def ready() -> bool:
                return (await http.get("/ready")).status_code == 200

            await until(ready)
            with sqlite3.connect(tmp_path / "server.db") as db:
                db.execute("DROP TABLE server_workers")  # what /ready reads is gone
            answer = await http.get("/ready")
    assert answer.status_code == 503
    body = answer.json()
    assert body["ok"] is False
    assert body["store"]["kind"] == "sqlite"
    # The probe is open to anyone: what the database said goes to the log, not the answer.
    assert body["store"]["error"] == "OperationalError"
    assert "server_workers" not in answer.text
    assert any("server_workers" in r.getMessage() for r in caplog.records)


async def test_a_scrape_counts_runs_queue_workers_and_claims(tmp_path: Path) -> None:
    with serving(tmp_path, workers=1) as url:
        async with get_client(url=url) as client, httpx.AsyncClient(base_url=url) as http:
            thread = await client.threads.create()
            await client.runs.wait(thread["thread_id"], "echo", input=said("hi"))
            failed = await client.runs.create(thread["thread_id"], "fails", input=said("hi"))
            await client.runs.join(thread["thread_id"], failed["run_id"])
            delayed = await client.threads.create()
            await client.runs.create(
                delayed["thread_id"], "echo", input=said("later"), after_seconds=600
            )

            async def scraped() -> Any:
                answer = await http.get("/metrics")
                assert answer.status_code == 200
                assert answer.headers["content-type"].startswith("text/plain")
                found = samples(answer.text)
                return found if value(found, "agentgraph_workers_alive") == 1 else None

            found = await until(scraped)
    assert value(found, "agentgraph_runs", status="success") == 1
    assert value(found, "agentgraph_runs", status="error") == 1
    assert value(found, "agentgraph_runs", status="pending") == 1
    assert value(found, "agentgraph_runs", status="running") == 0
    assert value(found, "agentgraph_queue_depth") == 0
    assert value(found, "agentgraph_queue_delayed") == 1
    assert value(found, "agentgraph_queue_oldest_age_seconds") == 0
    assert value(found, "agentgraph_threads", status="error") == 1  # its last run failed
    assert value(found, "agentgraph_threads", status="busy") == 1
    assert value(found, "agentgraph_claim_wait_seconds_count") == 2
    assert value(found, "agentgraph_webhook_deliveries", status="failed") == 0
    ages = [
        v for (name, _), v in found.items() if name == "agentgraph_worker_heartbeat_age_seconds"
    ]
    assert len(ages) == 1 and 0 <= ages[0] < 15


async def test_the_queue_depth_and_age_of_runs_no_worker_claims(tmp_path: Path) -> None:
    with serving(tmp_path, workers=0) as url:
        async with get_client(url=url) as client, httpx.AsyncClient(base_url=url) as http:
            for _ in range(3):
                thread = await client.threads.create()
                await client.runs.create(thread["thread_id"], "echo", input=said("hi"))
            await anyio.sleep(0.3)
            found = samples((await http.get("/metrics")).text)
            body = (await http.get("/ready")).json()
    assert value(found, "agentgraph_queue_depth") == 3
    assert value(found, "agentgraph_queue_oldest_age_seconds") >= 0.3
    assert value(found, "agentgraph_workers_alive") == 0
    assert value(found, "agentgraph_claim_wait_seconds_count") == 0
    assert body["workers"] == {"here": {}, "alive": 0}


async def test_an_api_process_reports_the_workers_and_runs_of_another(
    tmp_path: Path, pg: tuple[str, str]
) -> None:
    dsn, schema = pg
    with (
        serving(tmp_path, where=dsn, schema=schema, workers=0) as url,
        serving(tmp_path, where=dsn, schema=schema, workers=0) as other,
        worker_process(dsn, tmp_path, schema=schema) as worker,
    ):
        try:
            async with get_client(url=url) as client, httpx.AsyncClient(base_url=url) as http:
                thread = await client.threads.create()
                await client.runs.wait(thread["thread_id"], "echo", input=said("hi"))

                async def scraped() -> Any:
                    found = samples((await http.get("/metrics")).text)
                    return found if value(found, "agentgraph_workers_alive") == 1 else None

                found = await until(scraped)
                info = (await http.get("/info")).json()
                elsewhere = samples(httpx.get(f"{other}/metrics").text)
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    assert value(found, "agentgraph_runs", status="success") == 1
    beats = [key for key in found if key[0] == "agentgraph_worker_running_runs"]
    assert len(beats) == 1
    assert info["store"] == "postgresql"
    # The claim was the worker process's: this process claimed nothing.
    assert value(found, "agentgraph_claim_wait_seconds_count") == 0

    # Another API process on the database counts the same (all but the ages, which move,
    # and when each process made its histogram).
    def still(scrape: dict[Any, float]) -> dict[Any, float]:
        return {
            key: v
            for key, v in scrape.items()
            if "age_seconds" not in key[0] and not key[0].endswith("_created")
        }

    assert still(elsewhere) == still(found)


async def test_a_runs_lifecycle_lines_carry_its_ids(tmp_path: Path) -> None:
    out = io.StringIO()
    handler = configure_logging("json", stream=out)
    try:
        with serving(tmp_path) as url:
            async with get_client(url=url) as client:
                thread = await client.threads.create()
                ok = await client.runs.create(thread["thread_id"], "echo", input=said("hi"))
                await client.runs.join(thread["thread_id"], ok["run_id"])
                failed = await client.runs.create(thread["thread_id"], "fails", input=said("x"))
                await client.runs.join(thread["thread_id"], failed["run_id"])
    finally:
        LOG.removeHandler(handler)
    lines = [orjson.loads(line) for line in out.getvalue().splitlines()]
    about = {
        run["run_id"]: [line for line in lines if line.get("run_id") == run["run_id"]]
        for run in (ok, failed)
    }
    assert [line["message"] for line in about[ok["run_id"]]] == ["run claimed", "run ended"]
    assert [line["message"] for line in about[failed["run_id"]]] == [
        "run claimed",
        "run failed",
        "run ended",
    ]
    for run in (ok, failed):
        for line in about[run["run_id"]]:
            assert line["thread_id"] == thread["thread_id"]
            assert line["assistant_id"] == run["assistant_id"]
            assert line["graph_id"] in ("echo", "fails")
            assert line["logger"] == "agentgraph.server"
            assert line["worker"].startswith("worker-")
    assert about[ok["run_id"]][-1]["status"] == "success"
    assert about[failed["run_id"]][-1]["status"] == "error"
    assert "the node failed" in about[failed["run_id"]][1]["exc_info"]


def test_the_json_formatter_writes_one_object_a_line() -> None:
    record = logging.makeLogRecord(
        {"name": "agentgraph.server", "levelname": "INFO", "msg": "run %s", "args": ("ended",)}
    )
    record.run_id = "r1"
    record.created = time.time()
    line = orjson.loads(JsonLines().format(record))
    assert line["message"] == "run ended"
    assert line["run_id"] == "r1"
    assert line["level"] == "INFO"
