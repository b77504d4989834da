import pytest

from tests.pg_server import postgres_server as postgres_server  # a session fixture


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
