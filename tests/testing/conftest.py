from collections.abc import Iterator

import pytest

from agentgraph.testing import FakeServer


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeServer]:
    # One server per module: it runs in its own thread, so the same instance
    # serves asyncio and trio tests alike; `server` resets it for each test.
    with FakeServer() as server:
        yield server


@pytest.fixture
def server(shared_server: FakeServer) -> Iterator[FakeServer]:
    shared_server.reset()
    yield shared_server
    shared_server.reset()
