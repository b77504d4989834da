"""A graph's interrupt as an MCP elicitation, and the client's answer back as the resume answer.

Two kinds of question are told apart: a tool approval (the question is a
`ToolCall`, asked by `tool_use(approve=...)`) becomes a yes/no form with an
optional reason, and anything else a form with one text field. The answer a
client sends is checked against the form it was given; a wrong shape, a
declined or cancelled form leaves the run interrupted, to be answered later.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from typing import Any, Literal

import attrs
import jsonschema
import orjson

from .._core._json import to_data
from .._util._redact import masked
from ..llm._messages import ToolCall

__all__ = ("NO_ANSWER", "Asked", "Seal", "answer_of", "question_of")

Kind = Literal["approval", "text"]

NO_ANSWER: Any = object()
"""What `answer_of` returns when the form was not answered (declined, cancelled, wrong shape)."""

_APPROVAL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Approve", "description": "Run the call?"},
        "reason": {"type": "string", "title": "Reason", "description": "Why not (optional)"},
    },
    "required": ["approve"],
}
_TEXT: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "title": "Answer"}},
    "required": ["answer"],
}
_SHOWN = 2000  # characters of a question's arguments a form shows


@attrs.frozen
class Asked:
    """One question as a form: the message shown, its schema, and which kind of answer it wants."""

    kind: Kind
    message: str
    schema: Mapping[str, Any]


def question_of(question: Any, run_id: str) -> Asked:
    """The form for a graph's question (masked: it leaves the process)."""
    if isinstance(question, ToolCall):
        arguments = orjson.dumps(to_data(dict(question.arguments))).decode()[:_SHOWN]
        text = f"Allow the call to tool {question.name!r} with arguments {arguments}?"
        return Asked("approval", masked(text), _APPROVAL)
    if isinstance(question, str):
        return Asked("text", masked(question), _TEXT)
    try:
        shown = orjson.dumps(to_data(question)).decode()[:_SHOWN]
    except Exception:  # a question that is no data still gets asked, by its type
        shown = f"a {type(question).__name__} (run {run_id})"
    return Asked("text", masked(shown), _TEXT)


_DONE = {"decline": "declined", "cancel": "cancelled"}


def answer_of(kind: Kind, action: str, content: Mapping[str, Any] | None) -> tuple[Any, str]:
    """The resume answer for a client's reply to a form, or `NO_ANSWER` and why not.

    A declined approval is a refusal (the run goes on without the call); any
    other reply that is not an accepted, well-formed answer is `NO_ANSWER`.
    """
    if kind == "approval" and action == "decline":
        return False, ""
    if action != "accept":
        return NO_ANSWER, f"the question was {_DONE.get(action, action)}, not answered"
    schema = _APPROVAL if kind == "approval" else _TEXT
    try:
        jsonschema.validate(dict(content or {}), schema)
    except jsonschema.ValidationError as exc:
        return NO_ANSWER, f"the answer does not fit the question's form: {exc.message}"
    values = dict(content or {})
    if kind == "text":
        return values["answer"], ""
    if values["approve"] is True:
        return True, ""
    reason = values.get("reason")
    return (reason if isinstance(reason, str) and reason else False), ""


class Seal:
    """Signs and checks the `request_state` a client echoes when it answers a question.

    The state names a run of this server: signed with a key made for this
    server object, so a client cannot make it name another run.
    """

    __slots__ = ("_key",)

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def state(self, tool: str, run_id: str, kind: Kind) -> str:
        body = orjson.dumps([tool, run_id, kind]).decode()
        return f"{body}.{self._mac(body)}"

    def open(self, state: str) -> tuple[str, str, Kind] | None:
        """The tool, run id and kind a state names, or None when it was not made here."""
        body, _, mac = state.rpartition(".")
        if not body or not hmac.compare_digest(mac.encode(), self._mac(body).encode()):
            return None
        tool, run_id, kind = orjson.loads(body)
        return str(tool), str(run_id), kind

    def _mac(self, body: str) -> str:
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()
