"""`agentgraph server` serves graphs to the SDK client; SIGTERM lets the run going on finish."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
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


async def premium_first(ctx: Any) -> dict[str, Any]:
    """A priority function, as `--priority` names it."""
    return {"priority": -1}


def test_the_flow_options_set_the_limits_and_the_priority_function():
    from agentgraph._cli import _parser
    from agentgraph._cli._server import _settings
    from agentgraph.server import FlowLimits, Limit

    args = _parser().parse_args(
        [
            "server", "echo=tests.server.support:echo", "--assistant-concurrency", "2",
            "--key-rate", "60/30", "--key-concurrency", "4",
            "--priority", "tests.server.test_cli:premium_first",
        ]
    )  # fmt: skip
    settings = _settings(args, workers=1, api_key=None)
    assert settings.limits == FlowLimits(
        per_assistant=Limit(concurrency=2), per_key=Limit(concurrency=4, rate=60, per=30.0)
    )
    # Imported by name, as a module of its own: the same function, not the same object.
    assert getattr(settings.priority, "__qualname__", None) == "premium_first"
    worker = _parser().parse_args(["worker", "echo=tests.server.support:echo"])
    assert _settings(worker, workers=1, api_key=None).limits == FlowLimits()


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--key-rate", "0/60"], "is not RUNS/SECONDS"),
        (["--assistant-rate", "10"], "is not RUNS/SECONDS"),
        (["--assistant-rate", "10/never"], "is not RUNS/SECONDS"),
        (["--priority", "tests.server.support:echo"], "--priority tests.server.support:echo"),
    ],
)
def test_a_bad_flow_option_is_refused_before_serving(
    option: list[str], said: str, capsys: pytest.CaptureFixture[str]
):
    from agentgraph._cli import main

    out, err = io.StringIO(), io.StringIO()
    status = 2
    with contextlib.suppress(SystemExit):  # argparse exits on a bad value
        status = main(
            ["server", "echo=tests.server.support:echo", "--port", "0", *option],
            stdout=out,
            stderr=err,
        )
    assert status == 2
    assert said in err.getvalue() + capsys.readouterr().err
    assert out.getvalue() == ""


def test_a_worker_process_logs_json_lines_and_serves_its_metrics(tmp_path: Path):
    from prometheus_client.parser import text_string_to_metric_families

    from tests.pg_server import free_port

    database = str(tmp_path / "server.db")
    port = free_port()
    env = {**os.environ, "SERVER_TEST_DIR": str(tmp_path)}
    api = [sys.executable, "-m", "agentgraph", "server", "echo=tests.server.support:echo"]
    worker = [sys.executable, "-m", "agentgraph", "worker", "echo=tests.server.support:echo"]
    api += ["--store", database, "--port", "0", "--workers", "0"]
    worker += ["--store", database, "--log-format", "json", "--metrics-port", str(port)]
    with (
        subprocess.Popen(api, env=env, stdout=subprocess.PIPE, text=True) as server,
        subprocess.Popen(
            worker, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as working,
    ):
        assert server.stdout is not None and working.stdout is not None
        assert working.stderr is not None
        url = server.stdout.readline().split(" at ")[1].strip()
        assert "running" in working.stdout.readline()
        with get_sync_client(url=url) as client:
            tid = client.threads.create()["thread_id"]
            run = client.runs.create(tid, "echo", input=said("hi"))
            client.runs.join(tid, run["run_id"])
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics").text
        working.send_signal(signal.SIGTERM)
        working.wait(timeout=60)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        lines = [orjson.loads(line) for line in working.stderr.read().splitlines()]
    ours = [line for line in lines if line.get("run_id") == run["run_id"]]
    assert [line["message"] for line in ours] == ["run claimed", "run ended"]
    assert all(line["thread_id"] == tid for line in ours)
    found = {
        sample.name: sample.value
        for family in text_string_to_metric_families(scraped)
        for sample in family.samples
        if not sample.labels
    }
    assert found["agentgraph_claim_wait_seconds_count"] == 1
    assert found["agentgraph_workers_alive"] == 1
