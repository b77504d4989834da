"""Real MCP servers for the tests: the script in `server.py` over stdio, and over
streamable HTTP on a loopback port, each started here and always ended."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = str(Path(__file__).with_name("server.py"))
START_TIMEOUT = 20.0


def stdio_command() -> tuple[str, str]:
    """The command and argument that serve the test server over stdio."""
    return sys.executable, SCRIPT


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (ended, not yet reaped by its parent) is not alive either.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpServer:
    """The test server over streamable HTTP in a subprocess; `restart()` starts a new one."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: subprocess.Popen[bytes] | None = None

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        """The server's command line and environment (None: this process's)."""
        return [sys.executable, SCRIPT, "http", str(self.port)], None

    def start(self) -> None:
        command, env = self.command()
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the MCP test server exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the MCP test server did not listen within {START_TIMEOUT}s")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
