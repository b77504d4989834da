"""The SQL of `PostgresStore`: its schema versions, the group commit and the reads.

Every function takes a psycopg connection whose `search_path` is the store's
schema, and runs inside a transaction the caller opened.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._errors import CheckpointError
from ._lease import LeaseLost
from ._records import Effect, Record, RunLog, RunRecord, StepRecord, damaged

if TYPE_CHECKING:
    import psycopg

__all__ = ("MIGRATIONS", "commit", "read_blob", "read_ids", "read_log", "refusals")

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
)
"""Schema version N is reached by running the first N scripts, in order; never edit one."""

_INSERT_RUNS = (
    "INSERT INTO runs (run_id, graph, structure, context, created, parent, parent_step) "
    "SELECT * FROM unnest(%b::text[], %b::text[], %b::bytea[], %b::bytea[], %b::float8[], "
    "%b::text[], %b::int4[])"
)
# Rows come as one array per column: the statements' text never changes, so each is
# parsed once and prepared by the server, and the arrays travel in binary. A record of
# a run that never started finds no id, and the NOT NULL column refuses it.
_INSERT_STEPS = (
    "INSERT INTO steps (run, seq, step, path, node, next, local, steps, context, at, duration) "
    "SELECT (SELECT id FROM runs r WHERE r.run_id = u.run_id), u.seq, u.step, u.path::text[], "
    "u.node, u.next, u.local, u.steps, u.context, u.at, u.duration "
    "FROM unnest(%b::text[], %b::int4[], %b::int4[], %b::text[], %b::text[], "
    "%b::text[], %b::int4[], %b::int4[], %b::bytea[], %b::float8[], %b::float8[]) "
    "AS u(run_id, seq, step, path, node, next, local, steps, context, at, duration)"
)
# A rewritten effect moves to the end, as it does in the other stores: rows go in in the
# order given (the ordinality), each taking the next position.
_INSERT_EFFECTS = (
    "INSERT INTO effects (run, key, kind, value) "
    "SELECT (SELECT id FROM runs r WHERE r.run_id = u.run_id), u.key, u.kind, u.value "
    "FROM unnest(%b::text[], %b::text[], %b::text[], %b::bytea[]) WITH ORDINALITY "
    "AS u(run_id, key, kind, value, n) ORDER BY u.n "
    "ON CONFLICT (run, key, kind) DO UPDATE "
    "SET value = excluded.value, position = nextval('effect_order')"
)
_INSERT_BLOBS = (
    "INSERT INTO blobs (digest, data) SELECT * FROM unnest(%b::text[], %b::bytea[]) "
    "ON CONFLICT DO NOTHING"
)
_KNOWN = "SELECT run_id FROM runs WHERE run_id = ANY(%b::text[])"


def refusals() -> tuple[type[Exception], ...]:
    """Errors that refuse one write: a taken run id, or a value PostgreSQL cannot keep
    (a NUL character in a text column, say)."""
    import psycopg

    return (psycopg.IntegrityError, psycopg.DataError, CheckpointError)


def commit(
    conn: psycopg.Connection[Any],
    writes: Sequence[Sequence[Record]],
    blobs: Sequence[tuple[str, bytes]],
    lost: set[str],
    sync: Callable[[], None],
) -> list[tuple[Sequence[Record], Exception]]:
    """Insert `writes` and `blobs` and commit the transaction the caller began in its
    pipeline (`sync` waits for the server); return the writes refused, with errors.

    Writes of a run in `lost` (its lease passed to another runner) are refused.
    The other writes go in together, with the COMMIT, in one exchange with the
    server; only when the database refuses one are they inserted again one by
    one, each in a savepoint, so that it takes no other write down.
    """
    refused: list[tuple[Sequence[Record], Exception]] = []
    kept = []
    for records in writes:
        gone = lost.intersection(r.run_id for r in records)
        if gone:
            refused.append((records, LeaseLost(min(gone), "another runner took it over")))
        else:
            kept.append(records)
    if blobs:
        conn.execute(_INSERT_BLOBS, ([d for d, _ in blobs], [b for _, b in blobs]))
    conn.execute("SAVEPOINT kept")
    _insert(conn, [r for records in kept for r in records])
    conn.execute("RELEASE SAVEPOINT kept")
    conn.execute("COMMIT")
    try:
        sync()  # a refusal skips every statement after it, the COMMIT included
        return refused
    except refusals():
        conn.execute("ROLLBACK TO SAVEPOINT kept")
    for records in kept:
        conn.execute("SAVEPOINT one")
        try:
            _check(conn, records)
            _insert(conn, records)
            sync()
        except refusals() as error:
            conn.execute("ROLLBACK TO SAVEPOINT one")
            refused.append((records, error))
        else:
            conn.execute("RELEASE SAVEPOINT one")
    conn.execute("COMMIT")
    sync()
    return refused


def _check(conn: psycopg.Connection[Any], records: Sequence[Record]) -> None:
    """Raise, naming it, for a run of `records` started twice or one never started."""
    started = [r.run_id for r in records if isinstance(r, RunRecord)]
    rows = conn.execute(_KNOWN, (sorted({r.run_id for r in records}),)).fetchall()
    known = {row[0] for row in rows}
    for number, run_id in enumerate(started):
        if run_id in known or run_id in started[:number]:
            raise CheckpointError(f"run {run_id!r} is already in the store")
    known.update(started)
    for r in records:
        if r.run_id not in known:
            raise CheckpointError(f"a record for run {r.run_id!r}, which never started")


_paths: dict[tuple[str, ...], str] = {}


def _path(path: tuple[str, ...]) -> str:
    """`path` as a PostgreSQL array literal (a process has few paths: they are kept)."""
    found = _paths.get(path)
    if found is None:
        quoted = ('"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"' for p in path)
        found = "{" + ",".join(quoted) + "}"
        if len(_paths) < 4096:
            _paths[path] = found
    return found


def _insert(conn: psycopg.Connection[Any], records: Sequence[Record]) -> None:
    """Send the statements that insert `records`: one per table, whatever their number."""
    runs: list[RunRecord] = []
    steps: list[StepRecord] = []
    last: dict[tuple[str, str, str], Effect] = {}
    for r in records:
        if isinstance(r, StepRecord):
            steps.append(r)
        elif isinstance(r, RunRecord):
            runs.append(r)
        else:
            # One statement may not upsert a row twice: of an effect written twice, the
            # last counts (and moves to the end).
            last.pop((r.run_id, r.key, r.kind), None)
            last[(r.run_id, r.key, r.kind)] = r
    if runs:
        conn.execute(
            _INSERT_RUNS,
            (
                [r.run_id for r in runs],
                [r.graph for r in runs],
                [r.structure for r in runs],
                [r.context for r in runs],
                [r.created for r in runs],
                [r.parent for r in runs],
                [r.parent_step for r in runs],
            ),
        )
    if steps:
        conn.execute(
            _INSERT_STEPS,
            (
                [s.run_id for s in steps],
                [s.seq for s in steps],
                [s.step for s in steps],
                [_path(s.path) for s in steps],
                [s.node for s in steps],
                [s.next for s in steps],
                [s.local for s in steps],
                [s.steps for s in steps],
                [s.context for s in steps],
                [s.at for s in steps],
                [s.duration for s in steps],
            ),
        )
    if last:
        effects = list(last.values())
        conn.execute(
            _INSERT_EFFECTS,
            (
                [e.run_id for e in effects],
                [e.key for e in effects],
                [e.kind for e in effects],
                [e.value for e in effects],
            ),
        )


def read_log(conn: psycopg.Connection[Any], run_id: str) -> RunLog | None:
    """Every record of `run_id`, or None; a damaged row raises `CheckpointError`."""
    row = conn.execute(
        "SELECT id, graph, structure, context, created, parent, parent_step "
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
