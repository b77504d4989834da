"""agentgraph's context as the LangGraph clients' state, and their input as a context.

`values` is `{"messages": [...], **ctx.state}`; each message is the dict a
LangChain message serializes to, with an id the server derives from the
thread and the message's place in it, so `values` and `messages` events name
a message alike and a client sees the same id on every read.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from .._context import AgentContext
from .._errors import AgentGraphError, RunInputError
from ..llm._messages import Message, ToolCall
from ..structured._schema import validate
from ..tracing._records import plain

__all__ = (
    "context_from_input",
    "interrupt_id",
    "message_dict",
    "run_context",
    "typed",
    "message_from",
    "message_id",
    "values_of",
)

_TYPES = {"user": "human", "assistant": "ai", "tool": "tool", "system": "system"}
_ROLES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "tool": "tool",
    "system": "system",
}


def message_id(thread_id: str, index: int) -> str:
    """The stable id of the `index`th message of a thread."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"agentgraph:{thread_id}/{index}"))


def interrupt_id(run_id: str, step: int) -> str:
    """The id of the interrupt a run raised at `step`."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"agentgraph:{run_id}/interrupt/{step}"))


def message_dict(message: Message, message_id: str) -> dict[str, Any]:
    """One message as a LangChain message dict."""
    data: dict[str, Any] = {
        "type": _TYPES[message.role],
        "content": message.content,
        "id": message_id,
        "name": message.name,
        "additional_kwargs": {},
        "response_metadata": {},
    }
    if message.role == "assistant":
        data["tool_calls"] = [
            {"id": c.id, "name": c.name, "args": plain(dict(c.arguments)), "type": "tool_call"}
            for c in message.tool_calls
        ]
        data["invalid_tool_calls"] = []
        usage = message.usage
        data["usage_metadata"] = (
            None
            if usage is None
            else {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.output_tokens,
            }
        )
    elif message.role == "tool":
        data["tool_call_id"] = message.tool_call_id
        data["status"] = "error" if message.is_error else "success"
    return data


def values_of(ctx: AgentContext[Any], thread_id: str) -> dict[str, Any]:
    """A context as the clients' `values`: its messages, then its state's keys."""
    messages = [message_dict(m, message_id(thread_id, n)) for n, m in enumerate(ctx.history)]
    state = plain(dict(ctx.state))
    return {"messages": messages, **(state if isinstance(state, dict) else {})}


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, Mapping) else str(part) for part in value
        )
    raise RunInputError(f"a message's content is text or a list of parts, not {value!r}")


def _message(item: Any) -> Message:
    if not isinstance(item, Mapping):
        raise RunInputError(f"a message is a JSON object, not {item!r}")
    kind = item.get("role", item.get("type"))
    role = _ROLES.get(str(kind))
    if role is None:
        raise RunInputError(f"a message's role or type is one of {sorted(_ROLES)}, not {kind!r}")
    calls = tuple(
        ToolCall(str(call.get("id") or ""), str(call.get("name")), call.get("args") or {})
        for call in item.get("tool_calls") or ()
        if isinstance(call, Mapping)
    )
    return Message(
        role,  # type: ignore[arg-type]
        _content(item.get("content", "")),
        tool_calls=calls,
        tool_call_id=item.get("tool_call_id"),
        name=item.get("name"),
        is_error=item.get("status") == "error",
    )


def message_from(item: Any) -> Message:
    """A client's message (role or type names) as a `Message`; `RunInputError` if it is not one."""
    return _message(item)


def context_from_input(value: Any) -> AgentContext[Any]:
    """A run's input as the first context of its turn.

    `messages` (role or type names) are the new messages; the last user
    message's text is the run's input and the ones before it the history
    added. Every other key goes into `ctx.state`.
    """
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise RunInputError(f"a run's input is a JSON object, not {type(value).__name__}")
    raw = value.get("messages") or []
    if isinstance(raw, Mapping):
        raw = [raw]
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise RunInputError("a run's `messages` is a list of messages")
    messages = [_message(item) for item in raw]
    state = {key: item for key, item in value.items() if key != "messages"}
    if messages and messages[-1].role == "user":
        last = messages.pop()
        return AgentContext(last.content, history=tuple(messages), state=state)
    return AgentContext("", history=tuple(messages), state=state)


def typed(tp: Any) -> bool:
    """Whether a graph's input or output type is neither text nor left open (`Any`)."""
    return tp is not str and tp is not Any and not isinstance(tp, TypeVar)


def run_context(kwargs: Mapping[str, Any], input_type: Any = Any) -> AgentContext[Any]:
    """A queued run's first context, from its stored `kwargs`.

    A graph taking text (or untyped) reads its input as `context_from_input`
    says; a graph with another input type takes the run's `input` as a value of
    that type, validated strictly. The run's `context` and its config's
    `configurable` (an assistant's under the run's own) add their keys to the
    state, under the input's own state keys.
    """
    given = kwargs.get("input")
    if typed(input_type):
        try:
            ctx: AgentContext[Any] = AgentContext(validate(input_type, given, strict=True))
        except AgentGraphError as exc:
            raise RunInputError(f"the run's input is not a valid {input_type!r}: {exc}") from exc
    else:
        ctx = context_from_input(given)
    config = kwargs.get("config") or {}
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    configured = {**(configurable or {}), **(kwargs.get("context") or {})}
    if configured:
        ctx = ctx.evolve(state={**configured, **ctx.state})
    return ctx
