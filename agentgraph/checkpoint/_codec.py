"""Contexts as changes: each committed context is stored as what differs from the one before.

History only grows by appending to a shared buffer (see `History`), so a step
that appended messages stores just those messages; any other change stores the
whole history once. Other fields are stored only when they are not the very
object the previous context held. Messages use a compact form (defaults left
out, no type tags); every other value goes through `to_data(..., tagged=True)`
so that attrs classes, dataclasses and enums come back as themselves.

Keys of an encoded context: `i` input, `h` appended messages, `H` the whole
history, `p` system prompt, `s` settings, `t` tools, `m` state, `u` usage.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

import orjson

from .._context import AgentContext, History
from .._errors import ContextDecodingError
from .._json import NO_TYPES, Types, from_data, to_data
from ..llm._messages import Message, ToolCall, Usage

__all__ = (
    "ContextEncoder",
    "decode_context",
    "decode_message",
    "diff_data",
    "encode_message",
    "full_context",
)


def _usage(usage: Usage) -> list[int]:
    return [
        usage.input_tokens,
        usage.output_tokens,
        usage.requests,
        usage.reasoning_tokens,
        usage.cache_read_tokens,
        usage.unmetered,
        usage.cache_write_tokens,
    ]


def encode_call(call: ToolCall, where: str) -> list[Any]:
    """A tool call as stored: `[id, name, arguments]`; `where` names the arguments in errors."""
    return [call.id, call.name, to_data(call.arguments, tagged=True, where=where)]


def encode_message(message: Message, where: str) -> dict[str, Any]:
    """A message as compact JSON data: its role plus the fields that are not defaults."""
    if type(message) is not Message:
        return {"x": to_data(message, tagged=True, where=where)}
    data: dict[str, Any] = {"r": message.role}
    if message.content:
        data["c"] = message.content
    if message.tool_calls:
        data["tc"] = [encode_call(call, f"{where}.arguments") for call in message.tool_calls]
    if message.tool_call_id is not None:
        data["id"] = message.tool_call_id
    if message.name is not None:
        data["n"] = message.name
    if message.reasoning is not None:
        data["rs"] = message.reasoning
    if message.is_error:
        data["e"] = True
    if message.usage is not None:
        data["u"] = _usage(message.usage)
    if message.provider_data:
        data["pd"] = to_data(message.provider_data, tagged=True, where=f"{where}.provider_data")
    return data


def decode_message(data: dict[str, Any], types: Types = NO_TYPES) -> Message:
    """The message `encode_message` described."""
    if "x" in data:
        value = from_data(data["x"], types)
        if not isinstance(value, Message):
            raise ContextDecodingError(f"a stored message holds {type(value).__name__}")
        return value
    calls = tuple(ToolCall(i, n, from_data(a, types)) for i, n, a in data.get("tc", ()))
    usage = data.get("u")
    return Message(
        data["r"],
        data.get("c", ""),
        calls,
        tool_call_id=data.get("id"),
        name=data.get("n"),
        reasoning=data.get("rs"),
        is_error=data.get("e", False),
        usage=None if usage is None else Usage(*usage),
        provider_data=from_data(data.get("pd", {}), types),
    )


def encode_messages(messages: Sequence[Message], where: str, offset: int = 0) -> list[Any]:
    return [encode_message(m, f"{where}[{offset + i}]") for i, m in enumerate(messages)]


def _fields(ctx: AgentContext[Any], data: dict[str, Any], base: AgentContext[Any] | None) -> None:
    """Every field but the history that differs (by identity) from `base`'s."""
    if base is None or ctx.input is not base.input:
        data["i"] = to_data(ctx.input, tagged=True, where="context.input")
    if base is None or ctx.system_prompt is not base.system_prompt:
        data["p"] = ctx.system_prompt
    if base is None or ctx.settings is not base.settings:
        data["s"] = to_data(ctx.settings, tagged=True, where="context.settings")
    if base is None or ctx.tools is not base.tools:
        data["t"] = to_data(ctx.tools, tagged=True, where="context.tools")
    if base is None or ctx.state is not base.state:
        data["m"] = to_data(ctx.state, tagged=True, where="context.state")
    if base is None or ctx.usage is not base.usage:
        data["u"] = _usage(ctx.usage)


def full_context(ctx: AgentContext[Any]) -> bytes:
    """`ctx` encoded on its own, depending on no other record."""
    data: dict[str, Any] = {"H": encode_messages(ctx.history, "context.history")}
    _fields(ctx, data, None)
    return orjson.dumps(data)


def _extends(history: History, base: History) -> bool:
    """True when `history` is `base` followed by more messages."""
    if history._len < base._len:
        return False
    if history._items is base._items:
        return True  # one append-only buffer: the shorter view is a prefix of the longer
    old, new = base._items, history._items
    # Different buffers (a retried step appended to an older view): compare once.
    return all(old[i] is new[i] or old[i] == new[i] for i in range(base._len))


class ContextEncoder:
    """Encodes each committed context as a change to the one committed before it."""

    __slots__ = ("base",)

    def __init__(self, base: AgentContext[Any]) -> None:
        self.base = base

    def delta(self, ctx: AgentContext[Any]) -> bytes:
        """Encode `ctx` against the last context and make it the new base.

        Raises:
            ContextEncodingError: a value in `ctx` cannot be encoded; names the field.
        """
        base = self.base
        data: dict[str, Any] = {}
        history, before = ctx.history, base.history
        if history is not before and not (
            history._items is before._items and history._len == before._len
        ):
            if _extends(history, before):
                added = history._items[before._len : history._len]
                data["h"] = encode_messages(added, "context.history", before._len)
            else:
                data["H"] = encode_messages(history, "context.history")
        _fields(ctx, data, base)
        encoded = orjson.dumps(data)
        self.base = ctx
        return encoded


def decode_context(
    data: bytes, base: AgentContext[Any] | None, types: Types = NO_TYPES
) -> AgentContext[Any]:
    """Rebuild a context from its encoding and the context of the record before it.

    Histories are rebuilt by appending to the base's history, so decoding a
    whole run shares message storage the way the run did.
    """
    fields = orjson.loads(data)
    before = base if base is not None else _NOTHING
    if "H" in fields:
        history = History(decode_message(m, types) for m in fields["H"])
    elif "h" in fields:
        history = before.history.append(*(decode_message(m, types) for m in fields["h"]))
    else:
        history = before.history
    usage = fields.get("u")
    return AgentContext(
        from_data(fields["i"], types) if "i" in fields else before.input,
        history,
        fields.get("p", before.system_prompt),
        from_data(fields["s"], types) if "s" in fields else before.settings,
        from_data(fields["t"], types) if "t" in fields else before.tools,
        from_data(fields["m"], types) if "m" in fields else before.state,
        before.usage if usage is None else Usage(*usage),
    )


_NOTHING: AgentContext[Any] = AgentContext(None)


def diff_data(recorded: Any, replayed: Any, *, labels: tuple[str, str]) -> str:
    """A unified diff of two values as indented JSON (plain, untagged)."""
    option = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS

    def lines(value: Any) -> list[str]:
        return orjson.dumps(to_data(value), option=option).decode().splitlines()

    diff = difflib.unified_diff(
        lines(recorded), lines(replayed), fromfile=labels[0], tofile=labels[1], lineterm=""
    )
    return "\n".join(diff)
