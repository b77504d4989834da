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


def test_the_table_shows_medians_over_rounds_beside_the_reference():
    sys.path.insert(0, str(ROOT))
    from benchmarks.server import _median_rows, _table

    def row(case: str, rate: float, load: float) -> dict[str, object]:
        return {
            "case": case,
            "runs": 10,
            "runs_per_s": rate,
            "first_event_p50_ms": 10.0,
            "first_event_p99_ms": 20.0,
            "probes": 3,
            "waiting": 5,
            "rss_growth_mb": 0.5,
            "server_cpu_ms_per_run": 2.0,
            "load_before": load,
            "load_after": load,
        }

    rows = _median_rows(
        [row("langgraph", 10.0, 1.0), row("sqlite", 30.0, 2.0), row("sqlite", 50.0, 3.0)]
    )
    assert [(r["case"], r["runs_per_s"], r["rounds"]) for r in rows] == [
        ("langgraph", 10.0, 1),
        ("sqlite", 40.0, 2),
    ]
    table = _table(rows).splitlines()
    assert table[2].startswith("| langgraph dev | 10 (10) | 1.0x |")
    assert table[3].startswith("| agentgraph sqlite | 40 (30, 50) | 4.0x |")
    assert table[3].endswith("| 2.0 to 3.0 |")
