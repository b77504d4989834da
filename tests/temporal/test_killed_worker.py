"""A worker process SIGKILLed in the middle of a tool call, and a second worker finishing the run.

Model calls the first worker completed are not made again; a retry-safe tool whose call
was cut off runs at most once more (on the second worker); a tool that is not
retry-safe never runs twice: the run fails instead, with its last context.
"""

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from agentgraph import AgentContext
from agentgraph.temporal import RunFailed, TemporalRunner
from tests.temporal.graphs import agent, lines

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[2]


async def _start_worker(address: str, queue: str, folder: Path) -> anyio.abc.Process:
    command = [sys.executable, "-m", "tests.temporal.worker_proc", address, queue, str(folder)]
    process = await anyio.open_process(command, cwd=ROOT, stderr=subprocess.DEVNULL)
    await _wait_for(process, "ready")
    return process


async def _wait_for(process: anyio.abc.Process, word: str) -> None:
    seen = b""
    assert process.stdout is not None
    with anyio.fail_after(60):
        while word.encode() not in seen:
            chunk = await process.stdout.receive()
            seen += chunk


async def _stop(process: anyio.abc.Process) -> None:
    if process.returncode is None:
        process.kill()
    with anyio.move_on_after(10, shield=True):
        await process.wait()
    await process.aclose()


@pytest.mark.parametrize("tool", ["bump", "charge"])
async def test_a_second_worker_finishes_a_run_whose_worker_was_killed_mid_tool_call(
    temporal_address, client, queue, tmp_path, tool
):
    graph, _, _ = agent(tmp_path)
    (tmp_path / "hold").touch()  # the tool holds until the test lets it go
    first = await _start_worker(temporal_address, queue, tmp_path)
    second = None
    try:
        run = await TemporalRunner(client, task_queue=queue).start(
            graph, AgentContext(f"please {tool}")
        )
        await _wait_for(first, "tool 7")
        first.send_signal(signal.SIGKILL)
        await first.wait()
        assert first.returncode == -signal.SIGKILL
        (tmp_path / "hold").unlink()
        second = await _start_worker(temporal_address, queue, tmp_path)
        with anyio.fail_after(60):
            if tool == "bump":
                out = await run.result()
            else:
                with pytest.raises(RunFailed) as caught:
                    await run.result()
    finally:
        await _stop(first)
        if second is not None:
            await _stop(second)
    models = lines(tmp_path / "model.log")
    executions = lines(tmp_path / f"{tool}.log")
    if tool == "bump":
        assert out.input == "done"
        # The first model call was made once, by the killed worker; the second by the new one.
        assert [m.split()[0] for m in models] == ["0", "1"]
        assert models[0].split()[1] != models[1].split()[1]
        # The cut-off call ran again on the second worker: twice in all, never more.
        assert len(executions) == 2
        assert executions[0].split()[1] != executions[1].split()[1]
    else:
        assert caught.value.kind == "NodeFailed"
        assert "agentgraph.tool failed: timeout: heartbeat" in str(caught.value)
        assert caught.value.context.history.last().tool_calls[0].name == "charge"
        assert [m.split()[0] for m in models] == ["0"]
        assert len(executions) == 1
