"""Team members, handoffs and history policies: what a team is made of, as data.

A handoff moves the conversation from one agent to another. What the
receiving agent reads of the conversation so far is the handoff's `history`
policy: `"full"` (all of it), `"summary"` (earlier turns replaced by a
summary, the `summarize` node's strategies), `"none"` (only the task: the
handoff's `task` argument, else the user's latest message), or a function
of a `HandoffView`. Whatever the policy returns is checked before any model
sees it: a tool call without its result, a result without its call, or
reasoning cut from the answer it led to is a `HandoffError`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeAlias

import attrs

from .._core._context import Settings
from .._core._errors import UsageError
from ..llm._messages import Message
from ..llm._model import ChatModel
from ..nodes._agent import check_tools
from ..nodes._chat import as_model
from ..nodes._summarize import DEFAULT_INSTRUCTIONS, Strategy
from ..structured._schema import TOOL_NAME
from ..tools._tool import Tool

__all__ = (
    "Agent",
    "Handoff",
    "HandoffView",
    "HistoryPolicy",
    "Summary",
    "conversation_problem",
)


@attrs.frozen
class HandoffView:
    """What a history function is given: who hands to whom, and the conversation.

    Attributes:
        source: the agent handing off.
        target: the agent receiving the conversation.
        history: the conversation as the source agent left it (every tool
            call answered, the handoff's own included).
        task: what the source asked the target to do (the handoff call's
            `task` argument), or None.
    """

    source: str
    target: str
    history: tuple[Message, ...]
    task: str | None


@attrs.frozen
class Summary:
    """The `"summary"` policy with its settings: earlier turns become one summary.

    The `summarize` node's strategies (`whole`, `keep_last`, `chunked`); the
    latest turn (from the user's last message) passes whole. `model` writes
    the summary (None: the handing agent's model).
    """

    model: ChatModel | str | None = None
    strategy: Strategy = "whole"
    keep_last: int = 6
    chunk_tokens: int | None = None
    instructions: str = DEFAULT_INSTRUCTIONS


HistoryPolicy: TypeAlias = (
    "Literal['full', 'summary', 'none'] | Summary | Callable[[HandoffView], Sequence[Message]]"
)
"""What the receiving agent reads: `"full"`, `"summary"`, a `Summary`, `"none"` or a function."""


def _check_policy(instance: Any, attribute: Any, value: Any) -> None:
    if value in ("full", "summary", "none") or isinstance(value, Summary) or callable(value):
        return
    raise UsageError(
        f"history= takes 'full', 'summary', 'none', a Summary or a function, not {value!r}"
    )


@attrs.frozen
class Handoff:
    """A handoff an agent may make: to `to`, reading the conversation by `history`.

    The agent is offered a tool `transfer_to_<to>` (with an optional `task`
    argument). With `returns=True` the receiving agent hands back when it
    answers: the caller's conversation resumes with that answer as the
    result of its `transfer_to_<to>` call (a sub-task). Until then the
    caller waits: a handoff to it is answered with an error, so only the
    sub-task's answer reaches its open call.

    Attributes:
        to: the receiving agent's name.
        history: the history policy (None: the team's).
        returns: hand back to the caller when the receiving agent answers.
        description: the tool's description (default: the target's description).
    """

    to: str
    history: HistoryPolicy | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(_check_policy),
    )
    returns: bool = False
    description: str | None = None

    @property
    def tool_name(self) -> str:
        return f"transfer_to_{self.to}"


def _handoffs(value: Sequence[str | Handoff]) -> tuple[Handoff, ...]:
    if isinstance(value, str | Handoff):
        value = (value,)
    made = tuple(h if isinstance(h, Handoff) else Handoff(h) for h in value)
    for h in made:
        if not isinstance(h.to, str):
            raise UsageError(f"handoffs= takes agent names or Handoff objects, not {h.to!r}")
    return made


def _check_name(instance: Any, attribute: Any, value: str) -> None:
    # The name is part of a tool name (`transfer_to_<name>`) and of node names.
    if not isinstance(value, str) or not TOOL_NAME.fullmatch(f"transfer_to_{value}"):
        raise UsageError(
            f"an agent's name is 1-52 letters, digits, '_' or '-' (it names its handoff "
            f"tool), not {value!r}"
        )


def _model(value: ChatModel | str) -> ChatModel:
    return as_model(value, "Agent")


def _tools(value: Sequence[Tool[..., Any]]) -> tuple[Tool[..., Any], ...]:
    check_tools(value, "Agent")
    return tuple(value)


@attrs.frozen(eq=False)
class Agent:
    """A member of a team: a model, its own tools, its instructions and whom it may hand to.

    The agent sees only its own tools and its handoff tools: its requests
    offer nothing else, and a call to any other name (one it read in the
    history, say) is refused with a result listing the names it may call.

    Attributes:
        name: unique in its team; its handoff tool is `transfer_to_<name>`.
        model: a `ChatModel` or a `"provider:model"` string.
        tools: the agent's own tools.
        system_prompt: its instructions (replace the context's while it holds
            the conversation).
        description: what the others read about it in their handoff tools.
        handoffs: whom it may hand to (names or `Handoff`s).
        max_turns: rounds of tool calls per turn before it must answer.
        settings: overrides the context's settings for its requests.
    """

    name: str = attrs.field(validator=_check_name)
    model: ChatModel = attrs.field(converter=_model)
    tools: tuple[Tool[..., Any], ...] = attrs.field(default=(), converter=_tools)
    system_prompt: str | None = None
    description: str = ""
    handoffs: tuple[Handoff, ...] = attrs.field(default=(), converter=_handoffs)
    max_turns: int = 8
    settings: Settings | None = None

    def __attrs_post_init__(self) -> None:
        if self.max_turns < 1:
            raise UsageError(f"agent {self.name!r}: max_turns must be at least 1")
        names = [t.name for t in self.tools] + [h.tool_name for h in self.handoffs]
        if len(set(names)) != len(names):
            raise UsageError(f"agent {self.name!r}: tool names must be unique, got {names}")


def conversation_problem(messages: Sequence[Any]) -> str | None:
    """What no provider would take in `messages` as a conversation to go on from, or None.

    Every assistant tool call is answered by a tool message before the next
    user or assistant message, every tool message answers a call of the
    assistant message it follows, reasoning stays with the answer or call it
    led to, there is a user message, and the last message is a user or tool
    message (a trailing assistant message would be taken as the start of the
    next answer).
    """
    if not messages:
        return "the conversation is empty"
    open_calls: set[str] = set()
    for i, message in enumerate(messages):
        if not isinstance(message, Message):
            return f"item {i} is a {type(message).__name__}, not a Message"
        if message.role == "tool":
            if message.tool_call_id not in open_calls:
                made = message.tool_call_id
                return f"message {i} answers tool call {made!r}, which no open call made"
            open_calls.discard(message.tool_call_id)
            continue
        if open_calls:
            return f"message {i} comes before the results of tool calls {sorted(open_calls)}"
        if message.role == "assistant":
            if (message.reasoning or message.provider_data) and not (
                message.content or message.tool_calls
            ):
                return f"message {i} holds reasoning without the answer or call it led to"
            open_calls = {call.id for call in message.tool_calls}
    if open_calls:
        return f"tool calls {sorted(open_calls)} have no results"
    if not any(m.role == "user" for m in messages):
        return "the conversation has no user message"
    if messages[-1].role == "assistant":
        return "the conversation ends with an assistant message"
    return None
