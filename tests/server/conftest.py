from collections.abc import Iterator
from typing import Any

import pytest

from tests.pg_server import drop_schema, fresh_schema
from tests.pg_server import postgres_server as postgres_server  # a fixture


@pytest.fixture
def pg(postgres_server: Any) -> Iterator[tuple[str, str]]:
    """The test server's connection string and a schema of the test's own."""
    schema = fresh_schema()
    yield postgres_server.dsn, schema
    drop_schema(postgres_server.dsn, schema)
