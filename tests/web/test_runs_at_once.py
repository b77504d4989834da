"""Two requests at once: a run id is one run's, and a thread is read by one turn at a time."""

from typing import Any

import anyio
import pytest

from agentgraph import AgentContext, GraphBuilder, GraphRunner, node
from agentgraph.checkpoint import MemoryStore, ThreadBusy, read_thread
from agentgraph.llm import Message
from agentgraph.tracing import Redactor
from agentgraph.web import RunInputError
from agentgraph.web._runs import Runs
from tests.web.test_agui_client import remembers

pytestmark = pytest.mark.anyio


class Gated:
    """A store whose first read of one kind waits at a gate after reading, so that
    another request can come in between that read and what the first does with it."""

    def __init__(self, kind: str) -> None:
        self.store = MemoryStore()
        self.kind = kind
        self.entered = anyio.Event()
        self.gate = anyio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def _held(self, kind: str, value: Any) -> Any:
        if kind == self.kind and not self.entered.is_set():
            self.entered.set()
            await self.gate.wait()
        return value

    async def load(self, run_id: str) -> Any:
        return await self._held("load", await self.store.load(run_id))

    async def load_thread(self, thread_id: str) -> Any:
        return await self._held("load_thread", await self.store.load_thread(thread_id))


@node
def echo(ctx: AgentContext[str]) -> AgentContext[str]:
    return ctx


with GraphBuilder[str, str]("echo") as g:
    g.start.edge_to(echo).edge_to(g.finish)
echoes = g.build()


def said(*texts: str) -> AgentContext[str]:
    """What an AG-UI request sending this conversation (user and assistant by turns) runs on."""
    said = [Message.user(t) if i % 2 == 0 else Message.assistant(t) for i, t in enumerate(texts)]
    return AgentContext(texts[-1], history=tuple(said))


async def test_two_starts_with_one_run_id_at_once_start_one_run() -> None:
    store = Gated("load")
    runs = Runs(echoes, runner=GraphRunner(), store=store, redactor=Redactor())
    started: list[Any] = []
    async with anyio.create_task_group() as tg:
        runs.tasks = tg

        async def first() -> None:
            started.append(await runs.start(AgentContext("a"), run_id="r1"))

        tg.start_soon(first)
        await store.entered.wait()  # the first start is reading the store
        with pytest.raises(RunInputError, match="run id 'r1' is taken"):
            await runs.start(AgentContext("b"), run_id="r1")
        store.gate.set()
    (live,) = started
    assert runs.live["r1"] is live and (live.status, live.output) == ("ok", "a")


async def test_a_turn_of_a_thread_another_request_is_reading_is_thread_busy() -> None:
    store = Gated("load_thread")
    runs = Runs(remembers(), runner=GraphRunner(), store=store, redactor=Redactor())
    started: list[Any] = []
    async with anyio.create_task_group() as tg:
        runs.tasks = tg

        async def first() -> None:
            started.append(await runs.start(said("a"), run_id="ra", thread_id="t"))

        tg.start_soon(first)
        await store.entered.wait()  # the first request has read the thread
        with pytest.raises(ThreadBusy, match="'ra' of this server"):
            await runs.start(said("b"), run_id="rb", thread_id="t")
        assert "rb" not in runs.live
        store.gate.set()
    (live,) = started
    assert live.output == "a"  # the model saw the first request's conversation only
    thread = await read_thread(store.store, "t")
    assert thread.head == "ra" and [m.content for m in thread.messages] == ["a", "a"]
    # Once the turn has ended, the thread takes the next one.
    async with anyio.create_task_group() as tg:
        runs.tasks = tg
        second = await runs.start(said("a", "a", "b"), run_id="rb", thread_id="t")
    assert second.output == "a | a | b"


async def test_a_start_that_fails_leaves_its_run_id_and_thread_free() -> None:
    runs = Runs(echoes, runner=GraphRunner(), store=MemoryStore(), redactor=Redactor())
    with pytest.raises(RuntimeError, match="task group is not running"):
        await runs.start(said("a"), run_id="r1", thread_id="t")
    assert runs.live == {}
    async with anyio.create_task_group() as tg:
        runs.tasks = tg
        live = await runs.start(said("a"), run_id="r1", thread_id="t")
    assert live.status == "ok"
