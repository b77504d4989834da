"""A worker killed mid-run: another worker takes the run up from its last committed step."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest
from langgraph_sdk import get_client

from agentgraph.checkpoint import SQLiteStore

from .support import said, serving, worker_process

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_sigkilled_workers_run_ends_on_another_worker_with_its_effect_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("SERVER_TEST_DIR", str(tmp_path))
    database = tmp_path / "server.db"
    with serving(tmp_path, workers=0) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            run = await client.runs.create(tid, "crash", input=said("go on"))
            first = worker_process(database, tmp_path)
            try:
                async with SQLiteStore(database) as store:
                    while True:  # the effect's step is committed: kill the worker now
                        log = await store.load(run["run_id"])
                        if log is not None and log.steps:
                            break
                        await anyio.sleep(0.02)
            finally:
                os.kill(first.pid, signal.SIGKILL)
                first.wait(timeout=30)
                assert first.stdout is not None
                first.stdout.close()
            (tmp_path / "go").touch()
            second = worker_process(database, tmp_path)
            try:
                final = await client.runs.join(tid, run["run_id"])
            finally:
                second.terminate()
                second.wait(timeout=30)
                assert second.stdout is not None
                second.stdout.close()
            assert isinstance(final, dict)
            assert [m["content"] for m in final["messages"]] == ["held"]
            assert (tmp_path / "effects").read_text() == "effect\n"
            assert (await client.runs.get(tid, run["run_id"]))["status"] == "success"
