"""The SQL of `PostgresStore`: its schema versions, the group commit and the reads.

Every function takes a psycopg connection whose `search_path` is the store's
schema, and runs inside a transaction the caller opened.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._errors import CheckpointError
from ._lease import LeaseLost
from ._records import (
    Effect,
    Record,
    RunLog,
    RunRecord,
    StepRecord,
    ThreadHead,
    ThreadLog,
    damaged,
)

if TYPE_CHECKING:
    import psycopg

__all__ = (
    "MIGRATIONS",
    "commit",
    "delete_thread",
    "read_blob",
    "read_ids",
    "read_log",
    "read_thread",
    "read_thread_ids",
)

MIGRATIONS: tuple[str, ...] = (
    # 1: runs, their steps and effects, leases and blobs.
    """
    CREATE TABLE runs (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id TEXT NOT NULL UNIQUE,
        graph TEXT NOT NULL,
        structure BYTEA NOT NULL,
        context BYTEA NOT NULL,
        created DOUBLE PRECISION NOT NULL,
        parent TEXT,
        parent_step INTEGER
    );
    CREATE TABLE steps (
        run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        step INTEGER NOT NULL,
        path TEXT[] NOT NULL,
        node TEXT NOT NULL,
        next TEXT NOT NULL,
        local INTEGER NOT NULL,
        steps INTEGER NOT NULL,
        context BYTEA NOT NULL,
        at DOUBLE PRECISION NOT NULL,
        duration DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (run, seq)
    );
    CREATE SEQUENCE effect_order;
    CREATE TABLE effects (
        run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        kind TEXT NOT NULL,
        value BYTEA NOT NULL,
        position BIGINT NOT NULL DEFAULT nextval('effect_order'),
        PRIMARY KEY (run, key, kind)
    );
    CREATE INDEX effects_in_order ON effects (run, position);
    CREATE TABLE leases (
        run_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        fence BIGINT NOT NULL,
        expires DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE blobs (
        digest TEXT PRIMARY KEY,
        data BYTEA NOT NULL
    );
    """,
    # 2: threads: the turns of a conversation, and its head.
    """
    ALTER TABLE runs ADD COLUMN thread TEXT;
    ALTER TABLE runs ADD COLUMN base TEXT;
    CREATE INDEX runs_by_thread ON runs (thread, id) WHERE thread IS NOT NULL;
    CREATE TABLE threads (
        thread_id TEXT PRIMARY KEY,
        head TEXT,
        created DOUBLE PRECISION NOT NULL,
        updated DOUBLE PRECISION NOT NULL
    );
    """,
)
"""Schema version N is reached by running the first N scripts, in order; never edit one."""

_INSERT_RUN = (
    "INSERT INTO runs (run_id, graph, structure, context, created, parent, parent_step, "
    "thread, base) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (run_id) DO NOTHING RETURNING id"
)
_INSERT_THREAD = (
    "INSERT INTO threads (thread_id, head, created, updated) VALUES (%s, NULL, %s, %s) "
    "ON CONFLICT (thread_id) DO NOTHING"
)
_MOVE_HEAD = (
    "UPDATE threads SET head = %s, updated = %s "
    "WHERE thread_id = %s AND head IS NOT DISTINCT FROM %s"
)
_INSERT_STEP = "INSERT INTO steps VALUES "
# A rewritten effect moves to the end, as it does in the other stores.
_INSERT_EFFECT = "INSERT INTO effects (run, key, kind, value) VALUES "
_UPSERT = (
    " ON CONFLICT (run, key, kind) DO UPDATE "
    "SET value = excluded.value, position = nextval('effect_order')"
)
_ROWS = 1000
"""Rows per INSERT statement: well under PostgreSQL's limit of 65,535 parameters."""


def _refusals() -> tuple[type[Exception], ...]:
    """Errors that refuse one write: a taken run id, or a value PostgreSQL cannot keep
    (a NUL character in a text column, say)."""
    import psycopg

    return (psycopg.IntegrityError, psycopg.DataError, CheckpointError)


def commit(
    conn: psycopg.Connection[Any],
    writes: Sequence[Sequence[Record]],
    blobs: Sequence[tuple[str, bytes]],
    ids: dict[str, int],
    fences: dict[str, int],
) -> list[tuple[Sequence[Record], Exception]]:
    """Commit `writes` and `blobs` in one transaction; return the writes refused, with errors.

    Writes of a run whose lease this store took are refused when the run's
    fencing number is no longer the one taken. The lease rows are locked for
    the transaction, so a take waits for this commit. The other writes go in
    together; only when the database refuses one are they inserted again
    one by one, each in a savepoint, so that it takes no other write down.
    """
    refused: list[tuple[Sequence[Record], Exception]] = []
    known = dict(ids)
    try:
        with conn.transaction():
            lost = _lost_leases(conn, {r.run_id for w in writes for r in w} & fences.keys(), fences)
            kept = []
            for records in writes:
                gone = lost.intersection(r.run_id for r in records)
                if gone:
                    refused.append((records, LeaseLost(min(gone), "another runner took it over")))
                else:
                    kept.append(records)
            if blobs:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO blobs (digest, data) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                        blobs,
                    )
            try:
                with conn.transaction():
                    _insert(conn, [r for records in kept for r in records], ids)
                return refused
            except _refusals():
                ids.clear()
                ids.update(known)
            for records in kept:
                before = dict(ids)
                try:
                    with conn.transaction():
                        _insert(conn, records, ids)
                except _refusals() as error:
                    ids.clear()
                    ids.update(before)
                    refused.append((records, error))
    except Exception:
        ids.clear()
        ids.update(known)
        raise
    return refused


def _lost_leases(conn: psycopg.Connection[Any], runs: set[str], fences: dict[str, int]) -> set[str]:
    """The runs among `runs` whose fencing number is not the one taken; their rows locked."""
    if not runs:
        return set()
    rows = conn.execute(
        "SELECT run_id, fence FROM leases WHERE run_id = ANY(%s) ORDER BY run_id FOR SHARE",
        (sorted(runs),),
    ).fetchall()
    current = dict(rows)
    return {run_id for run_id in runs if current.get(run_id) != fences[run_id]}


def _insert(conn: psycopg.Connection[Any], records: Sequence[Record], ids: dict[str, int]) -> None:
    steps: list[tuple[Any, ...]] = []
    effects: list[tuple[Any, ...]] = []
    for r in records:
        if isinstance(r, RunRecord):
            started = (r.run_id, r.graph, r.structure, r.context, r.created, r.parent)
            row = conn.execute(_INSERT_RUN, (*started, r.parent_step, r.thread, r.base)).fetchone()
            if row is None:
                raise CheckpointError(f"run {r.run_id!r} is already in the store")
            ids[r.run_id] = int(row[0])
            if r.thread is not None:
                conn.execute(_INSERT_THREAD, (r.thread, r.created, r.created))
        elif isinstance(r, ThreadHead):
            _run(conn, ids, r.run_id)
            conn.execute(_MOVE_HEAD, (r.run_id, r.at, r.thread, r.base))
        elif isinstance(r, StepRecord):
            row_ = (r.seq, r.step, list(r.path), r.node, r.next, r.local, r.steps, r.context)
            steps.append((_run(conn, ids, r.run_id), *row_, r.at, r.duration))
        else:
            effects.append((_run(conn, ids, r.run_id), r.key, r.kind, r.value))
    _insert_rows(conn, _INSERT_STEP, steps)
    # One statement may not upsert a row twice: of an effect written twice, the last counts.
    last = {(run, key, kind): (run, key, kind, value) for run, key, kind, value in effects}
    _insert_rows(conn, _INSERT_EFFECT, list(last.values()), _UPSERT)


def _insert_rows(
    conn: psycopg.Connection[Any], head: str, rows: list[tuple[Any, ...]], tail: str = ""
) -> None:
    """Insert `rows` with few statements.

    psycopg lets go of the GIL around each exchange with the server; with one exchange
    per row, the event loop's thread would wait for it back once per row.
    """
    if not rows:
        return
    one = "(" + ", ".join(["%s"] * len(rows[0])) + ")"
    for start in range(0, len(rows), _ROWS):
        chunk = rows[start : start + _ROWS]
        values = [value for row in chunk for value in row]
        conn.execute(head + ", ".join([one] * len(chunk)) + tail, values)


def _run(conn: psycopg.Connection[Any], ids: dict[str, int], run_id: str) -> int:
    found = ids.get(run_id)
    if found is None:
        row = conn.execute("SELECT id FROM runs WHERE run_id = %s", (run_id,)).fetchone()
        if row is None:
            raise CheckpointError(f"a record for run {run_id!r}, which never started")
        found = ids[run_id] = int(row[0])
    return found


def read_log(conn: psycopg.Connection[Any], run_id: str) -> RunLog | None:
    """Every record of `run_id`, or None; a damaged row raises `CheckpointError`."""
    row = conn.execute(
        "SELECT id, graph, structure, context, created, parent, parent_step, thread, base "
        "FROM runs WHERE run_id = %s",
        (run_id,),
    ).fetchone()
    if row is None:
        return None
    rid, *fields = row
    steps = conn.execute(
        "SELECT seq, step, path, node, next, local, steps, context, at, duration "
        "FROM steps WHERE run = %s ORDER BY seq",
        (rid,),
    ).fetchall()
    effects = conn.execute(
        "SELECT key, kind, value FROM effects WHERE run = %s ORDER BY position", (rid,)
    ).fetchall()
    for number, (_, _, path, *_rest) in enumerate(steps, 1):
        if not all(isinstance(part, str) for part in path):
            raise damaged(run_id, f"step record {number}", f"its path holds {path!r}")
    return RunLog(
        RunRecord(run_id, *fields),
        tuple(StepRecord(run_id, s, step, tuple(path), *rest) for s, step, path, *rest in steps),
        tuple(Effect(run_id, *e) for e in effects),
    )


def read_ids(conn: psycopg.Connection[Any]) -> tuple[str, ...]:
    return tuple(r[0] for r in conn.execute("SELECT run_id FROM runs ORDER BY id"))


def read_blob(conn: psycopg.Connection[Any], digest: str) -> bytes | None:
    row = conn.execute("SELECT data FROM blobs WHERE digest = %s", (digest,)).fetchone()
    return None if row is None else bytes(row[0])


def read_thread(conn: psycopg.Connection[Any], thread_id: str) -> ThreadLog | None:
    """The thread's head and turns, or None."""
    row = conn.execute(
        "SELECT head, created, updated FROM threads WHERE thread_id = %s", (thread_id,)
    ).fetchone()
    if row is None:
        return None
    runs = conn.execute(
        "SELECT run_id, base FROM runs WHERE thread = %s ORDER BY id", (thread_id,)
    ).fetchall()
    return ThreadLog(thread_id, row[0], row[1], row[2], tuple((r, b) for r, b in runs))


def read_thread_ids(conn: psycopg.Connection[Any]) -> tuple[str, ...]:
    return tuple(r[0] for r in conn.execute("SELECT thread_id FROM threads ORDER BY created"))


def delete_thread(conn: psycopg.Connection[Any], thread_id: str) -> bool:
    """Delete the thread and its runs (steps and effects cascade); False when there was none."""
    found = conn.execute(
        "DELETE FROM threads WHERE thread_id = %s RETURNING thread_id", (thread_id,)
    ).fetchone()
    conn.execute(
        "DELETE FROM leases WHERE run_id IN (SELECT run_id FROM runs WHERE thread = %s)",
        (thread_id,),
    )
    conn.execute("DELETE FROM runs WHERE thread = %s", (thread_id,))
    return found is not None
