"""A thread's checkpoints are stored as what each changes, read back whole."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from agentgraph.server._history import history_of
from agentgraph.server._queue import QueuedRun, RunQueue


def message(n: int) -> dict[str, Any]:
    return {"type": "human", "content": f"message {n} " + "x" * 200, "id": str(n)}


def test_a_long_thread_writes_what_each_checkpoint_adds_and_reads_each_whole(tmp_path: Path):
    queue = RunQueue(str(tmp_path / "server.db"))
    try:
        queue.put_thread("t", {}, replace=False)
        history = history_of(queue)
        parent = None
        for turn in range(40):
            values = {"messages": [message(n) for n in range(2 * turn + 2)], "turn": turn}
            history.add(
                "t", parent, values, checkpoint_id=f"c{turn}", run_id=None, metadata={}, head=None
            )
            parent = history.get("t", f"c{turn}")
            assert parent is not None and parent.values == values
        with queue.reading() as run:
            sizes = [
                len(row[0])
                for row in run(
                    "SELECT vals FROM server_checkpoints WHERE thread_id = ? ORDER BY seq", ("t",)
                ).fetchall()
            ]
        whole = [n for n, size in enumerate(sizes) if size > 1000]
        assert whole == [16, 32]  # a whole row every 16 (the first is small); others hold two
        assert max(size for n, size in enumerate(sizes) if n not in whole) < 600
        listed = history.listing("t", limit=3, before="c20")
        assert [c.checkpoint_id for c in listed] == ["c19", "c18", "c17"]
        assert listed[0].values["messages"] == [message(n) for n in range(40)]
        changed = {"messages": [message(0), {**message(1), "content": "other"}], "turn": 99}
        history.add(
            "t", listed[0], changed, checkpoint_id="edit", run_id=None, metadata={}, head=None
        )
        edit = history.get("t", "edit")
        assert edit is not None and edit.values == changed and edit.parent_id == "c19"
        assert history.latest("t") == edit
    finally:
        queue.close()


def test_a_run_asked_to_roll_back_as_it_ends_leaves_no_checkpoint_and_the_thread_as_it_was(
    tmp_path: Path,
):
    queue = RunQueue(str(tmp_path / "server.db"))
    try:
        queue.put_thread("t", {}, replace=False)
        history = history_of(queue)
        before = {"messages": [message(0)]}
        history.add("t", None, before, checkpoint_id="c0", run_id=None, metadata={}, head="r0")
        parent = history.get("t", "c0")
        queue.update_thread("t", state=before)
        now = time.time()
        ending = QueuedRun(
            "r1", "t", "a", "echo", "pending", {}, {}, "enqueue", None, None, 0, now, now
        )
        assert queue.enqueue(ending) is not None
        (claimed,) = queue.claim("w", 1)
        checkpoint = {
            "parent": parent,
            "values": {"messages": [message(0), message(1)]},
            "checkpoint_id": "c1",
            "run_id": "r1",
            "metadata": {},
            "head": "r1",
        }
        queue.request_cancel("r1", "rollback")
        changes = {"state": checkpoint["values"], "interrupts": [], "waiting_run": None}
        assert history.end("r1", "t", "success", changes, checkpoint) is True
        assert queue.run("r1") is None
        assert history.latest("t") == parent
        thread = queue.thread("t")
        assert thread is not None and (thread.state, thread.status) == (before, "idle")
        assert claimed.run_id == "r1"
    finally:
        queue.close()
