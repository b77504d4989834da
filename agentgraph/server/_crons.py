"""Crons (scheduled runs) and their ticks, kept in the server's database beside the queue.

`server_crons` holds each cron: its schedule, time zone, end, whether it is
enabled, the run it makes (`payload`) and the instant it fires next
(`next_run_at`, None once it has ended). `server_cron_ticks` holds one row per
tick fired, keyed by the cron and the tick's instant: a worker claims a tick by
inserting its row (`ON CONFLICT DO NOTHING`) in the transaction that moves the
cron's `next_run_at` on, the cron's row taken with `FOR UPDATE SKIP LOCKED` on
PostgreSQL (SQLite's writers take turns), so each tick is claimed by one worker
however many there are. The tick's run and thread ids are derived from the
cron and the instant, so a tick whose worker died before it queued the run is
queued again by another (`stalled`), and never twice.
A day of ticks (`TICKS_KEPT`) is kept as the record of what fired.

Catch-up: a cron whose ticks came while no worker was up fires once when a
worker comes back (for the first tick it missed), and then goes on from the
next tick after that instant; the other missed ticks are dropped. That is the
rule of systemd's persistent timers, of anacron, and of Quartz's default for
cron triggers: a job that was down for a day runs once, not once per missed
minute.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import orjson

from ._queue import CHANNEL, is_postgres
from ._schedule import next_tick

__all__ = ("CRON_SORTS", "TICKS_KEPT", "CronStore", "StoredCron", "Tick", "next_run")

TICKS_KEPT = 86400.0
"""Seconds a tick's row is kept once its run is queued: a cron's rows older than this
are deleted as it fires (a tick already passed is never claimed again)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS server_crons (
    cron_id TEXT PRIMARY KEY,
    assistant_id TEXT NOT NULL,
    thread_id TEXT,
    schedule TEXT NOT NULL,
    timezone TEXT,
    end_time REAL,
    enabled INTEGER NOT NULL DEFAULT 1,
    on_run_completed TEXT,
    payload TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    owner TEXT,
    next_run_at REAL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS server_crons_due ON server_crons (enabled, next_run_at);
CREATE TABLE IF NOT EXISTS server_cron_ticks (
    cron_id TEXT NOT NULL,
    tick_at REAL NOT NULL,
    run_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    status TEXT NOT NULL,
    claimed_by TEXT NOT NULL,
    claimed_at REAL NOT NULL,
    PRIMARY KEY (cron_id, tick_at)
);
"""

_COLUMNS = (
    "cron_id, assistant_id, thread_id, schedule, timezone, end_time, enabled, "
    "on_run_completed, payload, metadata, next_run_at, created_at, updated_at"
)

_JOINED_COLUMNS = ", ".join(f"c.{column}" for column in _COLUMNS.split(", "))

CRON_SORTS = {
    "cron_id": "cron_id",
    "assistant_id": "assistant_id",
    "thread_id": "thread_id",
    "created_at": "created_at",
    "updated_at": "updated_at",
    "next_run_date": "next_run_at",
    "end_time": "end_time",
}
"""The fields crons are sorted by, as the clients name them, and their columns."""


@attrs.frozen
class StoredCron:
    """A cron: the run `payload` it makes on `schedule` (read in `timezone`), on its
    thread or, when `thread_id` is None, on a new thread each tick."""

    cron_id: str
    assistant_id: str
    thread_id: str | None
    schedule: str
    timezone: str | None
    end_time: float | None
    enabled: bool
    on_run_completed: str | None
    payload: dict[str, Any]
    metadata: dict[str, Any]
    next_run_at: float | None
    created_at: float
    updated_at: float


@attrs.frozen
class Tick:
    """One firing of a cron, claimed by one worker: the run it queues and its thread."""

    cron: StoredCron
    tick_at: float
    run_id: str
    thread_id: str
    status: str
    """`claimed` until its run is queued, then `queued`; `rejected` when the thread's
    strategy refused it."""


def next_run(cron: StoredCron, after: float) -> float | None:
    """When `cron` fires next after `after`: None when it is disabled or has ended."""
    if not cron.enabled:
        return None
    found = next_tick(cron.schedule, cron.timezone, after)
    if found is None or (cron.end_time is not None and found > cron.end_time):
        return None
    return found


def tick_ids(cron: StoredCron, tick_at: float) -> tuple[str, str]:
    """The run id of a cron's tick and its thread's (the cron's, or a new one's)."""
    base = f"agentgraph:cron/{cron.cron_id}/{tick_at!r}"
    run_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{base}/run"))
    thread_id = cron.thread_id or str(uuid.uuid5(uuid.NAMESPACE_URL, f"{base}/thread"))
    return run_id, thread_id


def _cron(row: Sequence[Any]) -> StoredCron:
    return StoredCron(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        bool(row[6]),
        row[7],
        orjson.loads(row[8]),
        orjson.loads(row[9]),
        row[10],
        row[11],
        row[12],
    )


def _row(cron: StoredCron) -> tuple[Any, ...]:
    return (
        cron.cron_id,
        cron.assistant_id,
        cron.thread_id,
        cron.schedule,
        cron.timezone,
        cron.end_time,
        int(cron.enabled),
        cron.on_run_completed,
        orjson.dumps(cron.payload).decode(),
        orjson.dumps(cron.metadata).decode(),
        cron.next_run_at,
        cron.created_at,
        cron.updated_at,
    )


def _has(metadata: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    return all(metadata.get(key) == value for key, value in (wanted or {}).items())


class CronStore:
    """Crons and their ticks in the database at `where` (an SQLite file, or a PostgreSQL
    connection string whose tables live in `schema`); each method is a short transaction.

    Methods block on the database: call them off the event loop.
    """

    def __init__(self, where: str, *, schema: str = "agentgraph") -> None:
        self.postgres = is_postgres(where)
        self._lock = threading.Lock()
        self._db: Any
        if self.postgres:
            import psycopg

            self._db = psycopg.connect(where, autocommit=True, options=f"-c search_path={schema}")
            self._begin = "BEGIN"
            self._skip_locked = " FOR UPDATE SKIP LOCKED"
            with self._lock:
                # One process at a time, as the queue makes its tables.
                self._db.execute("BEGIN")
                self._db.execute("SELECT pg_advisory_xact_lock(hashtext('agentgraph.server'))")
                self._db.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                self._create(_SCHEMA.replace(" REAL", " DOUBLE PRECISION"))
                self._db.execute("COMMIT")
        else:
            self._db = sqlite3.connect(where, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA busy_timeout=10000")
            self._begin = "BEGIN IMMEDIATE"
            self._skip_locked = ""
            with self._lock:
                self._create(_SCHEMA)

    def _create(self, schema_sql: str) -> None:
        # The table's first shape (no `enabled` column) only held the room for crons and
        # was never written: it gives way to this one.
        if self._table_exists():
            columns = self._db.execute("SELECT * FROM server_crons WHERE 1 = 0").description
            if "enabled" not in {column[0] for column in columns}:
                self._db.execute("DROP TABLE server_crons")
        for statement in filter(str.strip, schema_sql.split(";")):
            self._db.execute(statement)

    def _table_exists(self) -> bool:
        if self.postgres:
            sql = "SELECT to_regclass('server_crons') IS NOT NULL"
        else:
            sql = "SELECT COUNT(*) FROM sqlite_master WHERE name = 'server_crons'"
        return bool(self._db.execute(sql).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def _run_sql(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._db.execute(self._sql(sql), params)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        with self._lock:
            self._db.execute(self._begin)
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _announce(self) -> None:
        """Wake the workers listening (PostgreSQL): a cron's next tick changed."""
        if self.postgres:
            self._db.execute(f"NOTIFY {CHANNEL}")

    # -- crons ----------------------------------------------------------------------------
    def put(self, cron: StoredCron, *, owner: str | None = None) -> None:
        """Store a new cron, made by `owner` (its ticks' runs are theirs too)."""
        with self._writing():
            self._run_sql(
                f"INSERT INTO server_crons ({_COLUMNS}, owner) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*_row(cron), owner),
            )
            self._announce()

    def get(self, cron_id: str) -> StoredCron | None:
        with self._lock:
            rows = self._run_sql(
                f"SELECT {_COLUMNS} FROM server_crons WHERE cron_id = ?", (cron_id,)
            ).fetchall()
        return _cron(rows[0]) if rows else None

    def replace(self, cron: StoredCron) -> None:
        """Write `cron` over the stored one of its id."""
        with self._writing():
            self._run_sql(
                "UPDATE server_crons SET assistant_id = ?, thread_id = ?, schedule = ?, "
                "timezone = ?, end_time = ?, enabled = ?, on_run_completed = ?, payload = ?, "
                "metadata = ?, next_run_at = ?, created_at = ?, updated_at = ? "
                "WHERE cron_id = ?",
                (*_row(cron)[1:], cron.cron_id),
            )
            self._announce()

    def delete(self, cron_id: str) -> bool:
        """Delete a cron and its ticks' records; False when there was none."""
        with self._writing():
            self._run_sql("DELETE FROM server_cron_ticks WHERE cron_id = ?", (cron_id,))
            cursor = self._run_sql("DELETE FROM server_crons WHERE cron_id = ?", (cron_id,))
            return bool(cursor.rowcount == 1)

    def search(
        self,
        *,
        assistant_id: str | None = None,
        thread_id: str | None = None,
        enabled: bool | None = None,
        metadata: dict[str, Any] | None = None,
        sort_by: str = "created_at",
        descending: bool = True,
        only: tuple[str, Sequence[Any]] = ("", ()),
    ) -> list[StoredCron]:
        """The crons matching every filter given, sorted by `sort_by` (a `CRON_SORTS` key);
        `only` is a condition on their columns (led by ` AND `) and its parameters."""
        where: list[str] = ["1 = 1"]
        params: list[Any] = []
        for column, value in (("assistant_id", assistant_id), ("thread_id", thread_id)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if enabled is not None:
            where.append("enabled = ?")
            params.append(int(enabled))
        order = "DESC" if descending else "ASC"
        condition, bound = only
        with self._lock:
            rows = self._run_sql(
                f"SELECT {_COLUMNS} FROM server_crons WHERE {' AND '.join(where)}{condition} "
                f"ORDER BY {CRON_SORTS[sort_by]} {order}, cron_id {order}",
                [*params, *bound],
            ).fetchall()
        return [cron for cron in map(_cron, rows) if _has(cron.metadata, metadata)]

    def next_due(self) -> float | None:
        """The soonest instant an enabled cron fires at."""
        with self._lock:
            found = self._run_sql(
                "SELECT MIN(next_run_at) FROM server_crons WHERE enabled = 1"
            ).fetchone()[0]
        return None if found is None else float(found)

    # -- ticks ----------------------------------------------------------------------------
    def claim_ticks(self, worker: str, now: float, *, count: int = 20) -> list[Tick]:
        """Claim the ticks due at `now` of up to `count` crons, each for this worker alone,
        and move each cron on to its next tick after `now` (the catch-up rule)."""
        claimed: list[Tick] = []
        with self._writing():
            rows = self._run_sql(
                f"SELECT {_COLUMNS} FROM server_crons WHERE enabled = 1 "
                f"AND next_run_at <= ? ORDER BY next_run_at LIMIT ?{self._skip_locked}",
                (now, count),
            ).fetchall()
            for cron in map(_cron, rows):
                tick_at = cron.next_run_at
                assert tick_at is not None  # selected by it
                if cron.end_time is None or tick_at <= cron.end_time:
                    run_id, thread_id = tick_ids(cron, tick_at)
                    cursor = self._run_sql(
                        "INSERT INTO server_cron_ticks (cron_id, tick_at, run_id, thread_id, "
                        "status, claimed_by, claimed_at) VALUES (?, ?, ?, ?, 'claimed', ?, ?) "
                        "ON CONFLICT (cron_id, tick_at) DO NOTHING",
                        (cron.cron_id, tick_at, run_id, thread_id, worker, now),
                    )
                    if cursor.rowcount == 1:
                        claimed.append(Tick(cron, tick_at, run_id, thread_id, "claimed"))
                self._run_sql(
                    "UPDATE server_crons SET next_run_at = ? WHERE cron_id = ?",
                    (next_run(cron, max(now, tick_at)), cron.cron_id),
                )
                self._run_sql(
                    "DELETE FROM server_cron_ticks WHERE cron_id = ? AND tick_at < ? "
                    "AND status <> 'claimed'",
                    (cron.cron_id, tick_at - TICKS_KEPT),
                )
        return claimed

    def stalled(self, worker: str, now: float, *, older_than: float) -> list[Tick]:
        """Take over the ticks claimed more than `older_than` seconds ago whose run is not
        queued yet (their worker stopped in between), each for this worker alone."""
        with self._lock:
            rows = self._run_sql(
                f"SELECT t.tick_at, t.claimed_at, {_JOINED_COLUMNS} "
                "FROM server_cron_ticks AS t JOIN server_crons AS c ON c.cron_id = t.cron_id "
                "WHERE t.status = 'claimed' AND t.claimed_at < ?",
                (now - older_than,),
            ).fetchall()
        taken = []
        for row in rows:
            cron = _cron(row[2:])
            with self._writing():
                cursor = self._run_sql(
                    "UPDATE server_cron_ticks SET claimed_by = ?, claimed_at = ? "
                    "WHERE cron_id = ? AND tick_at = ? AND claimed_at = ? AND status = 'claimed'",
                    (worker, now, cron.cron_id, row[0], row[1]),
                )
            if cursor.rowcount == 1:
                taken.append(Tick(cron, row[0], *tick_ids(cron, row[0]), "claimed"))
        return taken

    def mark(self, tick: Tick, status: str) -> None:
        """Record what became of a tick."""
        with self._writing():
            self._run_sql(
                "UPDATE server_cron_ticks SET status = ? WHERE cron_id = ? AND tick_at = ?",
                (status, tick.cron.cron_id, tick.tick_at),
            )

    def ticks(self, cron_id: str) -> list[Tick]:
        """A cron's ticks fired so far, the oldest first."""
        cron = self.get(cron_id)
        if cron is None:
            return []
        with self._lock:
            rows = self._run_sql(
                "SELECT tick_at, run_id, thread_id, status FROM server_cron_ticks "
                "WHERE cron_id = ? ORDER BY tick_at",
                (cron_id,),
            ).fetchall()
        return [Tick(cron, row[0], row[1], row[2], row[3]) for row in rows]
