"""A server stopped while a task's run works: the next server on the store takes the task up.

The official Python SDK's client starts the task, the server is SIGKILLed
(or shut down) mid-run, and after the restart the client subscribes to the
task and polls it: the run goes on from its journal and the task completes.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from a2a.types import a2a_pb2 as pb

from agentgraph.a2a import a2a_app
from agentgraph.checkpoint import MemoryStore, SQLiteStore

from .restart_server import gated
from .serving import echo, graph_of, served
from .test_server import BINDINGS, S, _client, _message, _states

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _wait_for(path: Path) -> None:
    with anyio.fail_after(20):
        while not path.exists():
            await anyio.sleep(0.01)


async def _start_task(url: str, binding: str, where: Path) -> pb.Task:
    """Send a message, and return the task once its run is inside the gate."""
    async with httpx.AsyncClient() as http:
        client = await _client(http, url, binding)
        first: list[pb.StreamResponse] = []

        async def follow() -> None:
            try:
                async for event in client.send_message(
                    pb.SendMessageRequest(message=_message("hi"))
                ):
                    first.append(event)
            except Exception:  # the server dies under the stream
                pass

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            await _wait_for(where / "entered")
            with anyio.fail_after(20):
                while len(first) < 2:  # the task, then its working status
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
    assert first and first[0].WhichOneof("payload") == "task"
    assert _states(first)[:2] == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]
    return first[0].task


async def _see_it_finish(url: str, binding: str, where: Path, task: pb.Task) -> None:
    """Subscribe to the task, open the gate, and see the task complete; then get it."""
    async with httpx.AsyncClient() as http:
        client = await _client(http, url, binding)
        seen: list[pb.StreamResponse] = []
        with anyio.fail_after(20):
            async for event in client.subscribe(pb.SubscribeToTaskRequest(id=task.id)):
                seen.append(event)
                (where / "open").touch()  # subscribed: let the resumed run through
        done = await client.get_task(pb.GetTaskRequest(id=task.id))
    assert S.Name(seen[0].task.status.state) == "TASK_STATE_WORKING"
    assert _states(seen[1:])[-2:] == ["artifact:noted hi, through the gate", "TASK_STATE_COMPLETED"]
    assert S.Name(done.status.state) == "TASK_STATE_COMPLETED"
    assert done.context_id == task.context_id
    assert [(a.artifact_id, a.parts[0].text) for a in done.artifacts] == [
        ("output", "noted hi, through the gate")
    ]
    # Resumed, not run again: the step before the gate ran once (the first server
    # flushed its record before the gate let anything else happen).
    assert (where / "notes.txt").read_text() == "hi\n"


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_task_working_when_its_server_is_sigkilled_completes_after_a_restart(
    binding, tmp_path
):
    db = tmp_path / "a2a.db"
    command = [sys.executable, "-m", "tests.agent2agent.restart_server", str(db), str(tmp_path)]
    async with await anyio.open_process(command, cwd=ROOT, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None
        try:
            with anyio.fail_after(30):
                url = (await process.stdout.receive()).decode().strip()
            task = await _start_task(url, binding, tmp_path)
            async with SQLiteStore(db) as look:  # the step before the gate is on disk
                with anyio.fail_after(20):
                    while not ((log := await look.load(task.id)) and log.steps):
                        await anyio.sleep(0.01)
        finally:
            process.send_signal(signal.SIGKILL)
            code = await process.wait()
    assert code == -signal.SIGKILL
    (tmp_path / "entered").unlink()
    # The dead server's lease on the run lapses half a second after the kill.
    async with (
        SQLiteStore(db) as store,
        served(lambda url: a2a_app(gated(tmp_path), url=url, store=store)) as url,
    ):
        await _see_it_finish(url, binding, tmp_path, task)


async def test_a_task_working_when_its_server_shuts_down_completes_after_a_restart(tmp_path):
    store = MemoryStore()
    make = lambda url: a2a_app(gated(tmp_path), url=url, store=store)  # noqa: E731
    async with served(make) as url:
        task = await _start_task(url, "JSONRPC", tmp_path)
    stored = await store.load("a2a.task:" + task.id)
    assert stored is not None  # the shut-down server left the task working
    async with served(make) as url:
        await _see_it_finish(url, "HTTP+JSON", tmp_path, task)


async def test_a_task_whose_run_cannot_be_resumed_fails_naming_the_run(tmp_path):
    store = MemoryStore()
    async with served(lambda url: a2a_app(gated(tmp_path), url=url, store=store)) as url:
        task = await _start_task(url, "JSONRPC", tmp_path)
    # The graph served now is not the one the run was recorded with.
    async with (
        served(lambda url: a2a_app(graph_of(echo), url=url, store=store)) as url,
        httpx.AsyncClient() as http,
    ):
        client = await _client(http, url, "HTTP+JSON")
        with anyio.fail_after(20):
            while True:
                got = await client.get_task(pb.GetTaskRequest(id=task.id))
                if got.status.state != pb.TASK_STATE_WORKING:
                    break
                await anyio.sleep(0.02)
    assert S.Name(got.status.state) == "TASK_STATE_FAILED"
    text = got.status.message.parts[0].text
    assert text.startswith(
        f"run {task.id!r} was working when the server stopped; resuming it failed"
    )
    assert "'gated'" in text and "'paint'" in text
