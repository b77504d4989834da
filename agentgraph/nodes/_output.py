"""What `generate` asks a model for, and how the prompt says so.

The answer is free text (`TEXT`) or an instance of a type. For a type, the
prompt's answer format is `prompt_fragment(T)`, or, when the model takes a
schema natively, a short statement that the answer is JSON of that type while
the schema itself travels in `ChatRequest.output`. An answer that does not
parse or validate is sent back with `feedback` on its problems; each answer
is recorded as an `OutputAttempt`, and `failure` is the error after the last.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

import attrs

from .._core._errors import OutputError, UnsupportedType
from .._core._events import OutputAttempt
from .._util._redact import masked
from ..llm._messages import Message
from ..llm._model import ChatModel, ChatResponse, OutputSchema
from ..structured._compile import shape_of
from ..structured._composites import ObjectShape
from ..structured._schema import json_schema, prompt_fragment

__all__ = (
    "SUPPORTS_OUTPUT_SCHEMA",
    "TEXT",
    "Answer",
    "compose",
    "contract",
    "failure",
    "feedback",
    "native_output",
    "output_schema",
    "record_of",
    "show",
)

SUPPORTS_OUTPUT_SCHEMA = "supports_output_schema"
"""The attribute a `ChatModel` sets to True when it takes `ChatRequest.output` natively."""

_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")


def native_output(tp: Any) -> OutputSchema | None:
    """The `ChatRequest.output` for `tp`, or None when its root is not a class.

    Providers want an object at the root of a response schema. The OpenAI
    strict variant is used when the type has one, else the plain schema.
    """
    shape = shape_of(tp)
    if not isinstance(shape, ObjectShape):
        return None
    try:
        schema, strict = json_schema(tp, strict=True), True
    except UnsupportedType:  # free-form dicts or `Any` have no strict form
        schema, strict = json_schema(tp), False
    name = _SCHEMA_NAME.sub("_", shape.name)[:64] or "output"
    return OutputSchema(name, schema, shape.description or "", strict)


class _Text:
    def __repr__(self) -> str:
        return "TEXT"


TEXT: Any = _Text()
"""`generate`'s default: free text, with no shape, schema or answer format."""


def output_schema(tp: Any, native: bool | None, model: ChatModel) -> OutputSchema | None:
    """The schema sent natively for `tp`, or None when the prompt carries the contract."""
    if tp is TEXT:
        if native:
            raise ValueError("native structured output needs a type; free text has none")
        return None
    if native is None:
        native = getattr(model, SUPPORTS_OUTPUT_SCHEMA, False) is True
        return native_output(tp) if native else None
    if not native:
        return None
    output = native_output(tp)
    if output is None:
        raise UnsupportedType(tp, "native structured output needs a class at the root")
    return output


def contract(tp: Any, output: OutputSchema | None) -> str:
    """The prompt's answer format for `tp`: empty for free text."""
    if tp is TEXT:
        return ""
    if output is None:
        return prompt_fragment(tp)
    return (
        f"Answer with one JSON object of type `{shape_of(tp).label}` and nothing else; "
        "the response format attached to this request gives its exact schema."
    )


def compose(context: str, instruction: str, answer_format: str) -> str:
    """The user message: the context sections, the task, then the answer format."""
    parts = [f"## Context\n\n{context}"] if context else []
    parts.append(f"## Task\n\n{instruction}")
    if answer_format:
        parts.append(f"## Answer format\n\n{answer_format}")
    return "\n\n".join(parts)


def feedback(errors: Sequence[str]) -> str:
    """What is sent back after an answer that did not parse or validate."""
    lines = "\n".join(f"- {error}" for error in errors)
    return (
        f"Your answer could not be used:\n{lines}\n\n"
        "Answer again with the corrected JSON and nothing else."
    )


def show(title: str, messages: Sequence[Message]) -> None:
    """Print what `debug=True` shows: the prompt and each raw answer, secrets masked."""
    print(f"--- {title}", file=sys.stderr)
    for message in messages:
        print(f"[{message.role}]\n{masked(message.content)}", file=sys.stderr)


def _s(count: int) -> str:
    return "" if count == 1 else "s"


@attrs.frozen
class Answer:
    """One attempt's outcome: the response, and the value or why there is none."""

    response: ChatResponse
    value: Any = None
    error: OutputError | None = None
    repairs: tuple[str, ...] = ()


def record_of(number: int, answer: Answer) -> OutputAttempt:
    response = answer.response
    errors: tuple[str, ...] = ()
    if answer.error is not None:
        errors = answer.error.errors
        if response.finish_reason == "length":
            errors = (*errors, "$: the answer was cut off by the output limit")
    return OutputAttempt(
        number,
        response.message.content,
        answer.error is None,
        errors,
        response.finish_reason,
        response.usage,
        answer.repairs,
    )


def failure(name: str, label: str, attempts: Sequence[OutputAttempt]) -> OutputError:
    """The error after the last attempt: what was asked for and the last answer's problems."""
    errors = attempts[-1].errors
    lines = "\n".join(f"  {e}" for e in errors)
    n = len(attempts)
    return OutputError(
        f"{name}: no valid {label} after {n} attempt{_s(n)}; "
        f"the last answer had {len(errors)} problem{_s(len(errors))}:\n{lines}",
        attempts=[a.raw for a in attempts],
        errors=errors,
        details={"type": label, "node": name},
    )
