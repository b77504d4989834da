"""`python -m agentgraph serve` in its own process: it prints the URL, serves the page and runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agentgraph._cli import main

from .support import wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(90)
@pytest.mark.parametrize("keep", ["100", "0"])  # 0: the ended run is read back from the store
def test_serve_prints_the_url_and_runs_the_calculator(tmp_path, keep):
    command = [
        sys.executable,
        "-m",
        "agentgraph",
        "serve",
        "examples/calculator_agent.py:web_agent",
        "--port",
        "0",
        "--store",
        str(tmp_path / "runs.db"),
        "--keep-runs",
        keep,
    ]
    with subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as process:
        try:
            assert process.stdout is not None
            first = process.stdout.readline()
            assert first.startswith("serving react_agent at http://127.0.0.1:"), first
            url = first.split(" at ", 1)[1].strip()
            assert process.stdout.readline().strip() == f"AG-UI endpoint: {url}agui (POST)"
            with httpx.Client(base_url=url, timeout=10) as client:
                page = client.get("")
                assert page.status_code == 200 and "<svg" in page.text
                # Nothing on the page comes from elsewhere: no scripts or styles by URL.
                # (The icon is inline, a data: URL, so the page asks for no favicon.ico.)
                inline = page.text.replace('<link rel="icon" href="data:image/svg+xml,', "")
                assert "src=" not in page.text and "<link" not in inline
                question = {"input": "hypotenuse of 3 and 4?"}
                run_id = client.post("api/runs", json=question).json()["id"]
                assert wait_for(client, run_id, "ok")["output"] == "The hypotenuse is 5."
        finally:
            process.terminate()
            process.wait(timeout=20)
    assert (tmp_path / "runs.db").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "examples/calculator_agent.py:web_agent", "--port", "70000"], "not a port"),
        (["serve", "examples/nowhere.py:graph"], "no such file"),
        (
            ["serve", "examples/calculator_agent.py:web_agent", "--trace", "missing.jsonl"],
            "cannot read trace missing.jsonl",
        ),
        (["serve", "examples/calculator_agent.py:web_agent", "--keep-runs", "-1"], "at least 0"),
    ],
)
def test_serve_refuses_what_cannot_work_in_one_line(args, message, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
