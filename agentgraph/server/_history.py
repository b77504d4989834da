"""A thread's checkpoints, as the clients' `get_state` and `get_history` see them.

A checkpoint is written when a run finishes, when it stops on an interrupt,
and by each `update_state`; it names its parent (the checkpoint its run or
update started from), so a run from an earlier checkpoint starts a branch.
The newest checkpoint of a thread is its current state.

Each also names the agentgraph run a run from it continues (`head`: the
thread turn whose final context its values are; None for one `update_state`
wrote and for an interrupt, until a worker makes a turn of its values) and,
for an interrupt, the agentgraph run waiting for the answer (`waiting`: the
run, the turn it went on from, and its steps and effects as they were when
it asked).

Values are stored as what they change: the number of the parent's messages
kept, the messages added, and the other keys; every `_SNAPSHOT`th checkpoint
of a branch is stored whole, so a checkpoint is read from at most that many
rows and a turn writes what it adds, however long the thread.
"""

from __future__ import annotations

import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import orjson

from ._queue import RunQueue

__all__ = ("History", "StoredCheckpoint", "checkpoint_id_for", "history_of")

_SNAPSHOT = 16
"""A branch stores its values whole at least once every this many checkpoints."""

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS server_checkpoints (
    thread_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    parent_id TEXT,
    run_id TEXT,
    step INTEGER NOT NULL,
    vals BLOB NOT NULL,
    chain INTEGER NOT NULL,
    next TEXT NOT NULL,
    interrupts TEXT NOT NULL,
    metadata TEXT NOT NULL,
    head TEXT,
    waiting TEXT,
    created_at REAL NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id)
)
""",
    "CREATE INDEX IF NOT EXISTS server_checkpoints_order ON server_checkpoints (thread_id, seq)",
    "CREATE INDEX IF NOT EXISTS server_checkpoints_run ON server_checkpoints (run_id)",
)

_COLUMNS = (
    "thread_id, checkpoint_id, seq, parent_id, run_id, step, chain, next, interrupts, "
    "metadata, head, waiting, created_at"
)


@attrs.frozen
class StoredCheckpoint:
    """One checkpoint of a thread, its values decoded."""

    thread_id: str
    checkpoint_id: str
    seq: int
    parent_id: str | None
    run_id: str | None
    step: int
    chain: int
    next: list[str]
    interrupts: list[Any]
    metadata: dict[str, Any]
    head: str | None
    waiting: dict[str, Any] | None
    created_at: float
    values: dict[str, Any]


def checkpoint_id_for(run_id: str) -> str:
    """The id of the checkpoint a run writes as it ends (the same if it ends twice)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"agentgraph:{run_id}/checkpoint"))


def _delta(parent: Mapping[str, Any] | None, values: Mapping[str, Any], chain: int) -> bytes:
    """`values` as what they change of `parent`'s (whole when `chain` is 0)."""
    messages = list(values.get("messages") or ())
    rest = {key: value for key, value in values.items() if key != "messages"}
    kept = 0
    if parent is not None and chain:
        before = parent.get("messages") or ()
        for old, new in zip(before, messages, strict=False):
            if old != new:
                break
            kept += 1
    return orjson.dumps({"kept": kept, "added": messages[kept:], "rest": rest})


def _values(blobs: Sequence[bytes]) -> dict[str, Any]:
    """Values from a whole checkpoint's blob and the changes after it, oldest first."""
    messages: list[Any] = []
    rest: dict[str, Any] = {}
    for blob in blobs:
        change = orjson.loads(blob)
        messages = [*messages[: change["kept"]], *change["added"]]
        rest = change["rest"]
    return {"messages": messages, **rest}


class History:
    """The checkpoints of the threads of a queue's database.

    Methods block on the database, like the queue's: call them off the event loop.
    """

    def __init__(self, queue: RunQueue) -> None:
        self.queue = queue
        schema = list(_SCHEMA)
        if queue.postgres:
            schema = [
                s.replace(" REAL", " DOUBLE PRECISION").replace("BLOB", "BYTEA") for s in schema
            ]
        with queue.transaction() as run:
            if queue.postgres:  # processes starting at once would race to create the table
                run("SELECT pg_advisory_xact_lock(hashtext('agentgraph.server_checkpoints'))", ())
            for statement in schema:
                run(statement, ())

    # -- reading ---------------------------------------------------------------------------
    def _decoded(self, run: Any, rows: Sequence[Any]) -> list[StoredCheckpoint]:
        """Checkpoints from their rows (`_COLUMNS`, then `vals`), in the rows' order.

        They are decoded oldest first, so one whose parent is among them goes on
        from it; any other reads its branch back to a whole row in one query.
        """
        values: dict[str, dict[str, Any]] = {}
        for row in sorted(rows, key=lambda row: row[2]):
            change = orjson.loads(row[13])
            parent = values.get(row[3])
            if change["kept"] == 0 or parent is not None:
                kept = [] if parent is None else parent["messages"][: change["kept"]]
                values[row[1]] = {"messages": [*kept, *change["added"]], **change["rest"]}
                continue
            blobs = run(
                "WITH RECURSIVE up(checkpoint_id, parent_id, chain, vals, depth) AS ("
                " SELECT checkpoint_id, parent_id, chain, vals, 0 FROM server_checkpoints"
                " WHERE thread_id = ? AND checkpoint_id = ?"
                " UNION ALL SELECT c.checkpoint_id, c.parent_id, c.chain, c.vals, up.depth + 1"
                " FROM server_checkpoints AS c JOIN up ON c.checkpoint_id = up.parent_id"
                " WHERE c.thread_id = ? AND up.chain > 0"
                ") SELECT vals FROM up ORDER BY depth DESC",
                (row[0], row[1], row[0]),
            ).fetchall()
            values[row[1]] = _values([bytes(b[0]) for b in blobs])
        return [
            StoredCheckpoint(
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                row[5],
                row[6],
                orjson.loads(row[7]),
                orjson.loads(row[8]),
                orjson.loads(row[9]),
                row[10],
                None if row[11] is None else orjson.loads(row[11]),
                row[12],
                values[row[1]],
            )
            for row in rows
        ]

    def _read(self, sql: str, params: Sequence[Any]) -> list[StoredCheckpoint]:
        with self.queue.reading() as run:
            rows = run(f"SELECT {_COLUMNS}, vals FROM server_checkpoints {sql}", params).fetchall()
            return self._decoded(run, rows)

    def get(self, thread_id: str, checkpoint_id: str) -> StoredCheckpoint | None:
        found = self._read("WHERE thread_id = ? AND checkpoint_id = ?", (thread_id, checkpoint_id))
        return found[0] if found else None

    def latest(self, thread_id: str) -> StoredCheckpoint | None:
        """The thread's current checkpoint: its newest."""
        found = self._read("WHERE thread_id = ? ORDER BY seq DESC LIMIT 1", (thread_id,))
        return found[0] if found else None

    def listing(
        self,
        thread_id: str,
        *,
        limit: int,
        before: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[StoredCheckpoint]:
        """The thread's checkpoints newest first, older than `before`, matching `metadata`."""
        where, params = "WHERE thread_id = ?", [thread_id]
        if before is not None:
            where += (
                " AND seq < (SELECT seq FROM server_checkpoints "
                "WHERE thread_id = ? AND checkpoint_id = ?)"
            )
            params += [thread_id, before]
        if not metadata:
            return self._read(f"{where} ORDER BY seq DESC LIMIT ?", (*params, limit))
        with self.queue.reading() as run:
            rows = run(
                f"SELECT checkpoint_id, metadata FROM server_checkpoints {where} ORDER BY seq DESC",
                params,
            ).fetchall()
        wanted = [
            row[0]
            for row in rows
            if all(orjson.loads(row[1]).get(k) == v for k, v in metadata.items())
        ][:limit]
        return [c for c in (self.get(thread_id, cid) for cid in wanted) if c is not None]

    # -- writing ---------------------------------------------------------------------------
    def _insert(
        self,
        run: Any,
        thread_id: str,
        parent: StoredCheckpoint | None,
        values: Mapping[str, Any],
        *,
        checkpoint_id: str,
        run_id: str | None,
        metadata: Mapping[str, Any],
        head: str | None,
        waiting: Mapping[str, Any] | None = None,
        interrupts: Sequence[Any] = (),
        next_nodes: Sequence[str] = (),
    ) -> None:
        seq = run(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM server_checkpoints WHERE thread_id = ?",
            (thread_id,),
        ).fetchone()[0]
        chain = 0 if parent is None or parent.chain + 1 >= _SNAPSHOT else parent.chain + 1
        step = 0 if parent is None else parent.step + 1
        kind = "ON CONFLICT (thread_id, checkpoint_id) DO NOTHING"
        run(
            f"INSERT INTO server_checkpoints ({_COLUMNS}, vals) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) {kind}",
            (
                thread_id,
                checkpoint_id,
                seq,
                None if parent is None else parent.checkpoint_id,
                run_id,
                step,
                chain,
                orjson.dumps(list(next_nodes)).decode(),
                orjson.dumps(list(interrupts)).decode(),
                orjson.dumps({**metadata, "step": step}).decode(),
                head,
                None if waiting is None else orjson.dumps(dict(waiting)).decode(),
                time.time(),
                _delta(None if parent is None else parent.values, values, chain),
            ),
        )

    def add(
        self,
        thread_id: str,
        parent: StoredCheckpoint | None,
        values: Mapping[str, Any],
        **fields: Any,
    ) -> None:
        """Write a checkpoint after `parent` (None: the thread's first)."""
        with self.queue.transaction(thread=thread_id) as run:
            self._insert(run, thread_id, parent, values, **fields)

    def update(
        self,
        thread_id: str,
        parent: StoredCheckpoint | None,
        values: Mapping[str, Any],
        **fields: Any,
    ) -> None:
        """Write the checkpoint of an `update_state` and make its values (and interrupt,
        if it keeps one) the thread's."""
        with self.queue.transaction(thread=thread_id) as run:
            self._insert(run, thread_id, parent, values, **fields)
            waiting = fields.get("waiting")
            interrupts = list(fields.get("interrupts") or ())
            run(
                "UPDATE server_threads SET state = ?, interrupts = ?, waiting_run = ?, "
                "status = ?, updated_at = ? WHERE thread_id = ?",
                (
                    orjson.dumps(dict(values)).decode(),
                    orjson.dumps(interrupts).decode(),
                    None if waiting is None else waiting["run"],
                    "interrupted" if interrupts else "idle",
                    time.time(),
                    thread_id,
                ),
            )

    def set_head(self, thread_id: str, checkpoint_id: str, head: str) -> None:
        """The agentgraph turn made of an `update_state` checkpoint's values."""
        with self.queue.transaction() as run:
            run(
                "UPDATE server_checkpoints SET head = ? WHERE thread_id = ? AND checkpoint_id = ?",
                (head, thread_id, checkpoint_id),
            )

    def end(
        self,
        run_id: str,
        thread_id: str,
        status: str,
        thread_changes: dict[str, Any],
        checkpoint: Mapping[str, Any] | None = None,
    ) -> bool:
        """End a run as the queue's `finish` does, writing its `checkpoint` (the arguments
        of `add`) in the same transaction; or, when a client asked for its rollback,
        roll it back instead (True); a run deleted with its thread writes nothing (True)."""
        with self.queue.transaction(thread=thread_id) as run:
            cancel = run("SELECT cancel FROM server_runs WHERE run_id = ?", (run_id,)).fetchall()
            if not cancel:
                # Deleted with its thread while it ran: what it wrote since goes too.
                run("DELETE FROM server_events WHERE run_id = ?", (run_id,))
                return True
            if cancel[0][0] == "rollback":
                self._roll_back(run, thread_id, run_id)
                return True
            # One round trip for the end's writes, but for the reads among them.
            with self.queue.batched():
                if checkpoint is not None:
                    self._insert(run, thread_id, **checkpoint)
                self.queue.finishing(run, run_id, thread_id, status, thread_changes)
        return False

    def roll_back(self, thread_id: str, run_id: str | None) -> None:
        """Delete run `run_id` with its events and checkpoints (None: none), and set the
        thread back to its newest checkpoint left: values, interrupt and status."""
        with self.queue.transaction(thread=thread_id) as run:
            self._roll_back(run, thread_id, run_id)

    def _roll_back(self, run: Any, thread_id: str, run_id: str | None) -> None:
        if run_id is not None:
            run("DELETE FROM server_checkpoints WHERE run_id = ?", (run_id,))
            run("DELETE FROM server_events WHERE run_id = ?", (run_id,))
            run("DELETE FROM server_runs WHERE run_id = ?", (run_id,))
        last = run(
            "SELECT status FROM server_runs WHERE thread_id = ? "
            "AND status IN ('success', 'error', 'timeout', 'interrupted') "
            "ORDER BY created_at DESC LIMIT 1",
            (thread_id,),
        ).fetchall()
        latest = self._read_in(run, thread_id)
        interrupts = [] if latest is None else latest.interrupts
        waiting = None if latest is None else latest.waiting
        status = "interrupted" if interrupts else "idle"
        if last and last[0][0] == "error":
            status = "error"
        run(
            "UPDATE server_threads SET state = ?, interrupts = ?, waiting_run = ?, "
            "status = ?, updated_at = ? WHERE thread_id = ?",
            (
                orjson.dumps({} if latest is None else latest.values).decode(),
                orjson.dumps(interrupts).decode(),
                None if waiting is None else waiting["run"],
                status,
                time.time(),
                thread_id,
            ),
        )
        run(
            "UPDATE server_threads SET status = 'busy' WHERE thread_id = ? AND EXISTS "
            "(SELECT 1 FROM server_runs WHERE thread_id = ? "
            "AND status IN ('pending', 'running'))",
            (thread_id, thread_id),
        )

    def _read_in(self, run: Any, thread_id: str) -> StoredCheckpoint | None:
        rows = run(
            f"SELECT {_COLUMNS}, vals FROM server_checkpoints WHERE thread_id = ? "
            "ORDER BY seq DESC LIMIT 1",
            (thread_id,),
        ).fetchall()
        found = self._decoded(run, rows)
        return found[0] if found else None

    def copy(self, source: str, target: str) -> None:
        """Give thread `target` the checkpoints of `source`, under the same ids."""
        with self.queue.transaction(thread=target) as run:
            run(
                f"INSERT INTO server_checkpoints ({_COLUMNS}, vals) "
                f"SELECT ?, {_COLUMNS.split(', ', 1)[1]}, vals FROM server_checkpoints "
                "WHERE thread_id = ?",
                (target, source),
            )

    def delete(self, thread_id: str) -> None:
        with self.queue.transaction() as run:
            run("DELETE FROM server_checkpoints WHERE thread_id = ?", (thread_id,))


_histories: weakref.WeakKeyDictionary[RunQueue, History] = weakref.WeakKeyDictionary()


def history_of(queue: RunQueue) -> History:
    """The checkpoints kept beside `queue` (their table made on first use)."""
    found = _histories.get(queue)
    if found is None:
        found = _histories[queue] = History(queue)
    return found
