"""The run queue, kept in the checkpoint store's database (SQLite or PostgreSQL) beside its tables.

A run's whole life is here: queued (`pending`), claimed by a worker
(`running`, with the worker's name and a claim that lapses unless renewed),
its events (one row each, numbered from 1 within the run), and its end.
Threads keep their status, their latest values and the interrupt waiting for
an answer. Any process that opens the database can answer for any run.

On PostgreSQL, workers claim with `SELECT … FOR UPDATE SKIP LOCKED`, so
any number of them on any number of machines share the queue and each run
is claimed once; a queued run is announced with `NOTIFY agentgraph_runs`,
which wakes the workers listening (`listen`).

The `owner` columns are unused so far: they hold the room authorization and
per-user isolation need, as `server_crons` holds the room for scheduled runs.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import orjson

from ._connections import Connections
from ._signals import EVENTS_CHANNEL, RunSignals, signals_for

__all__ = ("CLAIM_TERM", "CHANNEL", "QueuedRun", "RunQueue", "StoredThread", "is_postgres")

CHANNEL = "agentgraph_runs"
"""The PostgreSQL channel a queued run is announced on."""

POSTGRES_CONNECTIONS = 8
"""Connections a queue opens at most on PostgreSQL, as its concurrent callers need them."""

FOLLOW_UPS_YIELD = 5.0
"""Seconds at most a ready follow-up (a run queued while its thread was busy) lets
runs of idle threads go first."""

CLAIM_TERM = 45.0
"""Seconds a worker's claim on a run lasts unless renewed; longer than a checkpoint lease."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS server_threads (
    thread_id TEXT PRIMARY KEY,
    status TEXT NOT NULL DEFAULT 'idle',
    metadata TEXT NOT NULL DEFAULT '{}',
    state TEXT NOT NULL DEFAULT '{}',
    interrupts TEXT NOT NULL DEFAULT '[]',
    waiting_run TEXT,
    owner TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS server_runs (
    run_id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    assistant_id TEXT NOT NULL,
    graph_id TEXT NOT NULL,
    status TEXT NOT NULL,
    kwargs TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    multitask_strategy TEXT NOT NULL DEFAULT 'enqueue',
    graph_run TEXT,
    cancel TEXT,
    claimed_by TEXT,
    claimed_until REAL,
    attempt INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    webhook TEXT,
    start_at REAL NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS server_runs_queue ON server_runs (status, start_at, created_at);
CREATE INDEX IF NOT EXISTS server_runs_thread ON server_runs (thread_id, created_at);
CREATE TABLE IF NOT EXISTS server_events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS server_crons (
    cron_id TEXT PRIMARY KEY,
    assistant_id TEXT NOT NULL,
    thread_id TEXT,
    schedule TEXT NOT NULL,
    payload TEXT NOT NULL,
    owner TEXT,
    next_run_at REAL,
    created_at REAL NOT NULL
);
"""

ENDED = frozenset({"success", "error", "timeout", "interrupted"})
"""The statuses a run ends in."""


@attrs.frozen
class QueuedRun:
    """One row of the queue, as the API answers it and a worker runs it."""

    run_id: str
    thread_id: str
    assistant_id: str
    graph_id: str
    status: str
    kwargs: dict[str, Any]
    metadata: dict[str, Any]
    multitask_strategy: str
    graph_run: str | None
    cancel: str | None
    attempt: int
    created_at: float
    updated_at: float

    @property
    def ended(self) -> bool:
        return self.status in ENDED


@attrs.frozen
class StoredThread:
    """A thread as the server keeps it: status, metadata, latest values, waiting interrupt."""

    thread_id: str
    status: str
    metadata: dict[str, Any]
    state: dict[str, Any]
    interrupts: list[Any]
    waiting_run: str | None
    created_at: float
    updated_at: float


_RUN_COLUMNS = (
    "run_id, thread_id, assistant_id, graph_id, status, kwargs, metadata, multitask_strategy, "
    "graph_run, cancel, attempt, created_at, updated_at"
)
_THREAD_COLUMNS = (
    "thread_id, status, metadata, state, interrupts, waiting_run, created_at, updated_at"
)


def _run(row: Sequence[Any]) -> QueuedRun:
    return QueuedRun(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        orjson.loads(row[5]),
        orjson.loads(row[6]),
        row[7],
        row[8],
        row[9],
        row[10],
        row[11],
        row[12],
    )


def _thread(row: Sequence[Any]) -> StoredThread:
    return StoredThread(
        row[0],
        row[1],
        orjson.loads(row[2]),
        orjson.loads(row[3]),
        orjson.loads(row[4]),
        row[5],
        row[6],
        row[7],
    )


def is_postgres(where: str) -> bool:
    """Whether `where` names a PostgreSQL database rather than an SQLite file."""
    return where.startswith(("postgresql://", "postgres://"))


class RunQueue:
    """Runs, threads and events in the database at `where`; each method is a short transaction.

    `where` is an SQLite file, or a PostgreSQL connection string (the tables
    then live in `schema`, the checkpoint store's). Methods block on the
    database: call them from a worker thread (`anyio.to_thread.run_sync`),
    never on an event loop. Once a run's events or status change, its readers
    in `signals` are woken (and, on PostgreSQL, those of every process
    listening on `agentgraph_events`).
    """

    def __init__(
        self, where: str, *, schema: str = "agentgraph", signals: RunSignals | None = None
    ) -> None:
        self.where = where
        self.schema = schema
        self.signals = signals or signals_for(where, schema)
        self.postgres = is_postgres(where)
        # `with self._lock:` lends this thread a connection, `self._db`, for the block.
        self._lock: Connections
        if self.postgres:
            self._lock = Connections(self._connect_postgres, POSTGRES_CONNECTIONS)
            self._begin = "BEGIN"
            self._skip_locked = " FOR UPDATE OF r SKIP LOCKED"
            schema_sql = _SCHEMA.replace(" REAL", " DOUBLE PRECISION").replace("BLOB", "BYTEA")
            with self._lock:
                self._db.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                for statement in filter(str.strip, schema_sql.split(";")):
                    self._db.execute(statement)
        else:
            self._lock = Connections(self._connect_sqlite, 1)
            self._begin = "BEGIN IMMEDIATE"
            self._skip_locked = ""
            with self._lock:
                self._db.executescript(_SCHEMA)

    @property
    def _db(self) -> Any:
        return self._lock.current

    def _connect_sqlite(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.where, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA busy_timeout=10000")
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def _connect_postgres(self) -> Any:
        import psycopg

        options = f"-c search_path={self.schema}"
        return psycopg.connect(self.where, autocommit=True, options=options)

    def _announce(self, run_id: str) -> list[tuple[str, Sequence[Any]]]:
        """The statements, in a change's transaction, that tell other processes of it."""
        if self.postgres:
            return [("SELECT pg_notify(?, ?)", (EVENTS_CHANNEL, run_id))]
        return []

    def listen_events(self, stopping: threading.Event) -> None:
        """Wake this process's readers on every run changed in another (PostgreSQL only).

        Blocks: run it on a thread of its own.
        """
        if self.postgres:
            self.signals.listen(self._connect_postgres, stopping)

    def close(self) -> None:
        self._lock.close()

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def _run_sql(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._db.execute(self._sql(sql), params)

    def _pipeline(self) -> contextlib.AbstractContextManager[Any]:
        """On PostgreSQL, statements sent together and answered together: one round trip
        for statements whose results nobody reads."""
        return self._db.pipeline() if self.postgres else contextlib.nullcontext()

    def _tx(self, *statements: tuple[str, Sequence[Any]]) -> None:
        with self._lock:
            try:
                with self._pipeline():
                    self._db.execute(self._begin)
                    for sql, params in statements:
                        self._run_sql(sql, params)
                    self._db.execute("COMMIT")
            except BaseException:
                # Nothing of it is kept: on PostgreSQL a failed statement's COMMIT rolls
                # the transaction back already; this ends one left open.
                if self.postgres or self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            rows: list[Any] = self._run_sql(sql, params).fetchall()
            return rows

    def listen(self, wake: Callable[[], None], stopping: threading.Event) -> None:
        """Call `wake` on every queued run announced, until `stopping` (PostgreSQL only).

        Blocks: run it on a thread of its own.
        """
        if not self.postgres:
            return
        listener = self._connect_postgres()
        try:
            listener.execute(f"LISTEN {CHANNEL}")
            while not stopping.is_set():
                for _ in listener.notifies(timeout=0.5):
                    wake()
        finally:
            listener.close()

    # -- threads ---------------------------------------------------------------------------
    def put_thread(self, thread_id: str, metadata: dict[str, Any], *, replace: bool) -> bool:
        """Create a thread; False when it exists (and `replace` is off)."""
        now = time.time()
        if replace:
            conflict = (
                "DO UPDATE SET metadata = excluded.metadata, updated_at = excluded.updated_at"
            )
        else:
            conflict = "DO NOTHING"
        with self._lock:
            cursor = self._run_sql(
                "INSERT INTO server_threads (thread_id, metadata, created_at, updated_at) "
                f"VALUES (?, ?, ?, ?) ON CONFLICT (thread_id) {conflict}",
                (thread_id, orjson.dumps(metadata).decode(), now, now),
            )
            return bool(cursor.rowcount == 1)

    def thread(self, thread_id: str) -> StoredThread | None:
        rows = self._all(
            f"SELECT {_THREAD_COLUMNS} FROM server_threads WHERE thread_id = ?", (thread_id,)
        )
        return _thread(rows[0]) if rows else None

    def threads(self, *, limit: int, offset: int) -> list[StoredThread]:
        limit = limit if limit >= 0 else 2**62
        rows = self._all(
            f"SELECT {_THREAD_COLUMNS} FROM server_threads ORDER BY created_at DESC "
            "LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return [_thread(row) for row in rows]

    def update_thread(self, thread_id: str, **changes: Any) -> None:
        """Set some of a thread's columns (JSON ones given as Python values)."""
        assignments, values = _thread_columns(changes)
        self._tx(
            (
                f"UPDATE server_threads SET {assignments}, updated_at = ? WHERE thread_id = ?",
                (*values, time.time(), thread_id),
            )
        )

    def delete_thread(self, thread_id: str) -> None:
        self._tx(
            (
                "DELETE FROM server_events WHERE run_id IN "
                "(SELECT run_id FROM server_runs WHERE thread_id = ?)",
                (thread_id,),
            ),
            ("DELETE FROM server_runs WHERE thread_id = ?", (thread_id,)),
            ("DELETE FROM server_threads WHERE thread_id = ?", (thread_id,)),
        )

    def forget_thread(self, thread_id: str) -> None:
        """Delete a stateless run's thread, keeping its runs and events for their readers."""
        self._tx(("DELETE FROM server_threads WHERE thread_id = ?", (thread_id,)))

    # -- runs ------------------------------------------------------------------------------
    def enqueue(self, run: QueuedRun, *, delay: float = 0.0) -> QueuedRun | None:
        """Queue `run` under its `multitask_strategy`, in one transaction: the run as
        stored, or None when it was rejected.

        The thread's row is locked first, so two runs queued at once on one
        thread see each other: `reject` refuses when any run is pending or
        running, `interrupt` and `rollback` mark every one of them cancelled
        (a pending one ends at once; `rollback` deletes it). The run's `created_at`,
        which orders a thread's runs, is taken under that lock, so a thread's runs
        become visible to the workers in the order they are to run.
        """
        lock = " FOR UPDATE" if self.postgres else ""
        with self._lock:
            self._db.execute(self._begin)
            try:
                self._run_sql(
                    f"SELECT thread_id FROM server_threads WHERE thread_id = ?{lock}",
                    (run.thread_id,),
                ).fetchall()
                now = time.time()
                run = attrs.evolve(run, created_at=now, updated_at=now)
                flying = self._run_sql(
                    "SELECT run_id, status FROM server_runs WHERE thread_id = ? "
                    "AND status IN ('pending', 'running')",
                    (run.thread_id,),
                ).fetchall()
                if flying and run.multitask_strategy == "reject":
                    self._db.execute("ROLLBACK")
                    return None
                if run.multitask_strategy in ("interrupt", "rollback"):
                    self._cancel_all(flying, run.multitask_strategy, run.created_at)
                self._insert(run, delay)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return run

    def _cancel_all(self, flying: Sequence[Any], action: str, now: float) -> None:
        for run_id, status in flying:
            if status == "running":
                self._run_sql(
                    "UPDATE server_runs SET cancel = ?, updated_at = ? WHERE run_id = ?",
                    (action, now, run_id),
                )
            elif action == "rollback":
                self._run_sql("DELETE FROM server_events WHERE run_id = ?", (run_id,))
                self._run_sql("DELETE FROM server_runs WHERE run_id = ?", (run_id,))
            else:
                self._run_sql(
                    "UPDATE server_runs SET status = 'interrupted', cancel = ?, updated_at = ? "
                    "WHERE run_id = ?",
                    (action, now, run_id),
                )

    def _insert(self, run: QueuedRun, delay: float) -> None:
        self._run_sql(
            f"INSERT INTO server_runs ({_RUN_COLUMNS}, start_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run.run_id,
                run.thread_id,
                run.assistant_id,
                run.graph_id,
                run.status,
                orjson.dumps(run.kwargs).decode(),
                orjson.dumps(run.metadata).decode(),
                run.multitask_strategy,
                run.graph_run,
                run.cancel,
                run.attempt,
                run.created_at,
                run.updated_at,
                run.created_at + delay,
            ),
        )
        self._run_sql(
            "UPDATE server_threads SET status = 'busy', updated_at = ? WHERE thread_id = ?",
            (run.created_at, run.thread_id),
        )
        if self.postgres:
            self._db.execute(f"NOTIFY {CHANNEL}")

    def run(self, run_id: str) -> QueuedRun | None:
        rows = self._all(f"SELECT {_RUN_COLUMNS} FROM server_runs WHERE run_id = ?", (run_id,))
        return _run(rows[0]) if rows else None

    def runs(self, thread_id: str, *, limit: int, offset: int) -> list[QueuedRun]:
        rows = self._all(
            f"SELECT {_RUN_COLUMNS} FROM server_runs WHERE thread_id = ? "
            "ORDER BY created_at DESC LIMIT ? OFFSET ?",
            (thread_id, limit, offset),
        )
        return [_run(row) for row in rows]

    def in_flight(self, thread_id: str) -> list[QueuedRun]:
        """The thread's pending and running runs, oldest first."""
        rows = self._all(
            f"SELECT {_RUN_COLUMNS} FROM server_runs WHERE thread_id = ? "
            "AND status IN ('pending', 'running') ORDER BY created_at",
            (thread_id,),
        )
        return [_run(row) for row in rows]

    def claim(self, worker: str, count: int, *, term: float = CLAIM_TERM) -> list[QueuedRun]:
        """Take up to `count` runs due now: pending ones, or running ones whose claim lapsed.

        A thread's runs go first in, first out: a run is taken only when it is
        its thread's oldest run still in flight. Across threads, runs go in the
        order they became ready (`start_at`, moved on to its predecessor's end by
        `finish`), so threads take turns. A run queued while its thread was busy
        (a follow-up: its `start_at` is past its creation, as a delayed run's is too)
        yields to runs of idle threads for up to `FOLLOW_UPS_YIELD` seconds after it
        became ready, so a client starting a run on an idle thread is not kept
        waiting behind threads with long queues, and no queue waits for ever.
        """
        now = time.time()
        with self._lock:
            self._db.execute(self._begin)
            try:
                rows = self._run_sql(
                    f"SELECT {_RUN_COLUMNS} FROM server_runs AS r WHERE "
                    "((r.status = 'pending' AND r.start_at <= ?) "
                    " OR (r.status = 'running' AND r.claimed_until < ?)) "
                    "AND NOT EXISTS (SELECT 1 FROM server_runs AS o WHERE "
                    " o.thread_id = r.thread_id AND o.run_id <> r.run_id AND ("
                    "  o.status = 'running' OR "
                    "  (o.status = 'pending' AND o.created_at < r.created_at))) "
                    "ORDER BY CASE WHEN r.status = 'pending' AND r.start_at > r.created_at "
                    "AND r.start_at > ? THEN 1 ELSE 0 END, r.start_at, r.created_at "
                    f"LIMIT ?{self._skip_locked}",
                    (now, now, now - FOLLOW_UPS_YIELD, count),
                ).fetchall()
                for row in rows:
                    self._run_sql(
                        "UPDATE server_runs SET status = 'running', claimed_by = ?, "
                        "claimed_until = ?, attempt = attempt + 1, updated_at = ? "
                        "WHERE run_id = ?",
                        (worker, now + term, now, row[0]),
                    )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return [attrs.evolve(_run(row), status="running", attempt=row[10] + 1) for row in rows]

    def renew(self, worker: str, run_ids: Sequence[str], *, term: float = CLAIM_TERM) -> None:
        """Extend this worker's claims on `run_ids`."""
        until = time.time() + term
        self._tx(
            *(
                (
                    "UPDATE server_runs SET claimed_until = ? WHERE run_id = ? AND claimed_by = ?",
                    (until, run_id, worker),
                )
                for run_id in run_ids
            )
        )

    def set_graph_run(self, run_id: str, graph_run: str) -> None:
        self._tx(("UPDATE server_runs SET graph_run = ? WHERE run_id = ?", (graph_run, run_id)))

    def request_cancel(self, run_id: str, action: str) -> QueuedRun | None:
        """Ask for a run's cancel; a pending run ends `interrupted` at once."""
        now = time.time()
        self._tx(
            (
                "UPDATE server_runs SET cancel = ?, updated_at = ? WHERE run_id = ? "
                "AND status IN ('pending', 'running')",
                (action, now, run_id),
            ),
        )
        found = self.run(run_id)
        if found is not None and found.status == "pending":
            self.finish(found.run_id, found.thread_id, "interrupted", {})
            if action == "rollback":
                self.delete_run(run_id)
                return None
            return self.run(run_id)
        return found

    def cancels(self, run_ids: Sequence[str]) -> dict[str, str]:
        """Which of `run_ids` a client asked to cancel, and how."""
        if not run_ids:
            return {}
        marks = ", ".join("?" for _ in run_ids)
        rows = self._all(
            f"SELECT run_id, cancel FROM server_runs WHERE cancel IS NOT NULL "
            f"AND run_id IN ({marks})",
            tuple(run_ids),
        )
        return {row[0]: row[1] for row in rows}

    def finish(
        self, run_id: str, thread_id: str, status: str, thread_changes: dict[str, Any]
    ) -> None:
        """End a run and set its thread's status (idle unless given) in one transaction.

        The thread's next run, if due already, becomes ready now: it queues behind
        the runs of other threads ready before it (see `claim`).
        """
        now = time.time()
        assignments, values = _thread_columns({"status": "idle", **thread_changes})
        self._tx(
            (
                "UPDATE server_runs SET status = ?, claimed_by = NULL, claimed_until = NULL, "
                "updated_at = ? WHERE run_id = ?",
                (status, now, run_id),
            ),
            (
                f"UPDATE server_threads SET {assignments}, updated_at = ? WHERE thread_id = ?",
                (*values, now, thread_id),
            ),
            (
                "UPDATE server_threads SET status = 'busy' WHERE thread_id = ? AND EXISTS "
                "(SELECT 1 FROM server_runs WHERE thread_id = ? "
                "AND status IN ('pending', 'running'))",
                (thread_id, thread_id),
            ),
            (
                "UPDATE server_runs SET start_at = ? WHERE run_id = (SELECT run_id FROM "
                "server_runs WHERE thread_id = ? AND status = 'pending' ORDER BY created_at "
                "LIMIT 1) AND start_at < ?",
                (now, thread_id, now),
            ),
            *self._announce(run_id),
        )
        self.signals.notify(run_id)

    def delete_run(self, run_id: str) -> None:
        self._tx(
            ("DELETE FROM server_events WHERE run_id = ?", (run_id,)),
            ("DELETE FROM server_runs WHERE run_id = ?", (run_id,)),
            *self._announce(run_id),
        )
        self.signals.notify(run_id)

    # -- events ----------------------------------------------------------------------------
    def add_events(self, run_id: str, events: Sequence[tuple[str, Any]]) -> None:
        """Append events to a run's log, numbered on from its last, in one statement.

        A run's events are added by one writer at a time; two at once would
        both number on from the same last event, and one would fail on the key.
        """
        if not events:
            return
        rows = ", ".join("(?, ?, ?)" for _ in events)
        params: list[Any] = [run_id, run_id]
        for n, (name, data) in enumerate(events, 1):
            params += [n, name, orjson.dumps(data)]
        with self._lock, self._pipeline():
            self._run_sql(
                "INSERT INTO server_events (run_id, seq, event, data) "
                "SELECT ?, last.seq + column1, column2, column3 FROM "
                "(SELECT COALESCE(MAX(seq), 0) AS seq FROM server_events WHERE run_id = ?) "
                f"AS last, (VALUES {rows}) AS added",
                params,
            )
            for sql, announce in self._announce(run_id):
                self._run_sql(sql, announce)
        self.signals.notify(run_id)

    def events(self, run_id: str, after: int) -> list[tuple[int, str, bytes]]:
        """A run's events numbered after `after`, in order."""
        rows = self._all(
            "SELECT seq, event, data FROM server_events WHERE run_id = ? AND seq > ? ORDER BY seq",
            (run_id, after),
        )
        return [(row[0], row[1], bytes(row[2])) for row in rows]


_THREAD_JSON = frozenset({"metadata", "state", "interrupts"})
_THREAD_SETTABLE = _THREAD_JSON | {"status", "waiting_run"}


def _thread_columns(changes: dict[str, Any]) -> tuple[str, list[Any]]:
    """`changes` to a thread's columns as an SQL assignment list and its values (JSON
    columns encoded); only the known columns are named, whatever the caller passes."""
    names = sorted(changes)
    unknown = set(names) - _THREAD_SETTABLE
    if unknown:
        raise ValueError(f"not columns of a thread: {sorted(unknown)}")
    values = [
        orjson.dumps(changes[name]).decode() if name in _THREAD_JSON else changes[name]
        for name in names
    ]
    return ", ".join(f"{name} = ?" for name in names), values
