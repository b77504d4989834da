from tests.pg_server import postgres_server as postgres_server  # a fixture
