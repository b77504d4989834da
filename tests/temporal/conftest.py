"""A Temporal dev server for the session: the registry's binary, on loopback, in memory,
always stopped at the end."""

import asyncio
import concurrent.futures
import os
import socket
import subprocess
import tempfile
import time
import uuid

import pytest

from agentgraph.temporal import dev_server_path

STARTUP = 60.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Temporal's SDK runs on asyncio only (see test_trio_is_refused)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="session")
def temporal_address():
    """The address of a dev server started for this session."""
    try:
        binary = dev_server_path()
    except FileNotFoundError as missing:
        if os.environ.get("CI"):
            pytest.fail(f"the Temporal dev server is required in CI: {missing}")
        pytest.skip(f"no Temporal dev server binary (outside CI only): {missing}")
    port = _free_port()
    command = [
        binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
        "--port", str(port), "--http-port", str(_free_port()),
        "--metrics-port", str(_free_port()), "--log-level", "error",
    ]  # fmt: skip
    # The CLI keeps a cluster id under ~/.config/temporalio: a home of its own keeps it in temp.
    with tempfile.TemporaryFile() as log, tempfile.TemporaryDirectory() as home:
        yield from _serve(command, port, log, home)


def _answers(address: str) -> bool:
    """True once the server's frontend answers a client (it listens before it is healthy)."""
    from temporalio.client import Client

    async def probe() -> None:
        await Client.connect(address)

    # In a thread of its own: the test runner's event loop may live in this one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        try:
            pool.submit(asyncio.run, probe()).result()
        except Exception:
            return False
    return True


def _serve(command, port, log, home):
    env = os.environ | {"HOME": home}
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=env)
    try:
        deadline = time.monotonic() + STARTUP
        while not (_listening(port) and _answers(f"127.0.0.1:{port}")):
            if server.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"the Temporal dev server did not start: {log.read()[-2000:]!r}")
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture
async def client(temporal_address):
    from temporalio.client import Client

    return await Client.connect(temporal_address)


@pytest.fixture
def queue() -> str:
    return f"q-{uuid.uuid4().hex[:12]}"
