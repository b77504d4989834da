"""Taking up, when a server starts, the tasks a stopped server left working.

A task is saved as working before its run goes on, and a server that stops
(killed, crashed, or shut down mid-run) never saves it again: without this,
a client would see it working forever. So a server starting over a checkpoint
store looks for tasks still submitted or working and drives each through the
SDK's own machinery, as if a request had come in for it: the executor resumes
its run from its journal (`GraphExecutor._take_up`), and clients get or
subscribe to the task as to any other.

A run still leased to another runner is waited for: a dead server's lease
lapses, while a live server sharing the store renews its own and finishes
the task itself, after which there is nothing left to take up.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
from a2a.server.agent_execution import RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.types import a2a_pb2
from a2a.utils.errors import A2AError

from .._core._errors import RunBusy
from ..checkpoint._lease import new_owner
from ..checkpoint._store import CheckpointStore
from ._tasks import OWNER_KEY, RUNNING, CheckpointTaskStore

__all__ = ("take_up_stopped",)

_log = logging.getLogger("agentgraph.a2a")


async def take_up_stopped(
    handler: DefaultRequestHandler, tasks: CheckpointTaskStore, store: CheckpointStore
) -> None:
    """Drive every task left submitted or working to its end (returns when all were handed over)."""
    async with anyio.create_task_group() as tg:
        for task, owner in await tasks.unfinished():
            tg.start_soon(_take_up, handler, tasks, store, task, owner)


async def _take_up(
    handler: DefaultRequestHandler,
    tasks: CheckpointTaskStore,
    store: CheckpointStore,
    task: a2a_pb2.Task,
    owner: str,
) -> None:
    call = ServerCallContext(state={OWNER_KEY: owner})
    while True:
        try:
            lease = await store.acquire(task.id, owner=new_owner())
        except RunBusy as busy:
            await anyio.sleep(max(0.05, busy.expires - time.time()))
            again = await tasks.get(task.id, call)
            if again is None or again.status.state not in RUNNING:
                return  # its runner was alive after all, and has finished with it
            continue
        store.release(lease)  # free: the executor's resume takes it again
        break
    # The SDK starts a task's producer only for a request; this is one without a message.
    registry: Any = handler._active_task_registry
    try:
        active = await registry.get_or_create(
            task.id, call_context=call, context_id=task.context_id, create_task_if_missing=False
        )
        request = RequestContext(call_context=call, task_id=task.id, context_id=task.context_id)
        await active.enqueue_request(request)
    except A2AError as error:  # a client's message took it up first, and it has ended since
        _log.info("task %s was not taken up: %s", task.id, error)
