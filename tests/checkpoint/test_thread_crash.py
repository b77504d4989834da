"""A thread goes on in a second process after the first was SIGKILLed in the middle of a turn."""

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import orjson
import pytest

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
WORKER = [sys.executable, "-m", "tests.checkpoint.thread_worker"]


async def test_a_thread_continues_after_its_process_was_killed_mid_turn(tmp_path):
    db, mark = str(tmp_path / "threads.db"), tmp_path / "mark"
    async with await anyio.open_process(
        [*WORKER, db, str(mark), "first"], cwd=ROOT, stderr=subprocess.PIPE
    ) as process:
        assert process.stdout is not None
        seen = b""
        async for chunk in process.stdout:
            seen += chunk
            if b"mid" in seen:
                process.send_signal(signal.SIGKILL)
                break
        code = await process.wait()
    assert code == -signal.SIGKILL and b"turn 1 done" in seen
    mark.touch()
    done = await anyio.run_process([*WORKER, db, str(mark), "second"], cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr.decode()
    sent = orjson.loads(done.stdout.splitlines()[-1])
    # Turn 2's model call is sent again only if its record had not reached the disk.
    assert sent[:-1] in ([], [["turn 1", "answer to turn 1", "turn 2"]])
    assert sent[-1] == ["turn 1", "answer to turn 1", "turn 2", "answer to turn 2", "turn 3"]
