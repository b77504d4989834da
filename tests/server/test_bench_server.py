"""`benchmarks/server.py` runs a tiny workload on the SQLite server and reports sane figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.timeout(180)


def test_the_server_benchmark_runs_tiny_on_sqlite():
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/server.py",
            "--case",
            "sqlite",
            "--runs",
            "10",
            "--waiting",
            "5",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=150,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["case"] == "sqlite"
    assert figures["runs"] == 10
    assert figures["runs_per_s"] > 0
    assert figures["probes"] >= 1
    assert figures["first_event_p99_ms"] >= figures["first_event_p50_ms"] > 0
