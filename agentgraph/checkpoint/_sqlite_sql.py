"""The SQL of `SQLiteStore`: its schema, the group commit and the reads.

Every function takes an `sqlite3` connection of the store's database; the
commit opens its own transaction.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from .._core._errors import CheckpointError
from ._codec import BlobDamaged
from ._records import Record, RunRecord, StepRecord, ThreadHead, damaged
from ._sql import Reads, fenced, read_ids, read_thread_ids
from ._store import BlobWrite

__all__ = (
    "MIGRATIONS",
    "SCHEMA",
    "commit",
    "delete_thread",
    "migrate",
    "read_blob",
    "read_chain",
    "read_ids",
    "read_log",
    "read_thread",
    "read_thread_ids",
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    graph TEXT NOT NULL,
    structure BLOB NOT NULL,
    context BLOB NOT NULL,
    created REAL NOT NULL,
    parent TEXT,
    parent_step INTEGER
);
CREATE TABLE IF NOT EXISTS steps (
    run INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    step INTEGER NOT NULL,
    path TEXT NOT NULL,
    node TEXT NOT NULL,
    next TEXT NOT NULL,
    local INTEGER NOT NULL,
    steps INTEGER NOT NULL,
    context BLOB NOT NULL,
    at REAL NOT NULL,
    duration REAL NOT NULL,
    PRIMARY KEY (run, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS effects (
    run INTEGER NOT NULL,
    key TEXT NOT NULL,
    kind TEXT NOT NULL,
    value BLOB NOT NULL,
    UNIQUE (run, key, kind)
);
CREATE TABLE IF NOT EXISTS leases (
    run_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    fence INTEGER NOT NULL,
    expires REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blobs (
    digest TEXT PRIMARY KEY,
    data BLOB NOT NULL
) WITHOUT ROWID;
"""

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: runs, their steps and effects, leases and blobs (files made before the
    # schema had versions are at version 1).
    tuple(s.strip() for s in SCHEMA.split(";") if s.strip()),
    # 2: threads: the turns of a conversation, and its head.
    (
        "ALTER TABLE runs ADD COLUMN thread TEXT",
        "ALTER TABLE runs ADD COLUMN base TEXT",
        "CREATE INDEX runs_by_thread ON runs (thread, id) WHERE thread IS NOT NULL",
        "CREATE TABLE threads (thread_id TEXT PRIMARY KEY, head TEXT, "
        "created REAL NOT NULL, updated REAL NOT NULL) WITHOUT ROWID",
    ),
)
"""Schema version N (SQLite's `user_version`) is reached by running the first N
scripts, in order; never edit one."""


def migrate(conn: sqlite3.Connection, label: str) -> None:
    """Bring the database to the newest schema version, in one immediate transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
        if version == 0 and columns:  # made before the schema had versions, or not ours
            if not {"id", "run_id", "graph", "context"} <= columns:
                raise CheckpointError(
                    f"{label} cannot be read: its runs table is not a checkpoint store's"
                )
            version = 1
        if version > len(MIGRATIONS):
            raise CheckpointError(
                f"{label} is at schema version {version}, written by a newer agentgraph; "
                f"this one knows versions up to {len(MIGRATIONS)}"
            )
        for script in MIGRATIONS[version:]:
            for statement in script:
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


_INSERT_RUN = (
    "INSERT INTO runs (run_id, graph, structure, context, created, parent, parent_step, "
    "thread, base) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_THREAD = (
    "INSERT INTO threads (thread_id, head, created, updated) VALUES (?, NULL, ?, ?) "
    "ON CONFLICT (thread_id) DO NOTHING"
)
_MOVE_HEAD = "UPDATE threads SET head = ?, updated = ? WHERE thread_id = ? AND head IS ?"
_INSERT_STEP = "INSERT INTO steps VALUES "
_INSERT_EFFECT = "INSERT OR REPLACE INTO effects (run, key, kind, value) VALUES "
_ROWS = 500
"""Rows per INSERT statement: well under SQLite's limit of 32,766 parameters."""


_REFUSED = (sqlite3.IntegrityError, CheckpointError)  # one write's records are refused


def commit(
    conn: sqlite3.Connection,
    writes: Sequence[Sequence[Record]],
    blobs: Sequence[BlobWrite],
    ids: dict[str, int],
    fences: dict[str, int],
) -> list[tuple[Sequence[Record], Exception]]:
    """Commit `writes` and `blobs` in one transaction; return the writes refused, with errors.

    A write of a run whose lease this store took is refused when the run's
    fencing number in the database is no longer the one taken (another
    runner has the run now). All other writes go in together first (few
    statements); only when the database refuses one are they inserted again
    one by one, each in a savepoint, so that a refused write takes no other
    write down with it.
    """
    refused: list[tuple[Sequence[Record], Exception]] = []
    with _transaction(conn, ids):
        lost = _lost_leases(conn, {r.run_id for w in writes for r in w} & fences.keys(), fences)
        if lost:
            refused, writes = fenced(writes, lost)
        _insert_blobs(conn, blobs)
        try:
            conn.execute("SAVEPOINT together")
            _insert_records(conn, [r for records in writes for r in records], ids)
            conn.execute("RELEASE together")
            return refused
        except _REFUSED:
            conn.execute("ROLLBACK TO together")
            conn.execute("RELEASE together")
        for records in writes:
            conn.execute("SAVEPOINT write")
            known = dict(ids)
            try:
                _insert_records(conn, records, ids)
            except _REFUSED as error:
                conn.execute("ROLLBACK TO write")
                ids.clear()
                ids.update(known)
                refused.append((records, error))
            conn.execute("RELEASE write")
    return refused


def _lost_leases(conn: sqlite3.Connection, runs: set[str], fences: dict[str, int]) -> set[str]:
    """The runs among `runs` whose fencing number in the database is not the one taken."""
    lost = set()
    for run_id in runs:
        row = conn.execute("SELECT fence FROM leases WHERE run_id = ?", (run_id,)).fetchone()
        if row is None or row[0] != fences[run_id]:
            lost.add(run_id)
    return lost


def _insert_blobs(conn: sqlite3.Connection, blobs: Sequence[BlobWrite]) -> None:
    for blob in blobs:
        conn.execute(
            "INSERT OR IGNORE INTO blobs (digest, data) VALUES (?, ?)", (blob.digest, blob.data)
        )


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection, ids: dict[str, int]) -> Iterator[None]:
    """BEGIN ... COMMIT, or ROLLBACK and forget the run ids cached meanwhile."""
    known = dict(ids)
    conn.execute("BEGIN IMMEDIATE")  # the write lock first: its wait honours the busy timeout
    try:
        yield
        conn.execute("COMMIT")
    except Exception:
        # SQLite rolls back by itself after some errors (a full disk); the error that
        # got us here is the one to report, not a failed ROLLBACK.
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        ids.clear()
        ids.update(known)
        raise


def _insert_records(
    conn: sqlite3.Connection, records: Sequence[Record], ids: dict[str, int]
) -> None:
    steps: list[tuple[Any, ...]] = []
    effects: list[tuple[Any, ...]] = []
    for r in records:
        if isinstance(r, RunRecord):
            started = (r.run_id, r.graph, r.structure, r.context, r.created, r.parent)
            try:
                cursor = conn.execute(_INSERT_RUN, (*started, r.parent_step, r.thread, r.base))
            except sqlite3.IntegrityError as error:
                raise CheckpointError(f"run {r.run_id!r} is already in the store") from error
            assert cursor.lastrowid is not None
            ids[r.run_id] = cursor.lastrowid
            if r.thread is not None:
                conn.execute(_INSERT_THREAD, (r.thread, r.created, r.created))
        elif isinstance(r, ThreadHead):
            _run(conn, ids, r.run_id)
            conn.execute(_MOVE_HEAD, (r.run_id, r.at, r.thread, r.base))
        elif isinstance(r, StepRecord):
            run, path = _run(conn, ids, r.run_id), orjson.dumps(r.path).decode()
            row = (r.seq, r.step, path, r.node, r.next, r.local, r.steps, r.context)
            steps.append((run, *row, r.at, r.duration))
        else:
            effects.append((_run(conn, ids, r.run_id), r.key, r.kind, r.value))
    _insert(conn, _INSERT_STEP, steps)
    _insert(conn, _INSERT_EFFECT, effects)


def _run(conn: sqlite3.Connection, ids: dict[str, int], run_id: str) -> int:
    found = ids.get(run_id)
    if found is None:
        row = conn.execute("SELECT id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise CheckpointError(f"a record for run {run_id!r}, which never started")
        found = ids[run_id] = int(row[0])
    return found


def _insert(conn: sqlite3.Connection, head: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert `rows` with few statements.

    sqlite3 lets go of the GIL around each statement it steps; with one row per
    statement, the event loop would hand the GIL back and forth once per step.
    """
    if not rows:
        return
    one = "(" + ", ".join("?" * len(rows[0])) + ")"
    for start in range(0, len(rows), _ROWS):
        chunk = rows[start : start + _ROWS]
        values = [value for row in chunk for value in row]
        conn.execute(head + ", ".join([one] * len(chunk)), values)


def _path(run_id: str, number: int, stored: Any) -> tuple[Any, ...]:
    """A step's path, kept as a JSON list (its parts are checked with the rest of the log)."""
    try:
        path = orjson.loads(stored)
    except (orjson.JSONDecodeError, TypeError) as exc:
        raise damaged(run_id, f"step record {number}", f"its path is not JSON ({exc})") from exc
    if not isinstance(path, list):
        raise damaged(run_id, f"step record {number}", f"its path is {stored!r}, not a list")
    return tuple(path)


_READS = Reads("?", "rowid", _path)
read_log = _READS.log
read_chain = _READS.chain
read_thread = _READS.thread


def read_blob(conn: sqlite3.Connection, digest: str) -> bytes | None:
    row = conn.execute("SELECT data FROM blobs WHERE digest = ?", (digest,)).fetchone()
    if row is None:
        return None
    if not isinstance(row[0], bytes):  # SQLite keeps any type in any column
        raise BlobDamaged(
            f"blob {digest!r} is damaged: it holds {type(row[0]).__name__}, not bytes"
        )
    return row[0]


def delete_thread(conn: sqlite3.Connection, thread_id: str) -> bool:
    """Delete the thread and its runs in one transaction; False when there was none."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = conn.execute("SELECT 1 FROM threads WHERE thread_id = ?", (thread_id,)).fetchone()
        conn.execute("DELETE FROM threads WHERE thread_id = ?", (thread_id,))
        runs = conn.execute("SELECT id, run_id FROM runs WHERE thread = ?", (thread_id,)).fetchall()
        for rid, run_id in runs:
            conn.execute("DELETE FROM steps WHERE run = ?", (rid,))
            conn.execute("DELETE FROM effects WHERE run = ?", (rid,))
            conn.execute("DELETE FROM leases WHERE run_id = ?", (run_id,))
        conn.execute("DELETE FROM runs WHERE thread = ?", (thread_id,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return found is not None
