"""Both PostgreSQL stores check their settings, and name themselves, the same way."""

import pytest

from agentgraph.checkpoint import PostgresStore
from agentgraph.memory import PostgresMemory

STORES = [PostgresMemory, PostgresStore]


@pytest.mark.parametrize("make", STORES)
def test_a_store_names_itself_without_the_password(make):
    store = make("postgresql://app:s3cret@db.example:6543/agents", schema="mem")
    assert repr(store) == f"{make.__name__}('db.example:6543/agents/mem')"
    plain = make("dbname=agents password=s3cret")
    assert repr(plain) == f"{make.__name__}('localhost:5432/agents/agentgraph')"


@pytest.mark.parametrize("make", STORES)
@pytest.mark.parametrize(
    ("conninfo", "schema", "message"),
    [
        ("host=a port", "agentgraph", "not a PostgreSQL connection string"),
        ("postgresql://x/db", 'x"; DROP TABLE runs; --', "schema is a name"),
        ("postgresql://x/db", "Upper", "schema is a name"),
    ],
)
def test_bad_settings_are_refused_at_once(make, conninfo, schema, message):
    with pytest.raises(ValueError, match=message):
        make(conninfo, schema=schema)
