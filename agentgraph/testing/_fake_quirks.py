"""Dialect knobs that make the fake OpenAI endpoint answer like a compatible server."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import attrs
import orjson

from ..llm._messages import ToolCall
from ..llm._replies import split_text

__all__ = ("OpenAIQuirks",)


@attrs.frozen(kw_only=True)
class OpenAIQuirks:
    """How `/v1/chat/completions` departs from OpenAI's own answers, as compatible servers do.

    Each flag reproduces a behaviour seen in the wild:

    - `whole_arguments`: a streamed tool call arrives in one chunk, arguments
      complete (Ollama's `/v1`).
    - `omit_ids` / `empty_ids`: tool calls without an `id`, or with `""`
      (early vLLM streams, llama.cpp, LM Studio).
    - `same_index`: every parallel call streamed at `index` 0 (proxy bridges).
    - `object_arguments`: `arguments` as a JSON object instead of a string
      (a llama.cpp regression); streamed whole.
    - `stop_finish`: `finish_reason` is `stop` even when the answer calls tools
      (old Ollama).
    - `reasoning_field`: reasoning text sent in `reasoning` (Ollama, new vLLM)
      or `reasoning_content` (llama.cpp, LM Studio, older vLLM).
    """

    whole_arguments: bool = False
    omit_ids: bool = False
    empty_ids: bool = False
    same_index: bool = False
    object_arguments: bool = False
    stop_finish: bool = False
    reasoning_field: Literal["reasoning", "reasoning_content"] | None = None

    def finish(self, reason: str | None) -> str | None:
        """The `finish_reason` to send."""
        return "stop" if self.stop_finish and reason == "tool_calls" else reason

    def arguments(self, call: ToolCall) -> Any:
        """A call's `arguments` as sent: a JSON string, or the object itself."""
        if self.object_arguments:
            return dict(call.arguments)
        return orjson.dumps(dict(call.arguments)).decode()

    def with_id(self, fragment: dict[str, Any], call: ToolCall) -> dict[str, Any]:
        """`fragment` with the call's id as this server would send it (or none at all)."""
        if self.omit_ids:
            return fragment
        return {"id": "" if self.empty_ids else call.id, **fragment}

    def tool_calls(self, calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
        """The `tool_calls` list of a non-streamed message."""
        return [
            self.with_id(
                {"type": "function", "function": {"name": c.name, "arguments": self.arguments(c)}},
                c,
            )
            for c in calls
        ]

    def tool_call_deltas(self, calls: Sequence[ToolCall], size: int) -> list[dict[str, Any]]:
        """The streamed deltas of `calls`: an opening fragment each, then argument pieces."""
        deltas: list[dict[str, Any]] = []
        whole = self.whole_arguments or self.object_arguments
        for position, call in enumerate(calls):
            index = 0 if self.same_index else position
            arguments = self.arguments(call)
            function = {"name": call.name, "arguments": arguments if whole else ""}
            opening = self.with_id({"index": index, "type": "function", "function": function}, call)
            deltas.append({"tool_calls": [opening]})
            if not whole:
                deltas.extend(
                    {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                    for piece in split_text(arguments, size)
                )
        return deltas
