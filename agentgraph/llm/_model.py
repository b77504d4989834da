"""The `ChatModel` protocol and the provider-neutral request, response and stream types."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from .._util._public import stored_as
from ._messages import Message, ToolSpec, Usage

__all__ = (
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "FinishReason",
    "OutputSchema",
    "ReasoningDelta",
    "ResponseDone",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "ToolChoice",
)

ToolChoice = Literal["auto", "none", "required"] | str
"""`auto`, `none`, `required`, or the name of the one tool the model must call."""

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error"] | str


def _to_messages(value: Iterable[Message]) -> tuple[Message, ...]:
    return value if isinstance(value, tuple) else tuple(value)


def _to_specs(value: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]:
    return value if isinstance(value, tuple) else tuple(value)


@stored_as("agentgraph:OutputSchema")
@attrs.frozen
class OutputSchema:
    """A JSON Schema the answer must follow (provider-native structured output)."""

    name: str
    schema: Mapping[str, Any]
    description: str = ""
    strict: bool = True


_THINK = (None, True, False, "low", "medium", "high", "auto")


def think_hint(value: Any) -> Any:
    """A checked thinking hint; `"auto"` (the model decides) is sent as no hint at all."""
    if value not in _THINK or (isinstance(value, int) and not isinstance(value, bool)):
        raise ValueError(
            f"think is True, False, 'low', 'medium', 'high', 'auto' or None, not {value!r}"
        )
    return None if value == "auto" else value


@stored_as("agentgraph:ChatRequest")
@attrs.frozen
class ChatRequest:
    """Everything a model call needs, as data. `None` means "provider default".

    `messages` may start with a system message; providers that take the system
    prompt separately (Anthropic) lift it out. `cache` turns the provider's
    explicit prompt caching on or off (`None`: the model's own setting);
    providers that cache on their own (OpenAI) report it in `Usage` either way.
    """

    messages: tuple[Message, ...] = attrs.field(converter=_to_messages)
    tools: tuple[ToolSpec, ...] = attrs.field(default=(), converter=_to_specs)
    tool_choice: ToolChoice | None = None
    temperature: float | None = None
    max_output: int | None = None
    think: bool | Literal["low", "medium", "high"] | None = attrs.field(
        default=None, converter=think_hint
    )
    output: OutputSchema | None = None
    model: str | None = None
    """Overrides the client's model name for this request."""
    cache: bool | None = None
    check_transcript: bool = True
    """Refuse, before sending, messages the provider's wire would refuse
    (`InvalidTranscript`); see "Valid transcripts" in the models guide."""


@stored_as("agentgraph:ChatResponse")
@attrs.frozen
class ChatResponse:
    """A complete answer: the assistant message (with tool calls and usage) and why it ended."""

    message: Message
    finish_reason: FinishReason | None = None
    usage: Usage = attrs.field(factory=Usage)
    model: str = ""
    id: str | None = None


@attrs.frozen
class TextDelta:
    """A piece of the answer's text, as it streams."""

    text: str


@attrs.frozen
class ReasoningDelta:
    """A piece of the model's reasoning text, as it streams."""

    text: str


@attrs.frozen
class ToolCallDelta:
    """A fragment of tool call `index`: the id and name arrive once, arguments in pieces."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@attrs.frozen
class ResponseDone:
    """The last stream event: the assembled response."""

    response: ChatResponse


StreamEvent = TextDelta | ReasoningDelta | ToolCallDelta | ResponseDone


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: one coroutine for a complete answer, one stream of deltas.

    ```python
    response = await model.request(ChatRequest([Message.user("hi")]))
    async with model.stream(request) as events:
        async for event in events:
            ...
    ```
    The stream always ends with `ResponseDone`. Errors are `ProviderError`s.
    """

    @property
    def name(self) -> str:
        """The model name requests go to, e.g. `gpt-4o-mini`."""
        ...

    async def request(self, request: ChatRequest) -> ChatResponse: ...

    def stream(
        self, request: ChatRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]: ...
