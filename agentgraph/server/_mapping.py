"""agentgraph's context as the LangGraph clients' state, and their input as a context.

`values` is `{"messages": [...], **ctx.state}`; each message is the dict a
LangChain message serializes to, with an id of its own (`MessageIds`) that
every event and every read of the thread give it alike. A graph that takes
something other than text also shows its value: the fields of an object, or
`output` for anything else.
"""

from __future__ import annotations

import dataclasses
import typing
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import attrs

from .._core._context import AgentContext
from .._core._errors import OutputError, RunInputError, UnsupportedType
from ..llm._messages import Message, ToolCall
from ..structured import validate
from ..tracing._records import plain

__all__ = (
    "MessageIds",
    "context_from_input",
    "interrupt_id",
    "message_dict",
    "message_from",
    "message_id",
    "run_context",
    "takes_text",
    "typed",
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
    """The id of the `index`th message of a thread, when nothing gave it another."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"agentgraph:{thread_id}/{index}"))


class MessageIds:
    """The ids of a thread's messages, as one run of the thread sees them.

    The messages the thread had keep the ids it gave them (`known`, from its
    stored values). A new assistant message that a model call of the run
    streamed gets that call's id (`answered`), the one its `messages/partial`
    and `messages` chunks carried, so a client merging by id sees one
    message; any other new message gets the id of its place in the thread.
    """

    def __init__(self, thread_id: str, known: Sequence[str] = ()) -> None:
        self.thread_id = thread_id
        self.ids = list(known)
        self.answers: list[tuple[Message, str]] = []
        """The run's model answers not yet found in the history, with their ids."""

    def answered(self, message: Message, message_id: str) -> None:
        """A model call answered `message`, under `message_id`."""
        self.answers.append((message, message_id))

    def of(self, history: Sequence[Message]) -> list[str]:
        """The ids of `history`'s messages, giving the new ones theirs."""
        for index in range(len(self.ids), len(history)):
            self.ids.append(self._new(history[index], index))
        return self.ids[: len(history)]

    def _new(self, message: Message, index: int) -> str:
        if message.role == "assistant":
            calls = [(c.id, c.name) for c in message.tool_calls]
            for n, (answer, answer_id) in enumerate(self.answers):
                if answer.content == message.content and calls == [
                    (c.id, c.name) for c in answer.tool_calls
                ]:
                    del self.answers[n]
                    return answer_id
        return message_id(self.thread_id, index)


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


def values_of(
    ctx: AgentContext[Any], thread_id: str, *, ids: MessageIds | None = None, typed: bool = False
) -> dict[str, Any]:
    """A context as the clients' `values`: its messages, then its state's keys.

    `ids` names the messages (by default, by their place in the thread). A
    `typed` graph's value follows: an object's fields, else `output`.
    """
    history = ctx.history
    names = (ids or MessageIds(thread_id)).of(history)
    messages = [message_dict(m, names[n]) for n, m in enumerate(history)]
    state = plain(dict(ctx.state))
    values = {"messages": messages, **(state if isinstance(state, dict) else {})}
    if typed:
        value = plain(ctx.input)
        values.update(value if isinstance(value, dict) else {"output": value})
    return values


def takes_text(input_type: Any) -> bool:
    """True for a graph whose input is the last user message's text (or is untyped)."""
    return input_type is str or input_type is Any or isinstance(input_type, TypeVar)


def typed(tp: Any) -> bool:
    """Whether a graph's input or output type is neither text nor left open (`Any`)."""
    return not takes_text(tp)


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


def _messages(raw: Any) -> list[Message]:
    if isinstance(raw, Mapping):
        raw = [raw]
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise RunInputError("a run's `messages` is a list of messages")
    return [_message(item) for item in raw]


def context_from_input(value: Any, input_type: Any = str) -> AgentContext[Any]:
    """A run's input as the first context of its turn, for a graph taking `input_type`.

    A graph that takes text: `messages` (role or type names) are the new
    messages; the last user message's text is the run's input and the ones
    before it the history added. Every other key goes into `ctx.state`.

    A graph that takes anything else: the input (without `messages`, unless
    the type has a field of that name) is decoded into `input_type` as
    `agentgraph.structured.validate` does, strictly, and `messages` are the
    history added. `RunInputError` names what does not fit.
    """
    if value is None:
        value = {}
    if not takes_text(input_type):
        return _typed_context(value, input_type)
    if not isinstance(value, Mapping):
        raise RunInputError(f"a run's input is a JSON object, not {type(value).__name__}")
    messages = _messages(value.get("messages") or [])
    state = {key: item for key, item in value.items() if key != "messages"}
    if messages and messages[-1].role == "user":
        last = messages.pop()
        return AgentContext(last.content, history=tuple(messages), state=state)
    return AgentContext("", history=tuple(messages), state=state)


def _typed_context(value: Any, input_type: Any) -> AgentContext[Any]:
    history: list[Message] = []
    if (
        isinstance(value, Mapping)
        and "messages" in value
        and "messages" not in fields_of(input_type)
    ):
        history = _messages(value["messages"] or [])
        value = {key: item for key, item in value.items() if key != "messages"}
    return AgentContext(decode_input(input_type, value), history=tuple(history))


def fields_of(tp: Any) -> frozenset[str]:
    """The field names of a class of fields (attrs, dataclass, TypedDict)."""
    if not isinstance(tp, type):
        return frozenset()
    if attrs.has(tp):
        return frozenset(f.alias or f.name for f in attrs.fields(tp))
    if dataclasses.is_dataclass(tp):
        return frozenset(f.name for f in dataclasses.fields(tp))
    if typing.is_typeddict(tp):
        return frozenset(tp.__annotations__)
    return frozenset()


def decode_input(input_type: Any, value: Any) -> Any:
    """`value` (JSON data) as an `input_type`; `RunInputError` naming each field that does not fit.

    Through `agentgraph.structured.validate`, strictly (an unknown field is
    refused), as a graph's input is over MCP and A2A.
    """
    try:
        return validate(input_type, value, strict=True)
    except OutputError as exc:
        raise RunInputError(_not_fitting(input_type, exc.errors)) from exc
    except UnsupportedType as exc:
        # A context holds data only: a type without a JSON form cannot come from a client.
        raise RunInputError(_not_fitting(input_type, [str(exc)])) from exc


def _not_fitting(input_type: Any, problems: Sequence[str]) -> str:
    name = getattr(input_type, "__name__", repr(input_type))
    return f"the run's input does not fit the graph's input type {name}: " + "; ".join(problems)


def run_context(kwargs: Mapping[str, Any], input_type: Any = Any) -> AgentContext[Any]:
    """A queued run's first context, from its stored `kwargs`.

    The run's `input` as `context_from_input` reads it for `input_type`; the
    run's `context` and its config's `configurable` (an assistant's under the
    run's own) add their keys to the state, under the input's own state keys.
    """
    ctx = context_from_input(kwargs.get("input"), input_type)
    config = kwargs.get("config") or {}
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    configured = {**(configurable or {}), **(kwargs.get("context") or {})}
    if configured:
        ctx = ctx.evolve(state={**configured, **ctx.state})
    return ctx
