import pytest

from agentgraph.memory import InMemoryMemory, PostgresMemory, SQLiteMemory
from tests.pg_server import drop_schema, fresh_schema


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_memory(request, tmp_path):
    """Builds the store under test (Postgres: a schema of its own per test)."""
    made = []
    schemas = []

    def make(**options):
        if request.param == "memory":
            return InMemoryMemory(**options)
        if request.param == "sqlite":
            store = SQLiteMemory(tmp_path / "memory.db", **options)
        else:
            server = request.getfixturevalue("postgres_server")
            if not schemas:
                schemas.append(fresh_schema())
            store = PostgresMemory(server.dsn, schema=schemas[0], **options)
        made.append(store)
        return store

    make.kind = request.param
    yield make
    for store in made:
        store.close()
    if schemas:
        drop_schema(request.getfixturevalue("postgres_server").dsn, schemas[0])
