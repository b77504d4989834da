"""Test models: `ScriptedModel` plays a script, `SchemaTestModel` exercises every tool."""

from __future__ import annotations

import abc
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any

import anyio.lowlevel
import attrs
import orjson

from .._core._errors import AgentGraphError
from ._messages import Message, ToolCall, ToolSpec
from ._model import (
    ChatRequest,
    ChatResponse,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from ._replies import Reply, as_response, ids, request_chars, split_text
from ._schema_example import schema_example
from ._transcript import check_transcript

__all__ = (
    "BrokenStream",
    "SchemaTestModel",
    "ScriptExhausted",
    "ScriptItem",
    "ScriptedModel",
    "stream_events",
)


class ScriptExhausted(AgentGraphError, AssertionError):
    """A scripted model received more requests than it was given replies for.

    It is an `AssertionError`: running out of script is a failed expectation of
    the test, never a transient error, so no retry policy retries it.
    """

    def __init__(self, model: str, number: int, scripted: int) -> None:
        self.model = model
        self.number = number
        self.scripted = scripted
        super().__init__(
            f"scripted model {model!r} received request #{number} but was scripted with "
            f"{scripted} replies; add more replies or check why the agent called it again"
        )


@attrs.frozen
class BrokenStream:
    """A scripted turn whose stream breaks: `after_events` deltas of `reply`, then `error`.

    Requested without streaming, it raises `error` at once.
    """

    reply: Reply
    error: BaseException
    after_events: int = 1


ScriptItem = Reply | BaseException | BrokenStream | Callable[[ChatRequest], Reply]
"""One scripted turn: a reply, an exception to raise, a broken stream, or a
function computing the reply from the request."""


def stream_events(response: ChatResponse, *, chunk_size: int = 8) -> list[StreamEvent]:
    """The deltas a provider would stream for `response`, ending with `ResponseDone`.

    Reasoning and text arrive in pieces of `chunk_size` characters; each tool
    call opens with its id and name, then its JSON arguments in pieces.
    """
    message = response.message
    events: list[StreamEvent] = [
        ReasoningDelta(piece) for piece in split_text(message.reasoning or "", chunk_size)
    ]
    events.extend(TextDelta(piece) for piece in split_text(message.content, chunk_size))
    for index, call in enumerate(message.tool_calls):
        events.append(ToolCallDelta(index, id=call.id, name=call.name))
        arguments = orjson.dumps(dict(call.arguments)).decode()
        events.extend(
            ToolCallDelta(index, arguments=piece) for piece in split_text(arguments, chunk_size)
        )
    events.append(ResponseDone(response))
    return events


class _Events:
    """An async iterator over prepared events that may end by raising."""

    def __init__(self, events: Sequence[StreamEvent], error: BaseException | None) -> None:
        self._events = deque(events)
        self._error = error

    def __aiter__(self) -> _Events:
        return self

    async def __anext__(self) -> StreamEvent:
        await anyio.lowlevel.checkpoint()
        if self._events:
            return self._events.popleft()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        raise StopAsyncIteration


class _Stream(AbstractAsyncContextManager[AsyncIterator[StreamEvent]]):
    def __init__(self, model: ReplyModel, request: ChatRequest) -> None:
        self._model = model
        self._request = request

    async def __aenter__(self) -> AsyncIterator[StreamEvent]:
        await anyio.lowlevel.checkpoint()
        item = self._model._turn(self._request)
        if isinstance(item, BrokenStream):
            response = self._model._respond(item.reply, self._request)
            events = stream_events(response, chunk_size=self._model.chunk_size)[:-1]
            return _Events(events[: max(0, item.after_events)], item.error)
        response = self._model._respond(item, self._request)
        return _Events(stream_events(response, chunk_size=self._model.chunk_size), None)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


class ReplyModel(abc.ABC):
    """Shared machinery: records requests, numbers tool calls, streams replies."""

    def __init__(self, name: str, chunk_size: int) -> None:
        self._name = name
        self.chunk_size = chunk_size
        self._requests: list[ChatRequest] = []
        self._new_id = ids("call_")

    @property
    def name(self) -> str:
        """The model name, as the `ChatModel` protocol requires."""
        return self._name

    @property
    def requests(self) -> tuple[ChatRequest, ...]:
        """Every request received so far, in order."""
        return tuple(self._requests)

    async def request(self, request: ChatRequest) -> ChatResponse:
        """Answer with the next reply (or raise the scripted error)."""
        await anyio.lowlevel.checkpoint()
        item = self._turn(request)
        if isinstance(item, BrokenStream):
            raise item.error
        return self._respond(item, request)

    def stream(
        self, request: ChatRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        """Stream the next reply as deltas; a scripted error is raised on entering."""
        return _Stream(self, request)

    def _turn(self, request: ChatRequest) -> Reply | BrokenStream:
        if request.check_transcript:  # what every provider client checks before sending
            check_transcript(request.messages, wire="openai", provider=self._name)
        self._requests.append(request)
        return self._reply(request)

    @abc.abstractmethod
    def _reply(self, request: ChatRequest) -> Reply | BrokenStream:
        """The next turn for `request` (raising is how a scripted error is delivered)."""

    def _respond(self, reply: Reply, request: ChatRequest) -> ChatResponse:
        return as_response(
            reply,
            prompt_chars=request_chars(request),
            new_id=self._new_id,
            model=request.model or self._name,
        )


class ScriptedModel(ReplyModel):
    """A `ChatModel` that plays back a script, one item per request.

    ```python
    model = ScriptedModel(
        ScriptedModel.tool_call("add", a=1, b=2),
        "The sum is 3.",
    )
    ```
    Each item is a `ChatResponse`, a `Message`, a plain string (an assistant
    text answer), an exception instance to raise, a `BrokenStream`, or a
    function from the `ChatRequest` to a reply. Tool calls without an id get
    `call_1`, `call_2`, ... Every request is kept in `.requests`. A request
    beyond the script raises `ScriptExhausted`, unless `repeat=True`: then the
    last item answers every request after it, so `ScriptedModel("42",
    repeat=True)` always answers 42 and `ScriptedModel(fn, repeat=True)`
    answers every request with `fn(request)`. Streams split text and tool
    arguments into pieces of `chunk_size` characters.
    """

    def __init__(
        self,
        *script: ScriptItem,
        name: str = "scripted",
        chunk_size: int = 8,
        repeat: bool = False,
    ) -> None:
        super().__init__(name, chunk_size)
        if repeat and not script:
            raise ValueError("repeat=True needs at least one item to repeat")
        self._script: deque[ScriptItem] = deque(script)
        self._scripted = len(script)
        self._repeat = repeat

    @property
    def remaining(self) -> int:
        """How many scripted items have not been used yet."""
        return len(self._script)

    def add(self, *script: ScriptItem) -> None:
        """Queue more items after the current script."""
        self._script.extend(script)
        self._scripted += len(script)

    def _reply(self, request: ChatRequest) -> Reply | BrokenStream:
        if not self._script:
            raise ScriptExhausted(self._name, len(self._requests), self._scripted)
        last = self._repeat and len(self._script) == 1
        item = self._script[0] if last else self._script.popleft()
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ChatResponse | Message | str | BrokenStream):
            return item
        return item(request)

    @staticmethod
    def tool_call(name: str, /, *, call_id: str = "", **arguments: Any) -> Message:
        """An assistant message calling one tool: `tool_call("add", a=1, b=2)`."""
        return Message.assistant(tool_calls=(ToolCall(call_id, name, arguments),))

    @staticmethod
    def tool_calls(*calls: ToolCall | tuple[str, Mapping[str, Any]], content: str = "") -> Message:
        """An assistant message calling several tools at once (parallel tool calls).

        `tool_calls(("add", {"a": 1}), ("mul", {"b": 2}))`; a `ToolCall` is taken as is.
        """
        built = tuple(
            call if isinstance(call, ToolCall) else ToolCall("", call[0], call[1]) for call in calls
        )
        return Message.assistant(content, tool_calls=built)


class SchemaTestModel(ReplyModel):
    """A deterministic `ChatModel` that exercises every tool it is offered.

    For each request it looks at the tool specs and at the tool calls already
    in the history. Tools not called yet are called, all in one turn (or one a
    turn with `parallel=False`), with arguments built from each tool's JSON
    Schema by `schema_example`. Once every tool has been called, or when
    `tool_choice` is `none`, it answers `final`, or, when the request asks for
    structured output, a JSON document valid against that schema.
    A `tool_choice` naming one tool restricts the calls to that tool.
    """

    def __init__(
        self,
        *,
        name: str = "schema-test",
        final: str = "done",
        parallel: bool = True,
        include_optional: bool = True,
        chunk_size: int = 8,
    ) -> None:
        super().__init__(name, chunk_size)
        self.final = final
        self.parallel = parallel
        self.include_optional = include_optional

    def _reply(self, request: ChatRequest) -> Reply | BrokenStream:
        pending = self._pending(request)
        if pending:
            calls = tuple(
                ToolCall(
                    "",
                    spec.name,
                    schema_example(spec.parameters, include_optional=self.include_optional),
                )
                for spec in (pending if self.parallel else pending[:1])
            )
            return Message.assistant(tool_calls=calls)
        if request.output is not None:
            value = schema_example(request.output.schema, include_optional=self.include_optional)
            return orjson.dumps(value).decode()
        return self.final

    @staticmethod
    def _pending(request: ChatRequest) -> list[ToolSpec]:
        if request.tool_choice == "none":
            return []
        called = {call.name for message in request.messages for call in message.tool_calls}
        offered = list(request.tools)
        if request.tool_choice not in (None, "auto", "required"):
            offered = [spec for spec in offered if spec.name == request.tool_choice]
        return [spec for spec in offered if spec.name not in called]
