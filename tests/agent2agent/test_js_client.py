"""The official TypeScript SDK (@a2a-js/sdk) as a second client of a served graph."""

from __future__ import annotations

import json

import anyio
import pytest

from agentgraph.a2a import a2a_app
from agentgraph.checkpoint import MemoryStore
from tests.npm import JS, need_npm_package

from .serving import approves, asks, echo, graph_of, served, waits

pytestmark = pytest.mark.anyio

BINDINGS = ["JSONRPC", "HTTP+JSON"]
WORKING, COMPLETED, CANCELED, INPUT = 2, 3, 5, 6  # TaskState numbers


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _client_installed() -> None:
    """Skip (or fail in CI) before a server starts: a skip inside its task group is an error."""
    need_npm_package("@a2a-js/sdk")


async def _drive(url: str, binding: str, scenario: str) -> list[list]:
    node, _ = need_npm_package("@a2a-js/sdk")
    done = await anyio.run_process(
        [node, str(JS / "a2a_client.mjs"), url, binding, scenario], check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_typescript_client_streams_answers_a_question_and_reads_the_task(binding):
    store = MemoryStore()
    async with served(lambda url: a2a_app(graph_of(asks), url=url, store=store)) as url:
        first, second, task = await _drive(url, binding, "ask")
    assert first == [1, WORKING, "", INPUT, "which colour for kite?"]
    assert second == [WORKING, "", "artifact:kite in green", COMPLETED, ""]
    assert task == [COMPLETED, True]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_typescript_client_cancels_a_running_task(binding):
    make = lambda url: a2a_app(graph_of(echo, waits), url=url, store=MemoryStore())  # noqa: E731
    async with served(make) as url:
        cancelled, task = await _drive(url, binding, "cancel")
    assert cancelled == [CANCELED]
    assert task == [CANCELED, "cancelled after step 1"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_typescript_client_answers_with_the_task_id_only(binding):
    # After an unclear answer too: the task and its context go on, the run is not lost.
    store = MemoryStore()
    async with served(lambda url: a2a_app(graph_of(approves), url=url, store=store)) as url:
        unclear, answer, task = await _drive(url, binding, "task-only")
    assert unclear[0] == INPUT and "answer yes or no" in unclear[1]
    assert answer == [WORKING, "", "artifact:approved=True", COMPLETED, ""]
    assert task == [COMPLETED, True, True, True]
