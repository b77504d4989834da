"""A program on Temporal exits cleanly: the example, run as `make demo-temporal` runs it,
and the exit hook that waits for the SDK's native threads to leave Python."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentgraph.temporal import dev_server_path

ROOT = Path(__file__).resolve().parents[2]
RUNS = int(os.environ.get("AGENTGRAPH_DEMO_RUNS", "1"))
"""Runs of the example in a row (`make test-long` runs 10)."""

# A thread `threading` did not start (as a native library's are) is still in Python
# code when the program ends; it says when it gets back to the interpreter.
LATE_THREAD = """
import _thread, sys, time
import agentgraph.temporal

started = _thread.allocate_lock()
started.acquire()

def late():
    started.release()
    time.sleep(0.3)
    sys.stdout.write("left\\n")
    sys.stdout.flush()

_thread.start_new_thread(late, ())
started.acquire()
"""


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TEMPORAL_ADDRESS", None)  # the example starts a dev server of its own
    return env


def test_exit_waits_for_a_native_thread_to_leave_python():
    done = subprocess.run(
        [sys.executable, "-c", LATE_THREAD], env=_env(), capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout.decode() == "left\n"


@pytest.mark.timeout(60 + 60 * RUNS)
def test_the_durable_approval_example_exits_cleanly_every_time():
    try:
        dev_server_path()
    except FileNotFoundError as missing:
        if os.environ.get("CI"):
            pytest.fail(f"the Temporal dev server is required in CI: {missing}")
        pytest.skip(f"no Temporal dev server binary (outside CI only): {missing}")
    command = [sys.executable, str(ROOT / "examples" / "durable_approval.py")]
    for run in range(RUNS):
        done = subprocess.run(command, env=_env(), capture_output=True, timeout=100)
        assert done.returncode == 0, f"run {run + 1}: {done.stderr.decode()[-2000:]}"
        out = done.stdout.decode()
        assert "waiting for approval at step 2: refund" in out
        assert "answer: Done: refunded 59.90 on order A-1042." in out
        assert "model calls: 2" in out
