"""Contexts as changes: each committed context is stored as what differs from the one before.

History only grows by appending to a shared buffer (see `History`), so a step
that appended messages stores just those messages; any other change stores the
whole history once. Other fields are stored only when they are not the very
object the previous context held. Messages use a compact form (defaults left
out, no type tags); every other value goes through `to_data(..., tagged=True)`
so that attrs classes, dataclasses and enums come back as themselves.

Keys of an encoded context: `i` input, `h` appended messages, `H` the whole
history, `p` system prompt, `s` settings, `t` tools, `m` state, `u` usage. A thread
turn's first context is stored as a change to the last context of the run it continues
(see `_bases`): `B` that run's id, `bn` its messages and `bs` its step records, first.

The bytes of images and documents in messages are not stored inline: they go
to the store's blobs (`put_blob`) once, and the message names them by SHA-256
digest (`{"blob": digest, ...}`). Decoding takes the blobs, fetched up front
(`load_blobs`), since decoding itself never waits on the store.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import orjson

from .._core._context import AgentContext, History
from .._core._errors import CheckpointError, ContextDecodingError, ContextEncodingError
from .._core._json import NO_TYPES, Types, from_data, to_data
from ..llm._content import Document, Image, Part
from ..llm._messages import Message, ToolCall, Usage, check_parts

__all__ = (
    "BlobDamaged",
    "BlobPut",
    "ContextEncoder",
    "changes",
    "decode_context",
    "decode_message",
    "diff_data",
    "encode_message",
    "full_context",
    "load_blobs",
)


class BlobDamaged(CheckpointError):
    """A store holds a blob under a digest, but not the bytes it was stored with."""


BlobPut = Callable[[bytes], str]
"""A store's `put_blob`: keeps bytes under their digest, returns the digest."""


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


def _put(put: BlobPut | None, data: bytes, where: str) -> str:
    if put is None:
        raise ContextEncodingError(where, bytes, "file bytes are stored only in a checkpoint store")
    try:
        return put(data)
    except CheckpointError as exc:  # a store that keeps no blobs
        raise ContextEncodingError(
            where, bytes, f"{exc}; images and documents in messages need a store with blobs"
        ) from exc


def _encode_part(part: Part, put: BlobPut | None, where: str) -> Any:
    if isinstance(part, str):
        return part
    if isinstance(part, Image):
        if part.data is None:
            return {"k": "image", "url": part.url}
        return {"k": "image", "blob": _put(put, part.data, where), "t": part.media_type}
    return {"k": "document", "blob": _put(put, part.data, where), "n": part.name}


def _decode_part(data: Any, blobs: Mapping[str, bytes]) -> Part:
    if isinstance(data, str):
        return data
    if not isinstance(data, dict) or data.get("k") not in ("image", "document"):
        raise ContextDecodingError("a stored message part is neither text, image nor document")
    if "url" in data:
        return Image(url=data["url"])
    digest = data.get("blob")
    if not isinstance(digest, str) or digest not in blobs:
        raise CheckpointError(
            f"a stored message names blob {digest!r}, which the store does not have"
        )
    try:
        if data["k"] == "image":
            return Image(blobs[digest], data.get("t"))
        return Document(blobs[digest], data.get("n", "document.pdf"))
    except ValueError as exc:
        raise ContextDecodingError(f"a stored {data['k']} cannot be rebuilt: {exc}") from exc


_BLOB = re.compile(rb'"blob":"([0-9a-f]{64})"')


async def load_blobs(store: Any, encoded: Iterable[bytes]) -> dict[str, bytes]:
    """The blobs the encoded records may name, from `store`, checked against their digest.

    The records are searched for the digests as text, so a value of the user's
    that merely looks like one is looked up too; a digest the store lacks is
    left out here and refused only if a message needs it when decoded.

    Raises:
        BlobDamaged: a blob's bytes do not match its digest (changed after it
            was stored), or the store says the blob is damaged.
    """
    digests = {m.group(1).decode() for data in encoded for m in _BLOB.finditer(data)}
    blobs: dict[str, bytes] = {}
    for digest in sorted(digests):
        try:
            data = await store.get_blob(digest)
        except BlobDamaged:
            raise
        except CheckpointError:
            continue
        if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != digest:
            raise BlobDamaged(
                f"blob {digest!r} does not match its digest: it is damaged "
                "(its bytes changed after it was stored)"
            )
        blobs[digest] = data
    return blobs


def encode_message(message: Message, where: str, put: BlobPut | None = None) -> dict[str, Any]:
    """A message as compact JSON data: its role plus the fields that are not defaults.

    `put` stores the bytes of images and documents (a store's `put_blob`).
    """
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
    if message.parts:
        check_parts(message)
        data["pt"] = [
            _encode_part(part, put, f"{where}.parts[{i}]") for i, part in enumerate(message.parts)
        ]
    return data


_NO_BLOBS: Mapping[str, bytes] = {}
_NO_DATA: Mapping[str, Any] = MappingProxyType({})


def decode_message(
    data: dict[str, Any], types: Types = NO_TYPES, blobs: Mapping[str, bytes] = _NO_BLOBS
) -> Message:
    """The message `encode_message` described; `blobs` holds the bytes its parts name."""
    if "x" in data:
        value = from_data(data["x"], types)
        if not isinstance(value, Message):
            raise ContextDecodingError(f"a stored message holds {type(value).__name__}")
        return value
    if "r" in data and (len(data) == 1 or (len(data) == 2 and "c" in data)):  # a role, a text
        return Message(data["r"], data.get("c", ""))
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
        provider_data=from_data(data["pd"], types) if "pd" in data else _NO_DATA,
        parts=tuple(_decode_part(p, blobs) for p in data["pt"]) if "pt" in data else (),
    )


def encode_messages(
    messages: Sequence[Message], where: str, offset: int = 0, put: BlobPut | None = None
) -> list[Any]:
    return [encode_message(m, f"{where}[{offset + i}]", put) for i, m in enumerate(messages)]


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


def full_context(ctx: AgentContext[Any], put: BlobPut | None = None) -> bytes:
    """`ctx` encoded on its own, depending on no other record (`put` stores file bytes)."""
    data: dict[str, Any] = {"H": encode_messages(ctx.history, "context.history", put=put)}
    _fields(ctx, data, None)
    return orjson.dumps(data)


class ContextEncoder:
    """Encodes each committed context as a change to the one committed before it."""

    __slots__ = ("base", "put")

    def __init__(self, base: AgentContext[Any], put: BlobPut | None = None) -> None:
        self.base = base
        self.put = put

    def delta(self, ctx: AgentContext[Any]) -> bytes:
        """Encode `ctx` against the last context and make it the new base.

        Raises:
            ContextEncodingError: a value in `ctx` cannot be encoded; names the field.
        """
        encoded = orjson.dumps(changes(ctx, self.base, {}, self.put))
        self.base = ctx
        return encoded


def changes(
    ctx: AgentContext[Any], base: AgentContext[Any], data: dict[str, Any], put: BlobPut | None
) -> dict[str, Any]:
    """`data` with what `ctx` changes from `base`: appended messages (or the whole history
    when it does not extend `base`'s) and the fields that are not `base`'s own objects."""
    history, before = ctx.history, base.history
    if history is not before:
        added = history._added_after(before)
        if added is None:
            data["H"] = encode_messages(history, "context.history", put=put)
        elif added:
            data["h"] = encode_messages(added, "context.history", len(before), put)
    _fields(ctx, data, base)
    return data


_LAZY_FROM = 64
"""Messages in one record from which they are decoded when first read, not at once."""


def _history(base: History | None, data: Any, types: Types, blobs: Mapping[str, bytes]) -> History:
    """`base` followed by the messages `data` stores. Many are decoded as they are first
    read (a turn on a long thread reads its last few); each is checked to be a stored
    message's form now, and one that cannot be decoded raises `ContextDecodingError`
    where it is read."""
    if (
        not isinstance(data, list)
        or len(data) < _LAZY_FROM
        or not all(type(m) is dict for m in data)
    ):
        messages = [decode_message(m, types, blobs) for m in data]
        return History(messages) if base is None else base.append(*messages)

    def decode(message: dict[str, Any]) -> Message:
        try:
            return decode_message(message, types, blobs)
        except (ContextDecodingError, CheckpointError):
            raise
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            raise ContextDecodingError(
                f"a stored message cannot be decoded: {type(exc).__name__}: {exc}"
            ) from exc

    return History._encoded(base, data, decode)


def decode_context(
    data: bytes,
    base: AgentContext[Any] | None,
    types: Types = NO_TYPES,
    blobs: Mapping[str, bytes] = _NO_BLOBS,
) -> AgentContext[Any]:
    """Rebuild a context from its encoding and the context of the record before it.

    Histories are rebuilt by appending to the base's history, so decoding a
    whole run shares message storage the way the run did.
    """
    fields = orjson.loads(data)
    if not isinstance(fields, dict):
        raise ValueError(f"a stored context is JSON {type(fields).__name__}, not an object")
    before = base if base is not None else _NOTHING
    if "H" in fields:
        history = _history(None, fields["H"], types, blobs)
    elif "h" in fields:
        history = _history(before.history, fields["h"], types, blobs)
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
