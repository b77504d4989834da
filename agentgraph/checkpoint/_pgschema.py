"""The schema of `PostgresStore`: its versions, and bringing a database up to date."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from .._core._errors import CheckpointError

if TYPE_CHECKING:
    import psycopg

__all__ = ("MIGRATIONS", "migrate")

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


def _lock_key(schema: str) -> int:
    """The advisory lock that serializes creating and migrating `schema`."""
    digest = hashlib.sha256(f"agentgraph schema {schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def migrate(conn: psycopg.Connection[Any], schema: str) -> None:
    """Create the schema's tables, or bring them up to date, under an advisory lock."""
    from psycopg import sql

    name = sql.Identifier(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(schema),))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version "
            "(one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), version INTEGER NOT NULL)"
        )
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        version = 0 if row is None else int(row[0])
        if version > len(MIGRATIONS):
            raise CheckpointError(
                f"schema {schema!r} is at version {version}, written by a newer agentgraph; "
                f"this one knows versions up to {len(MIGRATIONS)}"
            )
        for script in MIGRATIONS[version:]:
            conn.execute(script)
        conn.execute(
            "INSERT INTO schema_version (version) VALUES (%s) "
            "ON CONFLICT (one) DO UPDATE SET version = excluded.version",
            (len(MIGRATIONS),),
        )
