"""Scripted content: what a turn may be, how it becomes a `ChatResponse`, fake embeddings.

Shared by `ScriptedModel` and the fake provider server, so a script written for
one reads the same in the other.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence

import attrs
import orjson

from ._messages import Message, ToolCall, Usage
from ._model import ChatRequest, ChatResponse

__all__ = (
    "EmbeddingFunction",
    "Reply",
    "approx_tokens",
    "as_response",
    "default_embedding",
    "float32_base64",
    "ids",
    "request_chars",
    "split_text",
)

EmbeddingFunction = Callable[[str, int], Sequence[float]]
"""Text and dimension to a vector."""

Reply = ChatResponse | Message | str
"""A scripted answer: a full response, an assistant message, or plain assistant text."""

_NO_USAGE = Usage()


def approx_tokens(chars: int) -> int:
    """A deterministic token estimate: four characters a token, at least one."""
    return max(1, (chars + 3) // 4)


def request_chars(request: ChatRequest) -> int:
    """The number of characters a request sends, for a usage estimate."""
    total = 0
    for message in request.messages:
        total += len(message.content)
        for call in message.tool_calls:
            total += len(call.name) + len(orjson.dumps(dict(call.arguments)))
    return total


def _message_chars(message: Message) -> int:
    total = len(message.content) + len(message.reasoning or "")
    for call in message.tool_calls:
        total += len(call.name) + len(orjson.dumps(dict(call.arguments)))
    return total


def as_response(
    reply: Reply,
    *,
    prompt_chars: int,
    new_id: Callable[[], str],
    model: str = "",
) -> ChatResponse:
    """Turn a scripted reply into a complete response.

    Tool calls with an empty id get one from `new_id`. A response without usage
    gets an estimate (four characters a token) and `requests=1`.
    """
    if isinstance(reply, str):
        reply = Message.assistant(reply)
    if isinstance(reply, Message):
        finish = "tool_calls" if reply.tool_calls else "stop"
        reply = ChatResponse(reply, finish_reason=finish)
    message = reply.message
    if any(not call.id for call in message.tool_calls):
        calls = tuple(_with_id(call, new_id) for call in message.tool_calls)
        message = attrs.evolve(message, tool_calls=calls)
    usage = reply.usage
    if usage == _NO_USAGE:
        usage = Usage(
            input_tokens=approx_tokens(prompt_chars),
            output_tokens=approx_tokens(_message_chars(message)),
            requests=1,
        )
    if message.usage is None:
        message = attrs.evolve(message, usage=usage)
    finish_reason = reply.finish_reason
    if finish_reason is None:
        finish_reason = "tool_calls" if message.tool_calls else "stop"
    return attrs.evolve(
        reply,
        message=message,
        usage=usage,
        finish_reason=finish_reason,
        model=reply.model or model,
    )


def _with_id(call: ToolCall, new_id: Callable[[], str]) -> ToolCall:
    return call if call.id else attrs.evolve(call, id=new_id())


def split_text(text: str, size: int) -> Iterator[str]:
    """Cut a string into pieces of `size` characters (code points, never bytes)."""
    if size < 1:
        if text:
            yield text
        return
    for start in range(0, len(text), size):
        yield text[start : start + size]


def ids(prefix: str) -> Callable[[], str]:
    """A deterministic id generator: `prefix1`, `prefix2`, ... (thread-safe)."""
    counter = itertools.count(1)
    return lambda: f"{prefix}{next(counter)}"


def default_embedding(text: str, dim: int) -> list[float]:
    """A deterministic unit vector for `text`, exactly representable as float32."""
    values: list[float] = []
    block = 0
    while len(values) < dim:
        digest = hashlib.blake2b(f"{block}:{text}".encode(), digest_size=64).digest()
        values.extend(b / 127.5 - 1.0 for b in digest)
        block += 1
    values = values[:dim]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return array("f", (v / norm for v in values)).tolist()


def float32_base64(vector: Sequence[float]) -> str:
    """Little-endian float32 values, base64-encoded (OpenAI's `encoding_format=base64`)."""
    packed = array("f", vector)
    if sys.byteorder == "big":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode()
