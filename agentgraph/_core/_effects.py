"""What effects share beyond their layers: the `Interrupt` a question unwinds with, the
runtime a tool call runs in (`tool_runtime`), a recorded response as a stream, and what
features hand the engine as they load (`PROVIDED`).

The effects themselves are `Runtime` methods that hand a value
(`_effect_kinds.py`) to the run's stack of layers (`_layers.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import anyio.lowlevel
import orjson

from ..llm._messages import ToolCall
from ..llm._model import (
    ChatResponse,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from ._context import AgentContext
from ._json import to_data

if TYPE_CHECKING:
    from ._effect_kinds import ToolCallsEffect
    from ._journal import ToolAnswer
    from ._runtime import Runtime

__all__ = ("PROVIDED", "Interrupt", "Provided", "Replayed", "tool_runtime")


class Provided:
    """What features hand the engine as they load; the engine imports none of them.

    A value here exists only once its feature has loaded, and nothing can need it
    before: a tool or a memory store is made by its feature's module.

    Attributes:
        tool_calls: answers a `ToolCallsEffect` at the bottom of the run's stack
            (`agentgraph.tools` sets it: authorization, validation, concurrency).
        memory_view: a memory store as the step running in a runtime sees it, every
            call a `MemoryEffect` (`agentgraph.memory` sets it; `Runtime.memory`).
    """

    __slots__ = ("memory_view", "tool_calls")

    def __init__(self) -> None:
        self.tool_calls: Callable[[Runtime, ToolCallsEffect], Awaitable[list[ToolAnswer]]] | None
        self.tool_calls = None
        self.memory_view: Callable[[Any, Runtime], Any] | None = None


PROVIDED = Provided()
"""The one `Provided`: set by `agentgraph.tools` and `agentgraph.memory` as they load."""

_TOOL_RUNTIME: ContextVar[Runtime | None] = ContextVar("agentgraph_tool_runtime", default=None)


def tool_runtime() -> Runtime | None:
    """The runtime running the current tool call through `Runtime.call_tools`, else None.

    For a tool that must ask the run something in the middle of its call (an
    MCP server's question): it asks with `interrupt` and records what it needs
    to pick the call up again with `once`. Tool functions take only their
    arguments, so the runtime travels with the task, as the call's context.
    """
    return _TOOL_RUNTIME.get()


class Interrupt(BaseException):
    """Unwinds a node that asked for outside input (see `Runtime.interrupt`).

    A BaseException, like cancellation, so that a node's own `except Exception`
    and the retry machinery let it pass; the runner turns it into `Interrupted`.
    """

    def __init__(
        self, question: Any, context: AgentContext[Any], step: int, path: tuple[str, ...]
    ) -> None:
        self.question = question
        self.context = context
        self.step = step
        self.path = path
        self.tool_call: ToolCall | None = None
        """The tool call that asked, when a tool asked in the middle of its call."""
        super().__init__(question)


class Replayed:
    """A recorded response as a stream: reasoning, text and each tool call in one delta."""

    __slots__ = ("_events",)

    def __init__(self, response: ChatResponse) -> None:
        message = response.message
        events: list[StreamEvent] = []
        if message.reasoning:
            events.append(ReasoningDelta(message.reasoning))
        if message.content:
            events.append(TextDelta(message.content))
        for i, call in enumerate(message.tool_calls):
            arguments = orjson.dumps(to_data(call.arguments)).decode()
            events.append(ToolCallDelta(i, call.id, call.name, arguments))
        events.append(ResponseDone(response))
        self._events = iter(events)

    def __aiter__(self) -> Replayed:
        return self

    async def __anext__(self) -> StreamEvent:
        await anyio.lowlevel.checkpoint()
        try:
            return next(self._events)
        except StopIteration:
            raise StopAsyncIteration from None
