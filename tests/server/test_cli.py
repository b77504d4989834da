"""`agentgraph server` serves graphs to the SDK client; SIGTERM lets the run going on finish."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client

from .support import said

pytestmark = pytest.mark.timeout(90)


def test_the_server_command_serves_and_a_sigterm_lets_the_running_run_finish(tmp_path: Path):
    database = tmp_path / "server.db"
    command = [
        sys.executable,
        "-m",
        "agentgraph",
        "server",
        "tests.server.support:crash",
        "echo=tests.server.support:echo",
        "--store",
        str(database),
        "--port",
        "0",
        "--grace",
        "60",
    ]
    env = {**os.environ, "SERVER_TEST_DIR": str(tmp_path)}
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("serving crash, echo at http://127.0.0.1:")
        url = line.split(" at ")[1].strip()
        with get_sync_client(url=url) as client:
            tid = client.threads.create()["thread_id"]
            echoed = client.runs.wait(tid, "echo", input=said("hi"))
            assert isinstance(echoed, dict)
            assert echoed["messages"][-1]["content"] == "echo: hi"
            run = client.runs.create(tid, "crash", input=said("x"))
            while not (tmp_path / "effects").exists():
                time.sleep(0.01)
            process.send_signal(signal.SIGTERM)
            (tmp_path / "go").touch()
            # uvicorn re-raises the signal once it has shut down.
            assert process.wait(timeout=60) == -signal.SIGTERM
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) as again:
        assert again.stdout is not None
        url = again.stdout.readline().split(" at ")[1].strip()
        with get_sync_client(url=url) as client:
            assert client.runs.get(tid, run["run_id"])["status"] == "success"
        again.send_signal(signal.SIGTERM)
        assert again.wait(timeout=60) == -signal.SIGTERM
