"""A2A message parts as agentgraph values, and back.

A2A carries text parts and data parts (JSON in a protobuf `Value`, where
every number is a double). A graph's input and a question's answer come
from the parts of one message; a graph's output and its questions go out
as parts, masked as traces are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from a2a.types import a2a_pb2
from google.protobuf import json_format, struct_pb2

from .._core._errors import AgentGraphError
from .._core._json import to_data
from .._util._redact import Redactor
from ..llm._messages import ToolCall
from ..structured._schema import json_schema, validate
from ..tracing._records import plain
from ._numbers import whole_numbers

__all__ = (
    "PARTIAL",
    "QUESTION_KEY",
    "SCHEMA_KEY",
    "answer_of",
    "data_part",
    "field_of",
    "graph_input",
    "output_metadata",
    "output_parts",
    "plain_value",
    "question_parts",
    "text_of",
)

QUESTION_KEY = "agentgraph.question"
"""The metadata key of an input-required status message: what kind of answer it wants."""

PARTIAL = "agentgraph.partial"
"""Artifact metadata marking a preview (streamed model text), not part of the answer."""

SCHEMA_KEY = "agentgraph.schema"
"""Output artifact metadata: the JSON Schema of the graph's output type, by which a
client turns the data part's whole doubles back into the integers they were."""

_YES = frozenset({"yes", "y", "approve", "approved", "true", "ok"})
_NO = frozenset({"no", "n", "deny", "denied", "false", "reject"})
_FIELD = re.compile(r"Failed to parse (\w+) field")


def plain_value(value: struct_pb2.Value) -> Any:
    """A data part's value as Python data, its numbers the doubles they are."""
    return json_format.MessageToDict(value)


def data_part(value: Any) -> a2a_pb2.Part:
    """A data part holding `value` (plain JSON data)."""
    return a2a_pb2.Part(data=json_format.ParseDict(value, struct_pb2.Value()))


def text_of(parts: Iterable[a2a_pb2.Part]) -> str:
    """The text parts, joined with newlines."""
    return "\n".join(p.text for p in parts if p.WhichOneof("content") == "text")


def _data_of(parts: Iterable[a2a_pb2.Part]) -> list[Any]:
    return [plain_value(p.data) for p in parts if p.WhichOneof("content") == "data"]


def _untyped(tp: Any) -> bool:
    return tp is Any or isinstance(tp, TypeVar)


def graph_input(input_type: Any, message: a2a_pb2.Message) -> Any:
    """The graph's input from a message; `ValueError` saying what is wrong.

    A graph that takes text gets the text parts; any other input type takes
    exactly one data part, validated against that type strictly (a field the
    type does not have is refused, as its schema's `additionalProperties:
    false` says), its whole doubles made ints where the type says integer.
    An untyped graph gets the data as it came, every number a double.
    """
    kinds = {p.WhichOneof("content") for p in message.parts}
    unknown = kinds - {"text", "data"}
    if unknown:
        raise ValueError(f"only text and data parts are accepted, not {sorted(map(str, unknown))}")
    if input_type is str or (_untyped(input_type) and "data" not in kinds):
        if "text" not in kinds:
            raise ValueError("this agent takes text: send a text part")
        return text_of(message.parts)
    data = _data_of(message.parts)
    if len(data) != 1:
        raise ValueError(f"this agent takes one data part as its input, not {len(data)}")
    if _untyped(input_type):
        return data[0]
    try:
        return validate(input_type, whole_numbers(json_schema(input_type), data[0]), strict=True)
    except AgentGraphError as exc:
        raise ValueError(str(exc)) from exc


def question_parts(question: Any, redactor: Redactor) -> tuple[list[a2a_pb2.Part], str]:
    """What an input-required status says of a graph's question, and the kind of answer it wants.

    A tool approval (the question is a `ToolCall`) wants yes or no (or a data
    part `{"approve": bool, "reason": str}`); anything else wants text or data.
    """
    if isinstance(question, ToolCall):
        shown = redactor.record({"arguments": plain(dict(question.arguments))})["arguments"]
        text = f"Allow the call to tool {question.name!r}? Answer yes or no."
        data = {"kind": "approval", "tool": question.name, "arguments": shown}
        return [a2a_pb2.Part(text=text), data_part(data)], "approval"
    shown = redactor.record({"question": plain(question)})["question"]
    text = shown if isinstance(shown, str) else redactor.text(str(shown), "question")
    return [a2a_pb2.Part(text=text), data_part({"kind": "input", "question": shown})], "input"


def answer_of(kind: str, message: a2a_pb2.Message) -> Any:
    """The resume answer in a client's message; `ValueError` when it does not answer.

    An approval takes yes/no text or `{"approve": ..., "reason": ...}` (a
    refusal with a reason is the reason, as `tool_use(approve=...)` reads it).
    """
    data = _data_of(message.parts)
    text = text_of(message.parts).strip()
    if kind != "approval":
        if data and not text:
            return data[0] if len(data) == 1 else data
        if not text:
            raise ValueError("the answer holds no text and no data")
        return text
    if data:
        found = data[0]
        if not isinstance(found, Mapping) or not isinstance(found.get("approve"), bool):
            raise ValueError('an approval is {"approve": true|false, "reason": "..."}')
        reason = found.get("reason")
        if found["approve"]:
            return True
        return reason if isinstance(reason, str) and reason else False
    if text.lower() in _YES:
        return True
    if text.lower() in _NO:
        return False
    raise ValueError("answer yes or no to approve or refuse the call")


def output_metadata(output_type: Any) -> dict[str, Any] | None:
    """The output artifact's metadata: the output type's schema, for a type that has one."""
    if output_type is str or _untyped(output_type):
        return None
    try:
        return {SCHEMA_KEY: json_schema(output_type)}
    except AgentGraphError:  # a type with no JSON Schema: its output goes without one
        return None


def output_parts(value: Any, redactor: Redactor) -> list[a2a_pb2.Part]:
    """A graph's output as the parts of its artifact, masked."""
    if isinstance(value, str):
        return [a2a_pb2.Part(text=redactor.text(value, "output"))]
    shown = redactor.record({"output": to_data(value)})["output"]
    return [data_part(shown)]


def field_of(error: json_format.ParseError) -> str:
    """The dotted field a protobuf JSON parse error names (`supportedInterfaces.url`)."""
    found = _FIELD.findall(str(error))
    if found:
        return ".".join(found)
    named = re.search(r'no field named "(\w+)"', str(error))
    return named.group(1) if named else "(message)"
