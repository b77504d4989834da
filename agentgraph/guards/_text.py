"""Text guards: maskers that rewrite the text of whatever stage they are shown.

A `TextGuard` maps strings to strings; it is shown a `ChatRequest` (the text of
each message), an answer (`Message` or text) or a `ToolCall` (every string in
its arguments), and rewrites only when some text changed.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

import attrs

from ..llm._messages import Message, ToolCall, join_text
from ..llm._model import ChatRequest
from ._guard import ALLOW, Decision, Guard, Stage

__all__ = ("TextGuard", "map_text")


def map_text(value: Any, fn: Any) -> Any:
    """`value` with `fn` applied to its text; the same object when nothing changed."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, Message):
        if value.parts:  # the text of each part, so that the content stays the parts' text
            parts = tuple(fn(p) if isinstance(p, str) and p else p for p in value.parts)
            if all(a == b for a, b in zip(parts, value.parts, strict=True)):
                return value
            return attrs.evolve(value, content=join_text(parts), parts=parts)
        text = fn(value.content) if value.content else value.content
        return value if text == value.content else attrs.evolve(value, content=text)
    if isinstance(value, ChatRequest):
        messages = tuple(map_text(m, fn) for m in value.messages)
        if all(a is b for a, b in zip(messages, value.messages, strict=True)):
            return value
        return attrs.evolve(value, messages=messages)
    if isinstance(value, ToolCall):
        arguments = _mapped(value.arguments, fn)
        return value if arguments is value.arguments else attrs.evolve(value, arguments=arguments)
    return value


def _mapped(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, Mapping):
        items = {k: _mapped(v, fn) for k, v in value.items()}
        same = all(items[k] is v or items[k] == v for k, v in value.items())
        return value if same else items
    if isinstance(value, list | tuple):
        found = [_mapped(v, fn) for v in value]
        same = all(a is b or a == b for a, b in zip(found, value, strict=True))
        return value if same else type(value)(found)
    return value


class TextGuard(Guard):
    """A guard that rewrites text: implement `mask(text) -> text`."""

    rewrites = True
    deterministic = True

    @abstractmethod
    def mask(self, text: str) -> str:
        """`text` with what this guard hides masked."""

    def findings(self, before: Any, after: Any) -> dict[str, Any]:
        """The rewrite's detail for the record (what kinds were masked, say)."""
        return {}

    async def check(self, stage: Stage, value: Any) -> Decision:
        after = map_text(value, self.mask)
        if after is value or after == value:
            return ALLOW
        return Decision.rewrite(after, f"{self.name} masked text", **self.findings(value, after))
