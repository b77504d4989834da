"""`examples/batch_eval.py` (what `make demo-batch` runs), at a small size."""

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(180)
def test_the_batch_eval_example_scores_the_agent_and_writes_one_line_per_question(
    ray_cluster, tmp_path
):
    out = tmp_path / "results.jsonl"
    command = [
        *[sys.executable, str(ROOT / "examples" / "batch_eval.py")],
        *["--questions", "40", "--actors", "1", "--no-progress", "--out", str(out)],
        *["--address", ray_cluster.address],  # the session's cluster: no Ray of its own
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=170)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert len(lines) == 40 and all(line["status"] == "finished" for line in lines)
    right = sum(line["correct"] for line in lines)
    divisions = sum("/" in line["question"] for line in lines)
    assert 40 - divisions <= right < 40  # every tool answer right, rounded divisions mostly not
    assert f"accuracy: {right / 40:.1%} ({right} of 40)" in done.stdout
    assert "latency per run: p50" in done.stdout and "tokens: " in done.stdout
