"""One task at a time per A2A context: the context is a thread, whose turns run one by one.

A message that would set a task working (a new task, or the answer to a
question) while another task of its `contextId` works is refused with the
protocol's `UnsupportedOperationError` before anything is created or run, so
a client gets a clean error rather than a task that fails on the thread's
lease. The request handler holds the context from the moment the request's
ids are known (`ClaimingBuilder`) until the request returns; the executor
holds it while the task's run goes on, which may be longer (a client that
does not wait).

Holds are per process. A server sharing its store with another is refused
by the thread's own lease instead, which the executor reports as cleanly.
"""

from __future__ import annotations

from typing import Any

from a2a.server.agent_execution import RequestContext
from a2a.server.agent_execution.simple_request_context_builder import (
    SimpleRequestContextBuilder,
)
from a2a.server.context import ServerCallContext
from a2a.types import a2a_pb2
from a2a.utils.errors import UnsupportedOperationError

__all__ = ("ClaimingBuilder", "Contexts", "Hold", "busy_text")


def busy_text(context_id: str) -> str:
    """What a refused message is told (no task, owner or lease of the other task)."""
    return (
        f"another task of contextId {context_id[:128]!r} is working: this agent runs one task "
        "at a time per contextId; send the message again when that task has stopped"
    )


class Hold:
    """A hold on a context for one task (see `Contexts.hold`)."""

    __slots__ = ("context_id", "task_id")

    def __init__(self, context_id: str, task_id: str) -> None:
        self.context_id = context_id
        self.task_id = task_id


class Contexts:
    """Which task works in each context, held by each request and run that drives it."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[str, list[Hold]]] = {}

    def hold(self, context_id: str, task_id: str) -> Hold:
        """Hold `context_id` for `task_id`; `UnsupportedOperationError` when another holds it."""
        held = self._held.get(context_id)
        if held is not None and held[0] != task_id:
            raise UnsupportedOperationError(busy_text(context_id))
        hold = Hold(context_id, task_id)
        if held is None:
            self._held[context_id] = (task_id, [hold])
        else:
            held[1].append(hold)
        return hold

    def release(self, hold: Hold) -> None:
        """Give `hold` back; the context is free once its task's last hold is."""
        held = self._held.get(hold.context_id)
        if held is None or hold not in held[1]:
            return
        held[1].remove(hold)
        if not held[1]:
            del self._held[hold.context_id]


class ClaimingBuilder(SimpleRequestContextBuilder):
    """The SDK's request context builder, holding the request's context once its ids are known.

    The SDK builds the context of a message's request before it creates or
    wakes the task, so a refusal here leaves nothing behind. The hold is
    kept under the request (`taken`) for the request handler to release.
    """

    def __init__(self, contexts: Contexts) -> None:
        super().__init__()
        self.contexts = contexts
        self.taken: dict[int, Hold] = {}

    async def build(
        self,
        context: ServerCallContext,
        params: a2a_pb2.SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: a2a_pb2.Task | None = None,
    ) -> RequestContext:
        built = await super().build(context, params, task_id, context_id, task)
        if params is not None and built.context_id and built.task_id:
            self.taken[id(params)] = self.contexts.hold(built.context_id, built.task_id)
        return built

    def release(self, params: Any) -> None:
        """Release the hold taken for the request `params`, if any."""
        hold = self.taken.pop(id(params), None)
        if hold is not None:
            self.contexts.release(hold)
