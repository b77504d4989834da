"""The run queue, kept in the checkpoint store's database (SQLite or PostgreSQL) beside its tables.

A run's whole life is here: queued (`pending`), claimed by a worker
(`running`, with the worker's name and a claim that lapses unless renewed),
its events (one row each, numbered from 1 within the run), and its end.
Threads keep their status, their latest values and the interrupt waiting for
an answer. Any process that opens the database can answer for any run.

On PostgreSQL, workers claim with `SELECT … FOR UPDATE SKIP LOCKED`, so
any number of them on any number of machines share the queue and each run
is claimed once; a queued run is announced with `NOTIFY agentgraph_runs`,
which wakes the workers listening (`listen`), and a running run's cancel
with `NOTIFY agentgraph_cancels` (its id the payload), on which the worker
holding it cancels it. On SQLite, whose workers share the API's process, a
cancel is announced to the workers of this process on the same file.

Assistants live here too: `server_assistants` holds each assistant as its
current version says, `server_assistant_versions` every version it had.

The `owner` columns hold who created each assistant, thread, run and cron
(the caller's identity, see `_auth.caller`); a run whose thread is gone is
its owner's alone. Crons keep their own tables (`_crons`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue as queues
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import orjson

from ._connections import Connections
from ._flow import FLOW_SCHEMA, LOOK_PAST, FlowLimits, admit
from ._outbox import OUTBOX_SCHEMA, record_delivery
from ._signals import EVENTS_CHANNEL, RunSignals, signals_for

__all__ = (
    "CANCELS",
    "CHANNEL",
    "CLAIM_TERM",
    "QueuedRun",
    "RunQueue",
    "StoredAssistant",
    "StoredThread",
    "is_postgres",
)

CHANNEL = "agentgraph_runs"
"""The PostgreSQL channel a queued run is announced on."""

POSTGRES_CONNECTIONS = 8
"""Connections a queue opens at most on PostgreSQL, as its concurrent callers need them."""

FOLLOW_UPS_YIELD = 5.0
"""Seconds at most a ready follow-up (a run queued while its thread was busy) lets
runs of idle threads go first."""
CANCELS = "agentgraph_cancels"
"""The PostgreSQL channel a running run's cancel is announced on, the run's id its payload."""

LISTEN_RETRY = (0.1, 5.0)
"""Seconds a worker's listener waits before connecting again after losing its connection:
the first wait, doubled after each failed attempt up to the second."""

CLAIM_TERM = 45.0
"""Seconds a worker's claim on a run lasts unless renewed; longer than a checkpoint lease."""

_log = logging.getLogger("agentgraph.server")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS server_threads (
    thread_id TEXT PRIMARY KEY,
    status TEXT NOT NULL DEFAULT 'idle',
    metadata TEXT NOT NULL DEFAULT '{}',
    state TEXT NOT NULL DEFAULT '{}',
    interrupts TEXT NOT NULL DEFAULT '[]',
    waiting_run TEXT,
    owner TEXT,
    priority INTEGER,
    fairness_group TEXT,
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
    graph_version INTEGER,
    resume_policy TEXT,
    priority INTEGER NOT NULL DEFAULT 0,
    flow_key TEXT,
    dedup_key TEXT,
    start_at REAL NOT NULL,
    started_at REAL,
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
"""

_ASSISTANTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS server_assistants (
    assistant_id TEXT PRIMARY KEY,
    graph_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config TEXT NOT NULL DEFAULT '{}',
    context TEXT NOT NULL DEFAULT '{}',
    metadata TEXT NOT NULL DEFAULT '{}',
    owner TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS server_assistants_graph ON server_assistants (graph_id);
CREATE TABLE IF NOT EXISTS server_assistant_versions (
    assistant_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    graph_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config TEXT NOT NULL DEFAULT '{}',
    context TEXT NOT NULL DEFAULT '{}',
    metadata TEXT NOT NULL DEFAULT '{}',
    owner TEXT,
    created_at REAL NOT NULL,
    PRIMARY KEY (assistant_id, version)
);
"""

_ADDED = (
    ("graph_version", "INTEGER"),
    ("resume_policy", "TEXT"),
    ("started_at", "REAL"),
    ("priority", "INTEGER NOT NULL DEFAULT 0"),
    ("flow_key", "TEXT"),
    ("dedup_key", "TEXT"),
)
"""Columns of `server_runs` added after its first release, added to older databases."""
_THREADS_ADDED = (("priority", "INTEGER"), ("fairness_group", "TEXT"))
"""Columns of `server_threads` added after its first release."""

_ADDED_SCHEMA = (
    FLOW_SCHEMA
    + """
CREATE UNIQUE INDEX IF NOT EXISTS server_runs_dedup ON server_runs (dedup_key)
    WHERE dedup_key IS NOT NULL AND status IN ('pending', 'running');
"""
)
"""What needs the added columns: made once they are there. The unique index holds one run
in flight per deduplication key, whichever process creates it (see `enqueue`)."""
_DEDUP_CONFLICT = (
    " ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL "
    "AND status IN ('pending', 'running') DO NOTHING"
)

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
    graph_version: int | None = None
    """The version of its graph the run is on (None: a graph without versions): only a
    worker that can resume that version claims it (see `claim`)."""
    resume_policy: str | None = None
    """What resuming it on another version does (`GraphVersions`' policies)."""
    priority: int | None = None
    """-5 (claimed first) to 5 (last); None when queued: its thread's, else 0."""
    flow_key: str = ""
    """The caller key whose limits the run counts against (`FlowLimits.per_key`)."""
    dedup_key: str | None = None
    """Its deduplication key: no second run in flight has it (see `enqueue`)."""

    @property
    def ended(self) -> bool:
        return self.status in ENDED


@attrs.frozen
class StoredAssistant:
    """An assistant (or one of its versions): a graph with its config, context and metadata.

    `updated_at` of a version is when it was made.
    """

    assistant_id: str
    graph_id: str
    version: int
    name: str
    description: str | None
    config: dict[str, Any]
    context: dict[str, Any]
    metadata: dict[str, Any]
    created_at: float
    updated_at: float


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
    "graph_run, cancel, attempt, created_at, updated_at, graph_version, resume_policy, "
    "priority, flow_key, dedup_key"
)
_THREAD_COLUMNS = (
    "thread_id, status, metadata, state, interrupts, waiting_run, created_at, updated_at"
)


_ASSISTANT_FIELDS = "assistant_id, graph_id, version, name, description, config, context, metadata"
_ASSISTANT_COLUMNS = f"{_ASSISTANT_FIELDS}, created_at, updated_at"
_VERSION_COLUMNS = f"{_ASSISTANT_FIELDS}, created_at, created_at"
_ASSISTANT_SORTS = frozenset({"assistant_id", "graph_id", "name", "created_at", "updated_at"})


def _assistant(row: Sequence[Any]) -> StoredAssistant:
    return StoredAssistant(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        orjson.loads(row[5]),
        orjson.loads(row[6]),
        orjson.loads(row[7]),
        row[8],
        row[9],
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
        row[13],
        row[14],
        row[15],
        row[16] or "",
        row[17],
    )


def _flow_fields(row: Sequence[Any]) -> tuple[str, str, str, str]:
    """A run row's status, assistant, graph and caller key, for `_flow.admit`."""
    return row[4], row[2], row[3], row[16] or ""


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


class _LocalCancels:
    """Cancels announced within this process, for the workers listening on an SQLite file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[str, list[Callable[[str], None]]] = {}

    def add(self, where: str, listener: Callable[[str], None]) -> None:
        with self._lock:
            self._listeners.setdefault(where, []).append(listener)

    def remove(self, where: str, listener: Callable[[str], None]) -> None:
        with self._lock:
            self._listeners[where].remove(listener)

    def announce(self, where: str, run_ids: Sequence[str]) -> None:
        with self._lock:
            listeners = tuple(self._listeners.get(where, ()))
        for listener in listeners:
            for run_id in run_ids:
                listener(run_id)


_LOCAL_CANCELS = _LocalCancels()


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
        self._ended = threading.local()
        """The runs this thread's transaction ends, whose readers are woken after it."""
        # `with self._lock:` lends this thread a connection, `self._db`, for the block.
        self._lock: Connections
        if self.postgres:
            self._lock = Connections(
                self._connect_postgres, POSTGRES_CONNECTIONS, released=self._wake_ended
            )
            self._begin = "BEGIN"
            self._skip_locked = " FOR UPDATE OF r SKIP LOCKED"
            self._for_update = " FOR UPDATE"
            schema_sql = (_SCHEMA + _ASSISTANTS_SCHEMA + OUTBOX_SCHEMA).replace(
                " REAL", " DOUBLE PRECISION"
            )
            schema_sql = schema_sql.replace("BLOB", "BYTEA")
            with self._lock:
                # Processes starting at once would race to create the same tables and
                # types (`IF NOT EXISTS` does not stop two at once): one at a time.
                self._db.execute("BEGIN")
                self._db.execute("SELECT pg_advisory_xact_lock(hashtext('agentgraph.server'))")
                self._db.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                for statement in filter(str.strip, schema_sql.split(";")):
                    self._db.execute(statement)
                have = {
                    row[0]
                    for row in self._db.execute(
                        "SELECT column_name FROM information_schema.columns "
                        "WHERE table_schema = %s AND table_name = 'server_runs'",
                        (schema,),
                    )
                }
                self._add_columns(have, "server_runs", _ADDED)
                threads = {
                    row[0]
                    for row in self._db.execute(
                        "SELECT column_name FROM information_schema.columns "
                        "WHERE table_schema = %s AND table_name = 'server_threads'",
                        (schema,),
                    )
                }
                self._add_columns(threads, "server_threads", _THREADS_ADDED)
                for statement in filter(str.strip, _ADDED_SCHEMA.split(";")):
                    self._db.execute(statement.replace(" REAL", " DOUBLE PRECISION"))
                self._db.execute("COMMIT")
        else:
            self._file = os.path.abspath(where)
            """The SQLite file's full path: what this process's cancels are announced under."""
            self._lock = Connections(self._connect_sqlite, 1, released=self._wake_ended)
            self._begin = "BEGIN IMMEDIATE"
            self._skip_locked = ""
            self._for_update = ""
            with self._lock:
                self._db.executescript(_SCHEMA + _ASSISTANTS_SCHEMA + OUTBOX_SCHEMA)
                have = {row[1] for row in self._db.execute("PRAGMA table_info(server_runs)")}
                self._add_columns(have, "server_runs", _ADDED)
                threads = {row[1] for row in self._db.execute("PRAGMA table_info(server_threads)")}
                self._add_columns(threads, "server_threads", _THREADS_ADDED)
                self._db.executescript(_ADDED_SCHEMA)

    def _add_columns(self, have: set[str], table: str, added: Sequence[tuple[str, str]]) -> None:
        """Add to `table` the columns of `added` it does not `have` (an older database)."""
        for column, kind in added:
            if column not in have:  # ALTER TABLE would wait for every reader
                if self.postgres:
                    kind = kind.replace("REAL", "DOUBLE PRECISION")
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    @property
    def _db(self) -> Any:
        return self._lock.current

    def _wake_ended(self) -> None:
        """Wake the readers of the runs ended by the block that has just given its
        connection back (its transaction committed, or rolled back: a reader woken
        for nothing reads the store again and waits on)."""
        for run_id in self._ended.__dict__.pop("runs", ()):
            self.signals.notify(run_id)

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

    def batched(self) -> contextlib.AbstractContextManager[Any]:
        """Inside a `transaction`: its statements sent together until one's result is read
        (PostgreSQL's pipeline mode; on SQLite, as they come)."""
        return self._pipeline()

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

    @contextlib.contextmanager
    def transaction(self, *, thread: str | None = None) -> Iterator[Callable[..., Any]]:
        """One transaction (on this queue's connection, its tables and those kept beside
        them): yields `execute(sql, params)` (`?` placeholders); `thread` names a thread
        whose row is locked first (`_lock_thread`)."""
        with self._lock:
            self._db.execute(self._begin)
            try:
                if thread is not None:
                    self._lock_thread(thread)
                yield self._run_sql
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextlib.contextmanager
    def reading(self) -> Iterator[Callable[..., Any]]:
        """Reads outside a transaction, for the tables kept beside the queue's: yields
        `execute(sql, params)`."""
        with self._lock:
            yield self._run_sql

    def _lock_thread(self, thread_id: str) -> None:
        """Take the thread's row for this transaction (PostgreSQL; SQLite's writer is alone).

        Every transaction that changes a thread's runs and its row takes the row
        first: a lock order all of them share, so none waits on another in a circle.
        """
        self._run_sql(*self._thread_lock(thread_id)).fetchall()

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            rows: list[Any] = self._run_sql(sql, params).fetchall()
            return rows

    def listen(
        self, wake: Callable[[], None], cancel: Callable[[str], None], stopping: threading.Event
    ) -> None:
        """Call `wake` on every queued run announced (PostgreSQL) and `cancel` with the id
        of every running run a client or a double text cancels, until `stopping`.

        Blocks: run it on a thread of its own. On SQLite, cancels come from this
        process's queues on the same file (queued runs wake the workers through
        the API directly).
        """
        if not self.postgres:
            self._listen_here(cancel, stopping)
            return
        import psycopg

        pause = LISTEN_RETRY[0]
        while not stopping.is_set():
            listener = None
            try:
                listener = self._connect_postgres()
                listener.execute(f"LISTEN {CHANNEL}")
                listener.execute(f"LISTEN {CANCELS}")
                pause = LISTEN_RETRY[0]
                wake()  # a run queued while nobody listened
                _pass_on(listener, wake, cancel, stopping)
            except psycopg.OperationalError as exc:
                # What was announced meanwhile is not lost: the worker also looks at the
                # queue and at the cancel marks on its own, only later.
                _log.warning("lost the %s listener, listening again: %s", CHANNEL, exc)
                stopping.wait(pause)
                pause = min(pause * 2, LISTEN_RETRY[1])
            finally:
                if listener is not None:
                    listener.close()

    def _listen_here(self, cancel: Callable[[str], None], stopping: threading.Event) -> None:
        cancelled: queues.SimpleQueue[str] = queues.SimpleQueue()
        _LOCAL_CANCELS.add(self._file, cancelled.put)
        try:
            while not stopping.is_set():
                try:
                    cancel(cancelled.get(timeout=0.5))
                except queues.Empty:
                    continue
        finally:
            _LOCAL_CANCELS.remove(self._file, cancelled.put)

    def _announce_cancels(self, run_ids: Sequence[str]) -> None:
        """Announce the cancel of running runs: inside the transaction marking them on
        PostgreSQL (NOTIFY is sent on commit), after it on SQLite."""
        if self.postgres:
            for run_id in run_ids:
                self._db.execute("SELECT pg_notify(%s, %s)", (CANCELS, run_id))
        elif run_ids:
            _LOCAL_CANCELS.announce(self._file, run_ids)

    # -- threads ---------------------------------------------------------------------------
    def put_thread(
        self,
        thread_id: str,
        metadata: dict[str, Any],
        *,
        replace: bool,
        owner: str | None = None,
    ) -> bool:
        """Create a thread, made by `owner`; False when it exists (and `replace` is off)."""
        now = time.time()
        if replace:
            conflict = (
                "DO UPDATE SET metadata = excluded.metadata, updated_at = excluded.updated_at"
            )
        else:
            conflict = "DO NOTHING"
        with self._lock:
            cursor = self._run_sql(
                "INSERT INTO server_threads (thread_id, metadata, owner, created_at, updated_at) "
                f"VALUES (?, ?, ?, ?, ?) ON CONFLICT (thread_id) {conflict}",
                (thread_id, orjson.dumps(metadata).decode(), owner, now, now),
            )
            return bool(cursor.rowcount == 1)

    def thread(self, thread_id: str) -> StoredThread | None:
        rows = self._all(
            f"SELECT {_THREAD_COLUMNS} FROM server_threads WHERE thread_id = ?", (thread_id,)
        )
        return _thread(rows[0]) if rows else None

    def threads(
        self, *, limit: int, offset: int, only: tuple[str, Sequence[Any]] = ("", ())
    ) -> list[StoredThread]:
        """The newest threads first; `only` is a condition on their columns (led by
        ` AND `) and its parameters, such as an authorization filter's."""
        limit = limit if limit >= 0 else 2**62
        condition, bound = only
        rows = self._all(
            f"SELECT {_THREAD_COLUMNS} FROM server_threads WHERE 1 = 1{condition} "
            "ORDER BY created_at DESC LIMIT ? OFFSET ?",
            (*bound, limit, offset),
        )
        return [_thread(row) for row in rows]

    def thread_priority(self, thread_id: str) -> tuple[int, str] | None:
        """The priority settings stored on a thread (priority, fairness group), None when
        it has none."""
        rows = self._all(
            "SELECT priority, fairness_group FROM server_threads "
            "WHERE thread_id = ? AND priority IS NOT NULL",
            (thread_id,),
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def set_thread_priority(self, thread_id: str, priority: int, fairness_group: str) -> None:
        """Store a thread's priority settings, unless it has some already: the first kept."""
        self._tx(
            (
                "UPDATE server_threads SET priority = ?, fairness_group = ? "
                "WHERE thread_id = ? AND priority IS NULL",
                (priority, fairness_group, thread_id),
            )
        )

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
        """Delete a thread with its runs and their events; its running runs are cancelled
        (their workers told, as for a cancel), and end without writing anything."""
        with self.transaction(thread=thread_id) as run_sql:
            running = self._delete_thread(run_sql, thread_id)
            if self.postgres:
                self._announce_cancels(running)
        if not self.postgres:
            self._announce_cancels(running)

    def _delete_thread(self, run_sql: Callable[..., Any], thread_id: str) -> list[str]:
        """Delete a thread's rows in a transaction that took its row: the ids of its runs
        that were running, whose workers are to be told."""
        running = [
            row[0]
            for row in run_sql(
                "SELECT run_id FROM server_runs WHERE thread_id = ? AND status = 'running'",
                (thread_id,),
            ).fetchall()
        ]
        run_sql(
            "DELETE FROM server_events WHERE run_id IN "
            "(SELECT run_id FROM server_runs WHERE thread_id = ?)",
            (thread_id,),
        )
        run_sql("DELETE FROM server_runs WHERE thread_id = ?", (thread_id,))
        run_sql("DELETE FROM server_threads WHERE thread_id = ?", (thread_id,))
        return running

    def forget_thread(self, thread_id: str) -> None:
        """Delete a stateless run's thread, keeping its runs and events for their readers."""
        self._tx(("DELETE FROM server_threads WHERE thread_id = ?", (thread_id,)))

    # -- runs ------------------------------------------------------------------------------
    def enqueue(
        self, run: QueuedRun, *, delay: float = 0.0, owner: str | None = None
    ) -> QueuedRun | None:
        """Queue `run` (made by `owner`) under its `multitask_strategy`, in one
        transaction: the run as stored, or None when it was rejected.

        The thread's row is locked first, so two runs queued at once on one
        thread see each other: `reject` refuses when any run is pending or
        running, `interrupt` and `rollback` mark every one of them cancelled
        (a pending one ends at once; `rollback` deletes it). The run's `created_at`,
        which orders a thread's runs, is taken under that lock, so a thread's runs
        become visible to the workers in the order they are to run.

        The runs in flight are read locked (a worker's claim takes no thread lock):
        a claim under way commits first and its run is then seen running, never
        taken for pending and ended or deleted while its worker runs it.

        A run with a `dedup_key` that a run in flight has already is not queued:
        that run is answered instead (its `run_id` differs), whichever process
        queued it, as a unique index admits one of them; nothing else is written.
        """
        while True:  # a run found by its key may end before it is read back: try again
            with self.transaction(thread=run.thread_id):
                now = time.time()
                run = attrs.evolve(run, created_at=now, updated_at=now)
                if run.dedup_key is not None:
                    found = self._deduplicated(run.dedup_key)
                    if found is not None:
                        return found
                flying = self._run_sql(
                    "SELECT run_id, status FROM server_runs WHERE thread_id = ? "
                    f"AND status IN ('pending', 'running'){self._for_update}",
                    (run.thread_id,),
                ).fetchall()
                if flying and run.multitask_strategy == "reject":
                    return None  # nothing written: the transaction ends as it began
                inserted = self._insert(run, delay, owner)
                running: list[str] = []
                if inserted and run.multitask_strategy in ("interrupt", "rollback"):
                    running = self._cancel_all(flying, run.multitask_strategy, run.created_at)
                    if self.postgres:
                        self._announce_cancels(running)
            if inserted:
                if not self.postgres:
                    self._announce_cancels(running)
                return run
            assert run.dedup_key is not None  # nothing else keeps a run out
            found = self.deduplicated(run.dedup_key)
            if found is not None:
                return found

    def deduplicated(self, dedup_key: str) -> QueuedRun | None:
        """The run in flight with `dedup_key`, if any."""
        with self._lock:
            return self._deduplicated(dedup_key)

    def _deduplicated(self, dedup_key: str) -> QueuedRun | None:
        rows = self._run_sql(
            f"SELECT {_RUN_COLUMNS} FROM server_runs WHERE dedup_key = ? "
            "AND status IN ('pending', 'running')",
            (dedup_key,),
        ).fetchall()
        return _run(rows[0]) if rows else None

    def _cancel_all(self, flying: Sequence[Any], action: str, now: float) -> list[str]:
        """Cancel the runs in `flying`: the ids of the running ones, whose workers are to
        be told."""
        running = []
        for run_id, status in flying:
            if status == "running":
                running.append(run_id)
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
                record_delivery(self._run_sql, run_id, "interrupted", now)
        return running

    def _insert(self, run: QueuedRun, delay: float, owner: str | None) -> bool:
        """Insert `run`, its priority its own, else its thread's, else 0; False (nothing
        written) when a run in flight has its `dedup_key`."""
        inserted = self._run_sql(
            f"INSERT INTO server_runs ({_RUN_COLUMNS}, start_at, owner) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "COALESCE(?, (SELECT priority FROM server_threads WHERE thread_id = ?), 0), "
            f"?, ?, ?, ?){_DEDUP_CONFLICT}",
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
                run.graph_version,
                run.resume_policy,
                run.priority,
                run.thread_id,
                run.flow_key,
                run.dedup_key,
                run.created_at + delay,
                owner,
            ),
        )
        if inserted.rowcount != 1:
            return False
        self._run_sql(
            "UPDATE server_threads SET status = 'busy', updated_at = ? WHERE thread_id = ?",
            (run.created_at, run.thread_id),
        )
        if self.postgres:
            self._db.execute(f"NOTIFY {CHANNEL}")
        return True

    def owner(self, kind: str, key: str) -> str | None:
        """Who made the assistant, thread, run or cron (`kind`: `assistants`, `threads`,
        `runs`, `crons`, whose table `_crons` keeps beside these) of id `key`; None
        when no one is recorded, or there is none."""
        table, column = _OWNED[kind]
        rows = self._all(f"SELECT owner FROM {table} WHERE {column} = ?", (key,))
        return rows[0][0] if rows else None

    def run(self, run_id: str) -> QueuedRun | None:
        rows = self._all(f"SELECT {_RUN_COLUMNS} FROM server_runs WHERE run_id = ?", (run_id,))
        return _run(rows[0]) if rows else None

    def runs(
        self, thread_id: str, *, limit: int, offset: int, status: str | None = None
    ) -> list[QueuedRun]:
        """The thread's runs newest first, only those of `status` when given."""
        condition, bound = ("", ()) if status is None else (" AND status = ?", (status,))
        rows = self._all(
            f"SELECT {_RUN_COLUMNS} FROM server_runs WHERE thread_id = ?{condition} "
            "ORDER BY created_at DESC LIMIT ? OFFSET ?",
            (thread_id, *bound, limit, offset),
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

    def claim(
        self,
        worker: str,
        count: int,
        *,
        term: float = CLAIM_TERM,
        only: tuple[str, Sequence[Any]] = ("", ()),
        limits: FlowLimits | None = None,
    ) -> list[QueuedRun]:
        """Take up to `count` runs due now: pending ones, or running ones whose claim lapsed.

        A thread's runs go first in, first out: a run is taken only when it is
        its thread's oldest run still in flight. Across threads, runs go in the
        order they became ready (`start_at`, moved on to its predecessor's end by
        `finish`), so threads take turns. A run queued while its thread was busy
        (a follow-up: its `start_at` is past its creation, as a delayed run's is too)
        yields to runs of idle threads for up to `FOLLOW_UPS_YIELD` seconds after it
        became ready, so a client starting a run on an idle thread is not kept
        waiting behind threads with long queues, and no queue waits for ever.
        `only` is a condition on the run `r` and its parameters (the graph versions
        a worker can resume, see `_versions.claimable`): a run it excludes is left
        for another worker.

        Before all that, runs go by priority: every ready run of priority -5 before
        any of -4, and so on. Under `limits`, a run its assistant's or its caller
        key's limit does not allow yet is skipped and stays pending (see `_flow`).
        """
        condition, bound = only
        limited = limits is not None and limits.limited
        with self.transaction():
            if limited and self.postgres:
                # One claim under limits at a time, so no two count the same free place.
                self._db.execute("SELECT pg_advisory_xact_lock(hashtext('agentgraph.flow'))")
            now = time.time()  # once the turn came: the starts it records are in order
            rows = self._run_sql(
                f"SELECT {_RUN_COLUMNS} FROM server_runs AS r WHERE "
                "((r.status = 'pending' AND r.start_at <= ?) "
                " OR (r.status = 'running' AND r.claimed_until < ?)) "
                "AND NOT EXISTS (SELECT 1 FROM server_runs AS o WHERE "
                " o.thread_id = r.thread_id AND o.run_id <> r.run_id AND ("
                "  o.status = 'running' OR "
                "  (o.status = 'pending' AND o.created_at < r.created_at))) "
                f"{condition}ORDER BY r.priority, CASE WHEN r.status = 'pending' "
                "AND r.start_at > r.created_at AND r.start_at > ? THEN 1 ELSE 0 END, "
                f"r.start_at, r.created_at LIMIT ?{self._skip_locked}",
                (now, now, *bound, now - FOLLOW_UPS_YIELD, count + LOOK_PAST if limited else count),
            ).fetchall()
            if limits is not None and limited:
                rows = admit(self._run_sql, limits, rows, count, now, fields=_flow_fields)
            for row in rows:
                self._run_sql(
                    "UPDATE server_runs SET status = 'running', claimed_by = ?, "
                    "claimed_until = ?, attempt = attempt + 1, updated_at = ?, "
                    "started_at = COALESCE(started_at, ?) WHERE run_id = ?",
                    (worker, now + term, now, now, row[0]),
                )
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

    def set_graph_version(self, run_id: str, version: int | None) -> None:
        """Record the graph version a worker ran `run_id` on (a resume may have migrated it)."""
        self._tx(("UPDATE server_runs SET graph_version = ? WHERE run_id = ?", (version, run_id)))

    def graph_version_of(self, graph_run: str) -> int | None:
        """The graph version the checkpoint run `graph_run` is on, as its latest server
        run recorded it (None when no server run ran it, or its graph has no version)."""
        rows = self._all(
            "SELECT graph_version FROM server_runs WHERE graph_run = ? "
            "ORDER BY created_at DESC LIMIT 1",
            (graph_run,),
        )
        return rows[0][0] if rows else None

    def request_cancel(self, run_id: str, action: str) -> QueuedRun | None:
        """Ask for a run's cancel, in one transaction: a running run is marked for its
        worker, a pending one ends `interrupted` at once (`rollback` deletes it: None)."""
        found = self.run(run_id)
        if found is None or found.ended:
            return found
        with self.transaction(thread=found.thread_id):
            running = self._request_cancel(run_id, found.thread_id, action)
            if running and self.postgres:
                self._announce_cancels([run_id])
        if running and not self.postgres:
            self._announce_cancels([run_id])
        return self.run(run_id)

    def _request_cancel(self, run_id: str, thread_id: str, action: str) -> bool:
        """Mark a run cancelled, ending it when pending: whether it is running."""
        rows = self._run_sql(
            f"SELECT status FROM server_runs WHERE run_id = ?{self._for_update}", (run_id,)
        ).fetchall()
        if not rows or rows[0][0] not in ("pending", "running"):
            return False
        now = time.time()
        self._run_sql(
            "UPDATE server_runs SET cancel = ?, updated_at = ? WHERE run_id = ?",
            (action, now, run_id),
        )
        if rows[0][0] == "running":
            return True
        for sql, params in self._finish(run_id, thread_id, "interrupted", {}, now):
            self._run_sql(sql, params)
        record_delivery(self._run_sql, run_id, "interrupted", now)
        return False

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
        """End a run and set its thread's status (idle unless given) in one transaction,
        with the delivery of its webhook when it asked for one; a run ending
        `interrupted` because a client asked for a rollback is deleted.

        The thread's next run, if due already, becomes ready now: it queues behind
        the runs of other threads ready before it (see `claim`).
        """
        with self.transaction(thread=thread_id) as run_sql:
            self.finishing(run_sql, run_id, thread_id, status, thread_changes)

    def finishing(
        self,
        run_sql: Callable[..., Any],
        run_id: str,
        thread_id: str,
        status: str,
        thread_changes: dict[str, Any],
    ) -> None:
        """`finish` through `run_sql` of a transaction of this thread's connection (see
        `transaction`) that does more and has taken the thread's row first; the run's
        readers are woken once it commits."""
        now = time.time()
        for sql, params in self._finish(run_id, thread_id, status, thread_changes, now):
            run_sql(sql, params)
        # The run's webhook, if it asked for one, is committed with its end.
        record_delivery(run_sql, run_id, status, now)

    def _thread_lock(self, thread_id: str) -> tuple[str, Sequence[Any]]:
        """The statement of `_lock_thread`, for `_tx`."""
        return (
            f"SELECT thread_id FROM server_threads WHERE thread_id = ?{self._for_update}",
            (thread_id,),
        )

    def _finish(
        self, run_id: str, thread_id: str, status: str, changes: dict[str, Any], now: float
    ) -> list[tuple[str, Sequence[Any]]]:
        """The statements ending a run and setting its thread's status.

        A run ending `interrupted` by a rollback goes with its events in the same
        transaction, so no reader ever finds it ended yet still there.
        """
        assignments, values = _thread_columns({"status": "idle", **changes})
        rolled_back = "run_id = ? AND status = 'interrupted' AND cancel = 'rollback'"
        self._ended.__dict__.setdefault("runs", []).append(run_id)
        return [
            (
                "UPDATE server_runs SET status = ?, claimed_by = NULL, claimed_until = NULL, "
                "updated_at = ? WHERE run_id = ?",
                (status, now, run_id),
            ),
            (
                "DELETE FROM server_events WHERE run_id IN "
                f"(SELECT run_id FROM server_runs WHERE {rolled_back})",
                (run_id,),
            ),
            (f"DELETE FROM server_runs WHERE {rolled_back}", (run_id,)),
            (
                f"UPDATE server_threads SET {assignments}, updated_at = ? WHERE thread_id = ?",
                (*values, now, thread_id),
            ),
            # A question still waiting (a run answering it was cancelled before it did)
            # keeps its thread interrupted.
            (
                "UPDATE server_threads SET status = 'interrupted' WHERE thread_id = ? "
                "AND status = 'idle' AND interrupts <> '[]'",
                (thread_id,),
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
        ]

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

    # -- assistants ------------------------------------------------------------------------
    def _insert_version(self, assistant: StoredAssistant) -> None:
        self._run_sql(
            f"INSERT INTO server_assistant_versions ({_ASSISTANT_FIELDS}, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*_assistant_fields(assistant), assistant.updated_at),
        )

    def put_assistant(self, assistant: StoredAssistant, *, owner: str | None = None) -> bool:
        """Store a new assistant, made by `owner`, as its version 1; False (nothing
        written) when its id is taken."""
        with self.transaction():
            cursor = self._run_sql(
                f"INSERT INTO server_assistants ({_ASSISTANT_COLUMNS}, owner) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (assistant_id) DO NOTHING",
                (*_assistant_fields(assistant), assistant.created_at, assistant.updated_at, owner),
            )
            created = bool(cursor.rowcount == 1)
            if created:
                self._insert_version(assistant)
        return created

    def assistant(self, assistant_id: str) -> StoredAssistant | None:
        """An assistant as its current version says."""
        rows = self._all(
            f"SELECT {_ASSISTANT_COLUMNS} FROM server_assistants WHERE assistant_id = ?",
            (assistant_id,),
        )
        return _assistant(rows[0]) if rows else None

    def assistants(
        self,
        *,
        graph_id: str | None = None,
        name: str | None = None,
        metadata: dict[str, Any] | None = None,
        sort_by: str = "created_at",
        descending: bool = True,
        only: tuple[str, Sequence[Any]] = ("", ()),
    ) -> list[StoredAssistant]:
        """The assistants of `graph_id` (every graph's when None) whose name holds `name`
        (any case) and whose metadata has `metadata`'s pairs, sorted; `only` is a
        condition on their columns (led by ` AND `) and its parameters."""
        if sort_by not in _ASSISTANT_SORTS:
            raise ValueError(f"assistants are sorted by one of {sorted(_ASSISTANT_SORTS)}")
        order = "DESC" if descending else "ASC"
        where, params = (" AND graph_id = ?", (graph_id,)) if graph_id is not None else ("", ())
        condition, bound = only
        rows = self._all(
            f"SELECT {_ASSISTANT_COLUMNS} FROM server_assistants WHERE 1 = 1{where}{condition} "
            f"ORDER BY {sort_by} {order}, assistant_id {order}",
            (*params, *bound),
        )
        wanted = (name or "").casefold()
        return [
            found
            for found in map(_assistant, rows)
            if wanted in found.name.casefold() and _has(found.metadata, metadata)
        ]

    def new_assistant_version(
        self, assistant_id: str, changes: dict[str, Any]
    ) -> StoredAssistant | None:
        """Make the next version of an assistant, its current one with `changes` (metadata
        merged into the current metadata, other fields replaced), and point the assistant
        at it; None when there is no such assistant."""
        changes = dict(changes)
        lock = " FOR UPDATE" if self.postgres else ""
        with self.transaction():
            rows = self._run_sql(
                f"SELECT {_ASSISTANT_COLUMNS} FROM server_assistants WHERE assistant_id = ?{lock}",
                (assistant_id,),
            ).fetchall()
            if not rows:
                return None
            current = _assistant(rows[0])
            last = self._run_sql(
                "SELECT MAX(version) FROM server_assistant_versions WHERE assistant_id = ?",
                (assistant_id,),
            ).fetchone()[0]
            metadata = {**current.metadata, **changes.pop("metadata", {})}
            new = attrs.evolve(
                current,
                version=(last or current.version) + 1,
                metadata=metadata,
                updated_at=time.time(),
                **changes,
            )
            self._insert_version(new)
            self._point_at(new)
        return new

    def _point_at(self, version: StoredAssistant) -> None:
        self._run_sql(
            "UPDATE server_assistants SET graph_id = ?, version = ?, name = ?, description = ?, "
            "config = ?, context = ?, metadata = ?, updated_at = ? WHERE assistant_id = ?",
            (*_assistant_fields(version)[1:], version.updated_at, version.assistant_id),
        )

    def assistant_versions(
        self, assistant_id: str, *, metadata: dict[str, Any] | None = None
    ) -> list[StoredAssistant]:
        """An assistant's versions whose metadata has `metadata`'s pairs, the newest first."""
        rows = self._all(
            f"SELECT {_VERSION_COLUMNS} FROM server_assistant_versions WHERE assistant_id = ? "
            "ORDER BY version DESC",
            (assistant_id,),
        )
        return [found for found in map(_assistant, rows) if _has(found.metadata, metadata)]

    def set_latest_assistant(self, assistant_id: str, version: int) -> StoredAssistant | None:
        """Point an assistant at one of its versions; None when it has no such version."""
        with self.transaction():
            rows = self._run_sql(
                f"SELECT {_VERSION_COLUMNS} FROM server_assistant_versions "
                "WHERE assistant_id = ? AND version = ?",
                (assistant_id, version),
            ).fetchall()
            if not rows:
                return None
            self._point_at(attrs.evolve(_assistant(rows[0]), updated_at=time.time()))
        return self.assistant(assistant_id)

    def delete_assistant(
        self,
        assistant_id: str,
        *,
        threads: bool,
        keep: Callable[[Mapping[str, Any]], bool] = lambda metadata: True,
    ) -> list[str]:
        """Delete an assistant and its versions; with `threads`, also the threads it ran
        on or that name it in their metadata (`assistant_id`), with their runs and events,
        those whose metadata `keep` passes (an authorization filter's: another's stay).
        The ids of the threads deleted."""
        with self.transaction():
            doomed: list[str] = []
            if threads:
                ran = self._run_sql(
                    "SELECT DISTINCT thread_id FROM server_runs WHERE assistant_id = ?",
                    (assistant_id,),
                ).fetchall()
                ran_on = {row[0] for row in ran}
                named = self._run_sql("SELECT thread_id, metadata FROM server_threads").fetchall()
                doomed = sorted(
                    thread_id
                    for thread_id, metadata in ((row[0], orjson.loads(row[1])) for row in named)
                    if (thread_id in ran_on or metadata.get("assistant_id") == assistant_id)
                    and keep(metadata)
                )
            running: list[str] = []
            for thread_id in doomed:
                running += self._delete_thread(self._run_sql, thread_id)
            if self.postgres:
                self._announce_cancels(running)
            self._run_sql(
                "DELETE FROM server_assistant_versions WHERE assistant_id = ?", (assistant_id,)
            )
            self._run_sql("DELETE FROM server_assistants WHERE assistant_id = ?", (assistant_id,))
        if not self.postgres:
            self._announce_cancels(running)
        return doomed


def _pass_on(
    listener: Any,
    wake: Callable[[], None],
    cancel: Callable[[str], None],
    stopping: threading.Event,
) -> None:
    """Call `wake` or `cancel` on each notification `listener` hears, until `stopping`."""
    while not stopping.is_set():
        for note in listener.notifies(timeout=0.5):
            if note.channel == CANCELS:
                cancel(note.payload)
            else:
                wake()


def _assistant_fields(assistant: StoredAssistant) -> tuple[Any, ...]:
    """An assistant's columns up to its metadata, JSON ones encoded."""
    return (
        assistant.assistant_id,
        assistant.graph_id,
        assistant.version,
        assistant.name,
        assistant.description,
        orjson.dumps(assistant.config).decode(),
        orjson.dumps(assistant.context).decode(),
        orjson.dumps(assistant.metadata).decode(),
    )


def _has(metadata: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    return all(metadata.get(key) == value for key, value in (wanted or {}).items())


_OWNED = {
    "assistants": ("server_assistants", "assistant_id"),
    "threads": ("server_threads", "thread_id"),
    "runs": ("server_runs", "run_id"),
    "crons": ("server_crons", "cron_id"),
}
"""The tables of the resources with an owner, and their id columns."""

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
