"""`a2a_app`: a graph served as an A2A agent, over JSON-RPC and HTTP+JSON.

The SDK does the protocol: its routes parse requests and answer malformed
ones with the protocol's error object, its request handler keeps tasks and
streams their events. agentgraph gives it the executor (the graph's runs),
the task store (the checkpoint store's, so tasks outlive the process) and a
check that refuses a message too large, or not the graph's input, before
any task or run begins. The SDK's server runs on asyncio only: the app
refuses to start under trio, and refuses each request under trio when the
ASGI server skips the lifespan. With a store, a starting app takes up the tasks
a stopped server left working (`_recovery`); a stopping one cancels the runs
it drives, which leaves their tasks working for the next start to take up.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import sniffio
from a2a.server.agent_execution import AgentExecutor
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError
from starlette.applications import Starlette
from starlette.middleware import Middleware

from .._core._errors import UsageError
from .._core._graph import Graph
from .._core._journal import JournalSource
from .._core._node import Node
from .._core._runner import GraphRunner, as_graph
from .._util._redact import Redactor
from ..checkpoint._store import CheckpointStore
from ..checkpoint._threads import ThreadStore
from ._card import Skill, agent_card
from ._contexts import ClaimingBuilder, Contexts
from ._executor import GraphExecutor
from ._parts import graph_input
from ._recovery import take_up_stopped
from ._tasks import CheckpointTaskStore

__all__ = ("MAX_MESSAGE_BYTES", "a2a_app", "asyncio_only")

MAX_MESSAGE_BYTES = 1_000_000
"""The largest message a served graph takes by default (its protobuf size, in bytes)."""

_MAX_ID = 128


def asyncio_only(what: str) -> None:
    """Refuse to go on under trio: the A2A SDK runs on asyncio only."""
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        library = None
    if library != "asyncio":
        raise UsageError(
            f"{what} needs asyncio: the A2A SDK runs on asyncio only, not {library or 'no loop'}; "
            "run this code under asyncio (anyio.run(..., backend='asyncio'))"
        )


class _Checked(DefaultRequestHandler):
    """The SDK's handler, refusing what no run should start on.

    A message that names its task and no `contextId` continues the task's
    context (A2A: the agent infers it from the task). With `contexts`, a
    message that would set a second task of one context working is refused
    (`_contexts`).
    """

    def __init__(
        self,
        executor: AgentExecutor,
        tasks: TaskStore,
        card: a2a_pb2.AgentCard,
        *,
        limit: int,
        input_type: Any,
        contexts: Contexts | None = None,
    ) -> None:
        self._claims = None if contexts is None else ClaimingBuilder(contexts)
        super().__init__(executor, tasks, card, request_context_builder=self._claims)
        self._limit = limit
        self._input_type = input_type

    def _check(self, params: a2a_pb2.SendMessageRequest) -> None:
        size = params.message.ByteSize()
        if size > self._limit:
            raise InvalidParamsError(
                f"the message is {size} bytes; this agent takes at most {self._limit}"
            )
        for name, value in (("contextId", params.message.context_id),):
            if len(value) > _MAX_ID or not value.isprintable():
                raise InvalidParamsError(f"{name} is at most {_MAX_ID} printable characters")
        if not params.message.task_id:  # a new task: the message is the graph's input
            try:
                graph_input(self._input_type, params.message)
            except ValueError as exc:
                raise InvalidParamsError(str(exc)) from None

    async def _task(self, task_id: str, context: ServerCallContext) -> a2a_pb2.Task | None:
        stored = await self._versioned_store.get(task_id, context)
        return None if stored is None else stored.task

    async def _continue_task(
        self, params: a2a_pb2.SendMessageRequest, context: ServerCallContext
    ) -> None:
        """Give a message that names only its task the task's `contextId`."""
        message = params.message
        if message.task_id and not message.context_id:
            task = await self._task(message.task_id, context)
            if task is not None:  # else the SDK says the task is not found
                message.context_id = task.context_id

    async def on_cancel_task(
        self, params: a2a_pb2.CancelTaskRequest, context: ServerCallContext
    ) -> Any:
        # A task waiting for input that no request woke since the server started is
        # not active: the SDK would cancel it without the executor, keeping the
        # question as its status. Woken, the executor says where its run stopped.
        task = await self._task(params.id, context)
        if task is not None and task.status.state == a2a_pb2.TaskState.TASK_STATE_INPUT_REQUIRED:
            registry: Any = self._active_task_registry
            await registry.get_or_create(
                task.id, call_context=context, context_id=task.context_id,
                create_task_if_missing=False,
            )  # fmt: skip
        return await super().on_cancel_task(params, context)

    def _released(self, params: a2a_pb2.SendMessageRequest) -> None:
        if self._claims is not None:
            self._claims.release(params)

    async def on_message_send(
        self, params: a2a_pb2.SendMessageRequest, context: ServerCallContext
    ) -> Any:
        self._check(params)
        await self._continue_task(params, context)
        try:
            return await super().on_message_send(params, context)
        finally:
            self._released(params)

    async def on_message_send_stream(
        self, params: a2a_pb2.SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any, None]:
        self._check(params)
        await self._continue_task(params, context)
        try:
            async for event in super().on_message_send_stream(params, context):
                yield event
        finally:
            self._released(params)


class _AsyncioOnly:
    """Refuses every request under trio, for ASGI servers that skip the lifespan."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            asyncio_only("an A2A server")
        await self.app(scope, receive, send)


def _lifespan(
    handler: _Checked, tasks: TaskStore, store: CheckpointStore | None
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        asyncio_only("an A2A server")
        try:
            async with anyio.create_task_group() as tg:
                if store is not None and isinstance(tasks, CheckpointTaskStore):
                    tg.start_soon(take_up_stopped, handler, tasks, store)
                yield
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await handler.aclose()  # no run outlives its server
                if isinstance(tasks, CheckpointTaskStore):
                    await tasks.settle()

    return lifespan


def a2a_app(
    graph: Node[Any, Any],
    *,
    url: str,
    store: CheckpointStore | None = None,
    runner: GraphRunner | None = None,
    name: str | None = None,
    description: str | None = None,
    version: str = "1.0.0",
    skills: Sequence[Skill] = (),
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> Starlette:
    """An ASGI app serving `graph` as an A2A agent reachable at `url`.

    It serves the Agent Card at `/.well-known/agent-card.json`, JSON-RPC at
    `url` and HTTP+JSON under it (`/message:send`, `/tasks/{id}`, ...). Each
    task is one run of the graph (its id is the run id) on the thread named by
    the task's `contextId` (a message naming its task only continues the
    task's context).

    With a checkpoint `store`, tasks are kept in it and a task survives a
    restart of the server: one waiting for input is answered as before, and
    one whose run was working when the server stopped is taken up when it
    starts again, its run resumed from its journal. A thread's turns run one
    at a time, so a message that would set a task working while another of
    its context works is refused with `UnsupportedOperationError`. Without a
    store, tasks live in memory and a graph that asks a question cannot be
    answered. Run it with any ASGI server on asyncio (uvicorn, say).
    """
    built: Graph[Any, Any] = as_graph(graph)
    if max_message_bytes < 1:
        raise UsageError(f"max_message_bytes must be at least 1, not {max_message_bytes}")
    card = agent_card(
        built, url=url, name=name, description=description, version=version, skills=skills
    )
    source: JournalSource | None = store if isinstance(store, JournalSource) else None
    if store is not None and source is None:
        raise UsageError("store must be a checkpoint store (agentgraph.checkpoint)")
    # With a store, a context is a thread: its tasks run one at a time.
    contexts = Contexts() if isinstance(store, ThreadStore) else None
    executor = GraphExecutor(
        built, runner=runner or GraphRunner(), store=source, redactor=Redactor(), contexts=contexts
    )
    tasks: TaskStore = CheckpointTaskStore(store) if store is not None else InMemoryTaskStore()
    handler = _Checked(
        executor,
        tasks,
        card,
        limit=max_message_bytes,
        input_type=built.input_type,
        contexts=contexts,
    )
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/"),
        *create_rest_routes(handler),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(_AsyncioOnly)],
        lifespan=_lifespan(handler, tasks, store),
    )
