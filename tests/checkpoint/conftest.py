import pytest

from agentgraph.checkpoint import MemoryStore, PostgresStore, SQLiteStore
from tests.checkpoint.places import places as places  # a fixture
from tests.pg_server import drop_schema, fresh_schema


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request, tmp_path):
    """Each checkpoint store the library ships (Postgres: a schema of its own per test)."""
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "sqlite":
        sqlite = SQLiteStore(tmp_path / "runs.db")
        yield sqlite
        await sqlite.aclose()
        return
    server = request.getfixturevalue("postgres_server")
    schema = fresh_schema()
    postgres = PostgresStore(server.dsn, schema=schema)
    yield postgres
    await postgres.aclose()
    drop_schema(server.dsn, schema)


@pytest.fixture
def dsn(postgres_server):
    """The test PostgreSQL server's connection string."""
    return postgres_server.dsn


@pytest.fixture
def schema(dsn):
    """A schema of its own for the test, dropped afterwards."""
    name = fresh_schema()
    yield name
    drop_schema(dsn, name)
