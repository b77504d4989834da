"""The `chat` node: one model call built from the context, its answer appended."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from .._core._context import AgentContext, Settings
from .._core._errors import ResponseFormatError, UsageError
from .._core._node import Node
from ..llm._messages import Message, ToolSpec
from ..llm._model import ChatModel, ChatRequest, ChatResponse, ResponseDone, ToolChoice

if TYPE_CHECKING:
    from .._core._runner import Runtime

__all__ = ("Chat", "build_request", "chat", "user_turn")

In = TypeVar("In")


def _merge_settings(ctx: Settings, override: Settings | None) -> Settings:
    if override is None:
        return ctx
    return Settings(
        model=override.model if override.model is not None else ctx.model,
        temperature=override.temperature if override.temperature is not None else ctx.temperature,
        max_output=override.max_output if override.max_output is not None else ctx.max_output,
        think=override.think if override.think is not None else ctx.think,
        cache=override.cache if override.cache is not None else ctx.cache,
    )


def build_request(
    ctx: AgentContext[Any],
    *,
    settings: Settings | None = None,
    tools: Sequence[ToolSpec] = (),
    tool_choice: ToolChoice | None = None,
) -> ChatRequest:
    """The request a `chat` node sends: system prompt, history, tools and settings.

    Nothing is added to the user's prompts: the messages are the context's
    system prompt followed by its history, verbatim.
    """
    merged = _merge_settings(ctx.settings, settings)
    messages: tuple[Message, ...] = tuple(ctx.history)
    if ctx.system_prompt:
        messages = (Message.system(ctx.system_prompt), *messages)
    specs = (*ctx.tools, *tools) if tools else ctx.tools
    return ChatRequest(
        messages,
        tools=specs,
        tool_choice=tool_choice if specs else None,
        temperature=merged.temperature,
        max_output=merged.max_output,
        think=merged.think,
        model=merged.model,
        cache=merged.cache,
    )


@attrs.frozen(eq=False, slots=True, repr=False)
class Chat(Node[Any, Message]):
    """Calls `model` with the context's conversation and appends the assistant's answer.

    The output context's input is the assistant `Message`, so a router can
    look at `ctx.input.tool_calls`. Usage is added to `ctx.usage`. With
    `stream`, the answer is streamed and its text reported as it arrives
    (`ModelStreamed` events), for pages that show it live.
    """

    model: ChatModel
    settings: Settings | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    stream: bool = False

    async def run(self, ctx: AgentContext[Any], rt: Runtime) -> AgentContext[Message]:
        if not ctx.history:
            ctx = _first_turn(ctx, self.name)
        elif _opens_turn(ctx, rt):
            ctx = ctx.append(Message.user(ctx.input))
        request = build_request(
            ctx, settings=self.settings, tools=self.tools, tool_choice=self.tool_choice
        )
        if self.stream:
            response = await _streamed(self.model, request, rt)
        else:
            response = await rt.call_model(self.model, request)
        message = response.message
        return ctx.append(message).add_usage(response.usage).with_input(message)


async def _streamed(model: ChatModel, request: ChatRequest, rt: Runtime) -> ChatResponse:
    async with rt.stream_model(model, request) as events:
        async for event in events:
            if isinstance(event, ResponseDone):
                return event.response
    raise ResponseFormatError(f"the stream from {model.name!r} ended without its final response")


def _opens_turn(ctx: AgentContext[Any], rt: Runtime) -> bool:
    """A turn of a thread whose text input is not in the history yet: the user's message.

    That is when nothing was added to the conversation the turn started from
    (a `user_turn` before this node adds the input itself), and the history
    does not already end with that very message.
    """
    journal = rt.journal
    if rt.thread_id is None or journal is None or not isinstance(ctx.input, str) or not ctx.input:
        return False
    last = ctx.history[-1]
    if last.role == "user" and last.content == ctx.input:
        return False
    # The conversation the graph started from: a thread turn's compaction step changes it.
    start: AgentContext[Any] = getattr(journal, "entry", journal.initial)
    return len(ctx.history) == len(start.history)


def _first_turn(ctx: AgentContext[Any], name: str) -> AgentContext[Any]:
    """A conversation to send when there is none yet: the input, as the user's message."""
    if isinstance(ctx.input, str) and ctx.input:
        return ctx.append(Message.user(ctx.input))
    raise UsageError(
        f"{name}: there is no conversation to send (the history is empty and the input is "
        f"{type(ctx.input).__name__}, not text): put a user_turn() node before it, or "
        "start from AgentContext(...).append(Message.user(...))"
    )


def as_model(model: ChatModel | str, where: str) -> ChatModel:
    """`model` itself, or the model a `"provider:model"` string names (as `model_from_string`).

    Raises:
        UsageError: `model` is neither.
        ProviderConfigError: the string names an unknown provider or lacks a key.
    """
    if isinstance(model, str):
        from ..llm._resolve import model_from_string

        return model_from_string(model)
    if not isinstance(model, ChatModel):
        raise UsageError(
            f"{where}: model must be a ChatModel or a 'provider:model' string such as "
            f"'openai:gpt-4o-mini', not {type(model).__name__}"
        )
    return model


def check_tool_specs(tools: Sequence[Any], where: str) -> tuple[ToolSpec, ...]:
    """`tools` as specs; anything else is refused with the fix."""
    for entry in tools:
        if not isinstance(entry, ToolSpec):
            fix = (
                "pass tool.spec for a @tool function (tool_use() runs the tools)"
                if hasattr(entry, "spec")
                else "decorate functions with @tool and pass their .spec"
            )
            raise UsageError(
                f"{where}: tools= takes ToolSpec entries (what the model is shown), "
                f"not {type(entry).__name__}: {fix}"
            )
    return tuple(tools)


def chat(
    model: ChatModel | str,
    *,
    name: str = "chat",
    settings: Settings | None = None,
    tools: Sequence[ToolSpec] = (),
    tool_choice: ToolChoice | None = None,
    stream: bool = False,
) -> Chat:
    """A node that calls `model` once. `settings` override the context's, field by field.

    `model` is a `ChatModel` or a `"provider:model"` string (see `model_from_string`).

    With `stream=True` the answer is streamed (its text reported as it arrives).
    """
    where = f"chat {name!r}"
    specs = check_tool_specs(tools, where)
    return Chat(as_model(model, where), settings, specs, tool_choice, stream, name=name)


@attrs.frozen(eq=False, slots=True, repr=False)
class _UserTurn(Node[str, str]):
    async def run(self, ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        return ctx.append(Message.user(ctx.input))


def user_turn(*, name: str = "user_turn") -> Node[str, str]:
    """A node that appends its input as a user message (the start of an agent turn)."""
    return _UserTurn(name=name)
