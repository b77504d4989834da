"""Normalizing tool calls from every wire format into `ToolCall`s.

Arguments arrive as a JSON string (OpenAI), an object (Ollama, GigaChat,
llama.cpp in some builds), an empty string, or nothing. Ids may be missing or
empty (vLLM, LM Studio, old Ollama); such calls get a generated `call_...` id,
assigned once, so a tool result can always be paired with its call. Streamed
fragments are assembled by `ToolCallAssembler`. Formats that pair a tool
result with its call by name rather than id find that name with `result_name`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import orjson

from .._core._errors import BadRequestError, ResponseFormatError
from ._messages import RAW_ARGUMENTS, Message, ToolCall
from ._model import ToolCallDelta

__all__ = (
    "ToolCallAssembler",
    "arguments_json",
    "as_int",
    "new_call_id",
    "normalize_finish",
    "parse_arguments",
    "result_name",
    "wire_arguments",
)

_FINISH = {
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


def new_call_id() -> str:
    """A fresh id for a tool call that arrived without one."""
    return f"call_{uuid.uuid4().hex[:24]}"


def as_int(value: Any) -> int:
    """A token count from a usage field that may be missing, null or malformed."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    return 0


def normalize_finish(reason: Any, *, has_tool_calls: bool) -> str | None:
    """One vocabulary for finish reasons: `stop`, `length`, `tool_calls`, `content_filter`.

    A response with tool calls that says `stop` (old Ollama, several compat
    servers) reports `tool_calls`. Unknown reasons pass through unchanged.
    """
    if not isinstance(reason, str) or not reason:
        return "tool_calls" if has_tool_calls else None
    normalized = _FINISH.get(reason, reason)
    if has_tool_calls and normalized == "stop":
        return "tool_calls"
    return normalized


def parse_arguments(raw: Any, *, provider: str, tool: str) -> Mapping[str, Any]:
    """Tool-call arguments as a mapping, from a JSON string, an object, or nothing.

    Arguments that are not a JSON object (truncated or malformed text, a list, a
    number) come back as `{RAW_ARGUMENTS: text}`, so the tool layer answers the
    model with an error result it can act on instead of the run failing.
    """
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return raw
    value: Any = raw
    # Twice, because some models double-encode: a JSON string holding the JSON object.
    for _ in range(2):
        if not isinstance(value, str):
            break
        if not value.strip():
            return {}
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {RAW_ARGUMENTS: _raw_text(raw)}
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return {RAW_ARGUMENTS: _raw_text(raw)}


def _raw_text(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return orjson.dumps(raw, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(raw)


def result_name(message: Message, names: Mapping[str, str], *, provider: str) -> str:
    """The tool a tool message answers: its own `name`, else that of the call its id names.

    `names` maps the ids of earlier calls in the history to their tool names.
    """
    name = message.name or names.get(message.tool_call_id or "")
    if not name:
        raise BadRequestError(
            "a tool message needs its tool's name (or the id of an earlier call)",
            provider=provider,
        )
    return name


def arguments_json(arguments: Mapping[str, Any]) -> str:
    """Arguments as the JSON text OpenAI-style servers expect (`{}` when empty).

    Arguments kept as raw text because they were not a JSON object go back as
    that text, exactly as the model sent them.
    """
    if RAW_ARGUMENTS in arguments:
        return str(arguments[RAW_ARGUMENTS])
    return orjson.dumps(dict(arguments), default=_plain).decode()


def wire_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments for formats that carry them as an object.

    Arguments that were not a JSON object go back as `{}`: such formats cannot
    hold the raw text, and the marker key must never reach a provider.
    """
    if RAW_ARGUMENTS in arguments:
        return {}
    return dict(arguments)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"cannot encode {type(value).__name__} in tool-call arguments")


def _fragment_text(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    # llama.cpp and some bridges send the arguments as an object instead of text.
    return orjson.dumps(arguments, default=_plain).decode()


class _Slot:
    """One call being assembled. Checks stay cheap: most fragments end in no `}`."""

    __slots__ = ("id", "name", "parts", "size", "successor", "tail")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.parts: list[str] = []
        self.size = 0
        self.tail = ""
        self.successor: str | None = None

    def append(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if text.strip():
            self.tail = text

    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def same(self, text: str) -> bool:
        """Whether `text` repeats the whole arguments so far."""
        return len(text) == self.size and text == self.text()

    def complete(self) -> bool:
        """Whether the arguments so far are a whole JSON object."""
        if not self.tail.rstrip().endswith("}"):
            return False
        text = self.text().strip()
        if not text.startswith("{"):
            return False
        try:
            return isinstance(orjson.loads(text), dict)
        except orjson.JSONDecodeError:
            return False


class ToolCallAssembler:
    """Builds tool calls from streamed fragments keyed by `index`.

    Robust to the compat-server quirks: a fragment with no index continues the
    last call; a new call reusing an index (bridges that put every parallel
    call on index 0) is told apart from a continuation by a different name, a
    fresh id once the arguments are complete, or more arguments after a
    complete object; an id that changes while arguments are still incomplete
    (LM Studio) continues the same call; a repeated full-arguments fragment is
    dropped; object arguments are serialized.
    """

    __slots__ = ("_keys", "_last", "_slots")

    def __init__(self) -> None:
        self._slots: list[_Slot] = []
        self._keys: dict[int, int] = {}
        self._last: int = 0

    def __bool__(self) -> bool:
        return bool(self._slots)

    def add(self, *, index: Any, id: Any, name: Any, arguments: Any) -> ToolCallDelta | None:
        """Take one fragment; return the delta it adds, or `None` if it adds nothing."""
        key = index if isinstance(index, int) and not isinstance(index, bool) else self._last
        call_id = id if isinstance(id, str) and id else None
        call_name = name if isinstance(name, str) and name else None
        args = _fragment_text(arguments)
        pos = self._keys.get(key)
        if pos is not None:
            slot = self._slots[pos]
            if _starts_new(slot, call_id, call_name, args):
                pos = None
            elif call_name and call_name == slot.name and not args.strip() and slot.complete():
                slot.successor = call_name
        if pos is None:
            previous = self._slots[self._keys[key]] if key in self._keys else None
            pos = len(self._slots)
            self._slots.append(_Slot())
            self._keys[key] = pos
            if previous is not None and call_name is None:
                call_name = previous.successor
        self._last = key
        return self._apply(pos, call_id, call_name, args)

    def _apply(
        self, pos: int, call_id: str | None, call_name: str | None, args: str
    ) -> ToolCallDelta | None:
        slot = self._slots[pos]
        new_id = call_id if call_id and not slot.id else None
        new_name = call_name if call_name and not slot.name else None
        slot.id = slot.id or new_id
        slot.name = slot.name or new_name
        if args and slot.same(args) and slot.complete():
            args = ""  # the same full arguments sent again
        if args:
            slot.append(args)
        if not (new_id or new_name or args):
            return None
        return ToolCallDelta(pos, new_id, new_name, args)

    def finish(self, *, provider: str) -> tuple[tuple[ToolCall, ...], list[ToolCallDelta]]:
        """The assembled calls, and a delta for each id generated now."""
        calls: list[ToolCall] = []
        late: list[ToolCallDelta] = []
        for pos, slot in enumerate(self._slots):
            if not slot.name:
                raise ResponseFormatError(
                    f"streamed tool call {pos} never received a name", provider=provider
                )
            if not slot.id:
                slot.id = new_call_id()
                late.append(ToolCallDelta(pos, id=slot.id))
            arguments = parse_arguments(slot.text(), provider=provider, tool=slot.name)
            calls.append(ToolCall(slot.id, slot.name, arguments))
        return tuple(calls), late


def _starts_new(slot: _Slot, call_id: str | None, call_name: str | None, args: str) -> bool:
    """Whether a fragment at an occupied index opens a new call instead of continuing."""
    if not (slot.name or slot.parts):
        return False
    if call_name and slot.name and call_name != slot.name:
        return True
    if not (args.strip() or call_id):
        return False
    complete = slot.complete()
    if complete and args.strip() and not slot.same(args):
        return True
    return bool(complete and call_name and call_id and slot.id and call_id != slot.id)
