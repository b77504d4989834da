"""Provider-neutral conversation data: messages, tool calls, tool specs, usage."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Literal

import attrs
import orjson

from .._util._public import stored_as
from ._content import Document, Image, Part

__all__ = (
    "RAW_ARGUMENTS",
    "Message",
    "Role",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "check_parts",
    "join_text",
)

Role = Literal["system", "user", "assistant", "tool"]


def _restore(cls: type[Any], values: dict[str, Any]) -> Any:
    return cls(**values)


def reduce_frozen(obj: Any) -> tuple[Any, ...]:
    """A pickle recipe for a frozen attrs class whose mappings are read-only views.

    `MappingProxyType` refuses to pickle; the recipe passes plain dicts to the
    constructor, whose converters make them read-only again.
    """
    values = {(f.alias or f.name): getattr(obj, f.name) for f in attrs.fields(type(obj)) if f.init}
    for key, value in values.items():
        if isinstance(value, MappingProxyType):
            values[key] = dict(value)
    return _restore, (type(obj), values)


def _frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(value, MappingProxyType):
        return value
    return MappingProxyType(dict(value))


def check_parts(message: Message) -> None:
    """Refuse `parts` that are not a user message's or a tool result's content, in order,
    with `content` their text.

    A tool result carries text and images (no documents: not every provider
    takes them there). Checked where the parts are sent or stored rather than
    on every `Message` made, so plain text messages cost nothing more to build.
    """
    parts = message.parts
    if type(parts) is not tuple:
        raise TypeError(f"Message.parts is a tuple, not {type(parts).__name__}")
    for part in parts:
        if not isinstance(part, str | Image | Document):
            raise TypeError(
                f"a message part is a str, Image or Document, not {type(part).__name__}"
            )
    if message.role == "tool":
        if any(isinstance(part, Document) for part in parts):
            raise ValueError("a tool result carries text and images, not documents")
    elif message.role != "user":
        raise ValueError(
            f"only user and tool messages carry images and documents, not {message.role}"
        )
    text = join_text(parts)
    if message.content != text:
        raise ValueError(
            "Message.content must be the text of its parts; build the message with "
            "Message.user(*parts), which sets both"
        )


def join_text(parts: Iterable[Part]) -> str:
    """The text of `parts`: their strings, one paragraph each."""
    return "\n\n".join(part for part in parts if isinstance(part, str))


def _to_calls(value: Iterable[ToolCall]) -> tuple[ToolCall, ...]:
    return value if isinstance(value, tuple) else tuple(value)


_NO_PROVIDER_DATA: Mapping[str, Any] = MappingProxyType({})


@stored_as("agentgraph:Usage")
@attrs.frozen
class Usage:
    """Tokens and model calls, summed with `+`.

    `input_tokens` counts every input token, cached or not: `cache_read_tokens`
    of them were read from the provider's prompt cache (billed at its cache
    rate) and `cache_write_tokens` were written to it (Anthropic bills those
    above the input rate). `reasoning_tokens` are part of `output_tokens`.

    `unmetered` counts requests whose token counts the provider never reported
    (a stream that ended without its usage chunk, a server that sends none):
    their tokens are missing from the totals, which are then a lower bound.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    unmetered: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.requests + other.requests,
            self.reasoning_tokens + other.reasoning_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.unmetered + other.unmetered,
            self.cache_write_tokens + other.cache_write_tokens,
        )


def _arguments(value: Mapping[str, Any] | str | bytes) -> Mapping[str, Any]:
    """Tool-call arguments as a read-only mapping; JSON text (as the wire carries it) is parsed."""
    if isinstance(value, str | bytes):
        try:
            value = orjson.loads(value or "{}")
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"tool-call arguments are not JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise ValueError(f"tool-call arguments are a JSON object, not {type(value).__name__}")
    return _frozen_mapping(value)


RAW_ARGUMENTS = "__raw_arguments__"
"""The key under which a provider puts tool-call arguments that were not valid JSON."""


@stored_as("agentgraph:ToolCall")
@attrs.frozen
class ToolCall:
    """A model's request to call a tool; `arguments` is the parsed JSON object.

    The arguments may be given as JSON text (`ToolCall("c1", "add", '{"a": 1}')`).
    """

    id: str
    name: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict, converter=_arguments)


def _examples(
    pairs: Iterable[tuple[str, Mapping[str, Any]]],
) -> tuple[tuple[str, Mapping[str, Any]], ...]:
    return tuple((str(request), dict(arguments)) for request, arguments in pairs)


@stored_as("agentgraph:ToolSpec")
@attrs.frozen
class ToolSpec:
    """What the model sees of a tool: its name, description and JSON Schema.

    `examples` are `(request, arguments)` pairs showing a call: the user's
    words and the arguments they lead to. Providers that take them get them
    (GigaChat's `few_shot_examples`); the others leave them out.
    """

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(
        factory=lambda: {"type": "object", "properties": {}}, converter=_frozen_mapping
    )
    examples: tuple[tuple[str, Mapping[str, Any]], ...] = attrs.field(
        default=(), converter=_examples
    )


@stored_as("agentgraph:Message")
@attrs.frozen
class Message:
    """One turn of a conversation.

    `tool_calls` is set on assistant messages that call tools; `tool_call_id`
    on tool messages, naming the call they answer (`name` is the tool's name).
    `is_error` marks a tool result that reports a failure the model should read.
    `provider_data` holds wire data one provider needs back verbatim in later
    requests (Anthropic thinking signatures, GigaChat `functions_state_id`),
    keyed `"<provider>.<field>"`; other providers ignore it.

    `parts` is the content of a user message holding images or documents, in
    order (strings, `Image`s and `Document`s), or of a tool result holding
    images (strings and `Image`s); `content` is then its text, so code that
    reads text keeps working. `Message.user(...)` and `Message.tool(...)` set
    both; parts that disagree with the message are refused when it is sent or
    stored.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_to_calls)
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None
    is_error: bool = False
    usage: Usage | None = None
    provider_data: Mapping[str, Any] = attrs.field(
        default=_NO_PROVIDER_DATA, converter=_frozen_mapping
    )
    parts: tuple[Part, ...] = ()

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: Part, *more: Part) -> Message:
        """A user turn: text, or text with images and documents in the order given.

        ```python
        from agentgraph.llm import Image, Message

        pixel = bytes.fromhex(
            "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
            "0000000d4944415478da63f8cfc0f01f0005000201a5f5a1e20000000049454e44ae426082"
        )
        message = Message.user("What is in this picture?", Image.from_bytes(pixel))
        assert message.content == "What is in this picture?"
        ```
        """
        if not more and type(content) is str:
            return cls("user", content)
        parts = (content, *more)
        text = join_text(parts)
        if all(isinstance(part, str) for part in parts):
            return cls("user", text)
        return cls("user", text, parts=parts)

    @property
    def media(self) -> tuple[Image | Document, ...]:
        """The images and documents among `parts`."""
        return tuple(part for part in self.parts if not isinstance(part, str))

    @classmethod
    def assistant(
        cls,
        content: str = "",
        *,
        tool_calls: tuple[ToolCall, ...] = (),
        reasoning: str | None = None,
        usage: Usage | None = None,
    ) -> Message:
        return cls("assistant", content, tool_calls, reasoning=reasoning, usage=usage)

    @classmethod
    def tool(
        cls,
        tool_call_id: str,
        content: str | Image,
        *more: str | Image,
        name: str | None = None,
        is_error: bool = False,
    ) -> Message:
        """The result of tool call `tool_call_id`: text, or text and images in order."""
        if not more and type(content) is str:
            return cls("tool", content, tool_call_id=tool_call_id, name=name, is_error=is_error)
        parts = (content, *more)
        text = join_text(parts)
        kept = () if all(isinstance(part, str) for part in parts) else parts
        return cls(
            "tool", text, tool_call_id=tool_call_id, name=name, is_error=is_error, parts=kept
        )


# Pickling (for your own processes): read-only mappings travel as dicts.
ToolCall.__reduce__ = reduce_frozen  # type: ignore[assignment,method-assign]
ToolSpec.__reduce__ = reduce_frozen  # type: ignore[assignment,method-assign]
Message.__reduce__ = reduce_frozen  # type: ignore[assignment,method-assign]
