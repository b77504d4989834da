"""What the PostgreSQL stores share before they connect: psycopg, and their settings checked.

`PostgresStore` (checkpoints) and `PostgresMemory` (memory) take the same
connection string and schema name, refuse the same mistakes at once, and
name themselves the same way in reprs and errors: by host, port, database
and schema, so that a password in the connection string is never shown.
"""

from __future__ import annotations

import re
from typing import Any

from ._extras import pip_install

__all__ = ("load_psycopg", "place")

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def load_psycopg(owner: str) -> Any:
    """The psycopg module, or an `ImportError` naming `owner` and the line that installs it."""
    try:
        import psycopg
    except ImportError:
        raise ImportError(f"{owner} needs psycopg: {pip_install('postgres')}") from None
    return psycopg


def place(owner: str, conninfo: str, schema: str) -> str:
    """`host:port/dbname/schema`, after checking `conninfo` and `schema`.

    The schema name is spliced into SQL as an identifier, so it is held to
    lowercase letters, digits and underscores.

    Raises:
        ValueError: `conninfo` is not a libpq connection string or URL, or
            `schema` is not such a name.
    """
    pg = load_psycopg(owner)
    try:
        parts = pg.conninfo.conninfo_to_dict(conninfo)
    except pg.ProgrammingError as exc:
        raise ValueError(f"not a PostgreSQL connection string: {exc}") from None
    if not _SCHEMA_NAME.fullmatch(schema):
        raise ValueError(
            f"schema is a name of lowercase letters, digits and underscores, not {schema!r}"
        )
    where = f"{parts.get('host', 'localhost')}:{parts.get('port', 5432)}"
    return f"{where}/{parts.get('dbname', '')}/{schema}"
