"""Kill-and-resume trials: a subprocess records a run and is SIGKILLed at a random step.

The run is kept in SQLite and in Postgres (`places`). Each time, a resume finishes the
run with the context an uninterrupted run produces, and no tool call whose result was
committed runs again.
"""

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import anyio
import pytest

from agentgraph import GraphRunner, RunBusy
from tests.checkpoint.crash_graph import RUN_ID, TURNS, build, start
from tests.checkpoint.places import Place

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
TRIALS = int(os.environ.get("AGENTGRAPH_LEASE_TRIALS", "10"))
"""Kills per event loop and store (40 in all); `make test-long` runs 100 each."""
PAUSE = "0.002"  # seconds per step in the worker, so that kills land all over the run
LEASE = "0.3"  # seconds a killed worker's lease holds the run


def executions(counter: Path) -> Counter[int]:
    if not counter.exists():
        return Counter()
    return Counter(int(line.split()[0]) for line in counter.read_text().splitlines())


async def run_and_kill(db: Place, counter: Path, kill_at: int) -> bool:
    """Run the worker; SIGKILL it once it reports step `kill_at`. True when it was killed."""
    command = [
        *[sys.executable, "-m", "tests.checkpoint.crash_graph"],
        *[*db.args(), str(counter), PAUSE, "--lease", LEASE],
    ]
    killed = False
    async with await anyio.open_process(command, cwd=ROOT, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        seen = b""
        async for chunk in process.stdout:
            seen += chunk
            steps = [int(line) for line in seen.split(b"\n")[:-1] if line.strip().isdigit()]
            if steps and max(steps) >= kill_at:
                process.send_signal(signal.SIGKILL)
                killed = True
                break
        errors = b"".join([chunk async for chunk in process.stderr])
        code = await process.wait()
    # With a lease this short, a worker starved of CPU may miss renewing it: it then
    # stops itself before its next step, as it must, and leaves the run to resume.
    stopped = code == 1 and b"LeaseLost" in errors
    assert code in (0, -signal.SIGKILL) or stopped, errors.decode()
    return (killed and code == -signal.SIGKILL) or stopped


async def resume_when_free(graph, store):
    """Resume the trial run, waiting for a dead runner's lease to lapse first."""
    while True:
        try:
            return await GraphRunner().resume(graph, RUN_ID, store)
        except RunBusy as busy:
            await anyio.sleep(max(0.01, busy.expires - time.time()))


def result_calls(log) -> set[int]:
    """The `n` of every bump call whose result the store holds."""
    return {int(e.key.rsplit(" c", 1)[1]) for e in log.effects if e.kind == "result"}


async def test_sigkilled_runs_resume_to_the_uninterrupted_result(tmp_path, anyio_backend, places):
    steps = []
    baseline = GraphRunner(on_step=lambda info, node, ctx: steps.append(info.index))
    expected = await baseline.run(build(tmp_path / "baseline.txt"), start())
    total = max(steps)
    assert total > 60 and expected.input.content == "all bumped"

    rng = random.Random(f"sigkill-{anyio_backend}-{places.kind}")
    killed = 0
    for trial in range(TRIALS):
        db, counter = places(f"trial{trial}"), tmp_path / f"trial{trial}.txt"
        killed += await run_and_kill(db, counter, rng.randint(1, total))
        async with db.store() as store:
            log = await store.load(RUN_ID)
            assert log is not None  # a run's start is durable before its first step
            committed = result_calls(log)
            before = executions(counter)
            out = await resume_when_free(build(counter), store)
        after = executions(counter)
        assert out == expected, f"trial {trial}"
        assert set(after) == set(range(TURNS))
        for n in committed:  # a committed result is never produced again
            assert after[n] == before[n], (trial, n)
    assert killed >= TRIALS - 2  # nearly every trial died mid-run
