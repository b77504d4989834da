"""The SQL of `PostgresStore`: the group commit and the reads.

Every function takes a psycopg connection whose `search_path` is the store's
schema, and runs inside a transaction the caller opened.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .._core._errors import CheckpointError
from ._records import Effect, Record, RunRecord, StepRecord, ThreadHead, damaged
from ._sql import Reads, fenced, read_ids, read_thread_ids

if TYPE_CHECKING:
    import psycopg

__all__ = (
    "commit",
    "commit_alone",
    "delete_thread",
    "read_blob",
    "read_chain",
    "read_ids",
    "read_log",
    "read_thread",
    "read_thread_ids",
    "refusals",
)

_INSERT_RUNS = (
    "INSERT INTO runs (run_id, graph, structure, context, created, parent, parent_step, "
    "thread, base) "
    "SELECT * FROM unnest(%b::text[], %b::text[], %b::bytea[], %b::bytea[], %b::float8[], "
    "%b::text[], %b::int4[], %b::text[], %b::text[])"
)
_INSERT_THREADS = (
    "INSERT INTO threads (thread_id, head, created, updated) "
    "SELECT u.thread, NULL, u.created, u.created "
    "FROM unnest(%b::text[], %b::float8[]) AS u(thread, created) "
    "ON CONFLICT (thread_id) DO NOTHING"
)
# The head moves only from the head the turn started from. The division fails for a
# run that never started, as a record of one must: the commit then goes write by
# write, where `_check` names the run.
_MOVE_HEAD = (
    "WITH moved AS (UPDATE threads SET head = %(run)b::text, updated = %(at)b::float8 "
    "WHERE thread_id = %(thread)b::text AND head IS NOT DISTINCT FROM %(base)b::text) "
    "SELECT 1 / count(*) FROM runs WHERE run_id = %(run)b::text"
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
) -> list[tuple[Sequence[Record], Exception]] | None:
    """Insert `writes` and `blobs` and commit the transaction the caller began in its
    pipeline (`sync` waits for the server); return the writes refused, with errors,
    or None when the database refused one (the caller rolls back and calls
    `commit_alone`).

    Writes of a run in `lost` (its lease passed to another runner) are refused.
    The other writes go in together, with the COMMIT, in one exchange with the
    server.
    """
    refused, kept = fenced(writes, lost)
    try:
        if blobs:
            conn.execute(_INSERT_BLOBS, _columns(blobs))
        _insert(conn, [r for records in kept for r in records])
        conn.execute("COMMIT")
        sync()  # a refusal skips every statement after it, the COMMIT included
    except refusals():
        _past_refusal(sync)
        return None
    return refused


def commit_alone(
    conn: psycopg.Connection[Any],
    writes: Sequence[Sequence[Record]],
    blobs: Sequence[tuple[str, bytes]],
    lost: set[str],
    sync: Callable[[], None],
) -> list[tuple[Sequence[Record], Exception]]:
    """Like `commit`, but each write in a savepoint of its own, so that a write the
    database refuses takes no other write down.

    Nothing is prepared here: psycopg takes a statement it prepares in a pipeline
    for prepared even when an earlier refusal made the server skip it.
    """
    refused, kept = fenced(writes, lost)
    if blobs:
        conn.execute(_INSERT_BLOBS, _columns(blobs))
    for records in kept:
        conn.execute("SAVEPOINT one", prepare=False)
        try:
            _check(conn, records)
            _insert(conn, records, prepare=False)
            sync()
        except refusals() as error:
            _past_refusal(sync)
            conn.execute("ROLLBACK TO SAVEPOINT one", prepare=False)
            refused.append((records, error))
        else:
            conn.execute("RELEASE SAVEPOINT one", prepare=False)
    conn.execute("COMMIT", prepare=False)
    sync()
    return refused


def _past_refusal(sync: Callable[[], None]) -> None:
    """Bring the pipeline past a refusal, whichever call raised it.

    Most often `sync` raises it; but psycopg reads what the server has answered while
    it sends, so a refusal can surface at any later `execute`, the statements sent
    after it still waiting: they were skipped, and syncing says so.
    """
    import psycopg

    with contextlib.suppress(psycopg.errors.PipelineAborted):
        sync()


def _check(conn: psycopg.Connection[Any], records: Sequence[Record]) -> None:
    """Raise, naming it, for a run of `records` started twice or one never started."""
    started = [r.run_id for r in records if isinstance(r, RunRecord)]
    rows = conn.execute(_KNOWN, (sorted({r.run_id for r in records}),), prepare=False).fetchall()
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


def _insert(
    conn: psycopg.Connection[Any], records: Sequence[Record], *, prepare: bool | None = None
) -> None:
    """Send the statements that insert `records`: one per table, whatever their number.

    A thread's head moves where its record stands among the runs started (a
    thread's first turn and the head it makes can come in one write).
    """
    runs: list[RunRecord] = []
    steps: list[StepRecord] = []
    last: dict[tuple[str, str, str], Effect] = {}
    for r in records:
        if isinstance(r, StepRecord):
            steps.append(r)
        elif isinstance(r, RunRecord):
            runs.append(r)
        elif isinstance(r, ThreadHead):
            _insert_runs(conn, runs, prepare)
            runs = []
            head = {"run": r.run_id, "at": r.at, "thread": r.thread, "base": r.base}
            conn.execute(_MOVE_HEAD, head, prepare=prepare)
        else:
            # One statement may not upsert a row twice: of an effect written twice, the
            # last counts (and moves to the end).
            last.pop((r.run_id, r.key, r.kind), None)
            last[(r.run_id, r.key, r.kind)] = r
    _insert_runs(conn, runs, prepare)
    if steps:
        rows = (
            (
                s.run_id,
                s.seq,
                s.step,
                _path(s.path),
                s.node,
                s.next,
                s.local,
                s.steps,
                s.context,
                s.at,
                s.duration,
            )
            for s in steps
        )
        conn.execute(_INSERT_STEPS, _columns(rows), prepare=prepare)
    if last:
        effects = _columns((e.run_id, e.key, e.kind, e.value) for e in last.values())
        conn.execute(_INSERT_EFFECTS, effects, prepare=prepare)


def _insert_runs(
    conn: psycopg.Connection[Any], runs: Sequence[RunRecord], prepare: bool | None
) -> None:
    """Start `runs`, and the threads the first turns of which are among them."""
    if not runs:
        return
    rows = (
        (
            r.run_id,
            r.graph,
            r.structure,
            r.context,
            r.created,
            r.parent,
            r.parent_step,
            r.thread,
            r.base,
        )
        for r in runs
    )
    conn.execute(_INSERT_RUNS, _columns(rows), prepare=prepare)
    threads = _columns((r.thread, r.created) for r in runs if r.thread is not None)
    if threads:
        conn.execute(_INSERT_THREADS, threads, prepare=prepare)


def _columns(rows: Iterable[tuple[Any, ...]]) -> list[list[Any]]:
    """`rows` as columns: the arrays `unnest` takes (none when there are no rows)."""
    return [list(column) for column in zip(*rows, strict=True)]


def _stored_path(run_id: str, number: int, path: Any) -> tuple[str, ...]:
    """A step's path, kept as a text array (a NULL part is damage)."""
    if not all(isinstance(part, str) for part in path):
        raise damaged(run_id, f"step record {number}", f"its path holds {path!r}")
    return tuple(path)


_READS = Reads("%s", "position", _stored_path)
read_log = _READS.log
read_chain = _READS.chain
read_thread = _READS.thread


def read_blob(conn: psycopg.Connection[Any], digest: str) -> bytes | None:
    row = conn.execute("SELECT data FROM blobs WHERE digest = %s", (digest,)).fetchone()
    return None if row is None else bytes(row[0])


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
