"""A worker killed mid-run: another worker takes the run up from its last committed step."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest
from langgraph_sdk import get_client

from agentgraph.checkpoint import SQLiteStore
from agentgraph.server._queue import RunQueue

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


async def test_a_run_taken_up_by_another_worker_keeps_the_ids_its_messages_were_sent_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("SERVER_TEST_DIR", str(tmp_path))
    database = tmp_path / "server.db"
    with serving(tmp_path, workers=0) as url:
        async with get_client(url=url) as client:
            tid = (await client.threads.create())["thread_id"]
            run = await client.runs.create(
                tid, "crash_streams", input=said("hi"), stream_mode=["messages-tuple", "values"]
            )
            first = worker_process(database, tmp_path)
            queue = RunQueue(str(database))
            try:
                async with SQLiteStore(database) as store:
                    while True:  # the streamed step is committed and its values sent
                        log = await store.load(run["run_id"])
                        sent = [e for _, e, _ in queue.events(run["run_id"], 0)]
                        if log is not None and log.steps and "values" in sent:
                            break
                        await anyio.sleep(0.02)
            finally:
                os.kill(first.pid, signal.SIGKILL)
                first.wait(timeout=30)
                assert first.stdout is not None
                first.stdout.close()
                queue.close()
            (tmp_path / "go").touch()
            second = worker_process(database, tmp_path)
            try:
                await client.runs.join(tid, run["run_id"])
                parts = [
                    p async for p in client.runs.join_stream(tid, run["run_id"], last_event_id="-1")
                ]
            finally:
                second.terminate()
                second.wait(timeout=30)
                assert second.stdout is not None
                second.stdout.close()
    values = [p.data["messages"] for p in parts if p.event == "values"]
    assert len(values) == 2  # one from each worker
    assert [m["id"] for m in values[0]] == [m["id"] for m in values[1]]
    answer = values[1][1]["id"]
    chunks = [m for m, _ in (p.data for p in parts if p.event == "messages")]
    assert {m["id"] for m in chunks if m["type"] == "AIMessageChunk"} == {answer}
    whole = [m["id"] for m in chunks if m["type"] != "AIMessageChunk"]
    assert whole == [values[1][0]["id"]]  # the question, once; the answer only in chunks
