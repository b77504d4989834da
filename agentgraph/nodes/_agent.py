"""`tool_use` runs the model's tool calls; `react_agent` wires chat and tools into a graph."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .._core._context import AgentContext, Settings
from .._core._errors import UsageError
from .._core._events import ToolFinished
from .._core._graph import Graph, GraphBuilder
from .._core._node import Node
from .._util._clip import MAX_RESULT_CHARS, check_max_result_chars
from ..llm._messages import Message, ToolCall
from ..llm._model import ChatModel
from ..tools._tool import Tool
from ._chat import as_model, chat, user_turn

if TYPE_CHECKING:
    from .._core._runner import Runtime

__all__ = ("ToolUse", "answer", "react_agent", "tool_use", "tool_turns")

_Answered = tuple[ToolCall, Message, float]


@attrs.frozen(eq=False, slots=True, repr=False)
class ToolUse(Node[Message, Message]):
    """Runs the tool calls of the assistant message in its input; appends the results.

    Only `tools` run: a call to any other name is answered with an error the
    model can read. Every failure (bad arguments, a raising or slow tool)
    becomes an error result, so the run goes on. The output input is the same
    assistant message.

    In a run with a checkpoint store, results are recorded: a resumed step
    reuses them and never runs a call twice. Calls to tools named in `approve`
    first ask for approval with `rt.interrupt(call)`; answering `True`
    approves, anything else refuses (a string is given to the model as the
    reason), and a refused call gets an error result the model can read.
    """

    tools: tuple[Tool[..., Any], ...]
    limit: int = 8
    call_timeout: float | None = None
    approve: frozenset[str] = frozenset()
    max_result_chars: int | None = MAX_RESULT_CHARS

    async def run(self, ctx: AgentContext[Message], rt: Runtime) -> AgentContext[Message]:
        calls = ctx.input.tool_calls
        if not calls:
            return ctx
        refused = await self._ask(calls, rt) if self.approve else {}
        allowed = [call for i, call in enumerate(calls) if i not in refused]
        for call, message, duration in refused.values():
            await rt.emit(ToolFinished(rt.step, rt.path, call, message, duration))
        answered = iter(
            await rt.call_tools(
                self.tools,
                allowed,
                limit=self.limit,
                timeout=self.call_timeout,
                context=ctx,
                max_result_chars=self.max_result_chars,
            )
        )
        results = [refused[i] if i in refused else next(answered) for i in range(len(calls))]
        out = ctx.append(*(message for _, message, _ in results))
        for _, message, _ in results:
            if message.usage is not None:  # a tool that ran a model (an agent as a tool)
                out = out.add_usage(message.usage)
        return out

    async def _ask(self, calls: Sequence[ToolCall], rt: Runtime) -> dict[int, _Answered]:
        """Ask for approval of every call that needs it, before any call runs."""
        refused: dict[int, _Answered] = {}
        for i, call in enumerate(calls):
            if call.name not in self.approve:
                continue
            verdict = await rt.interrupt(call)
            if verdict is not True:
                reason = f": {verdict}" if isinstance(verdict, str) and verdict else ""
                text = f"the call to tool {call.name!r} was refused by the user{reason}"
                refused[i] = (call, Message.tool(call.id, text, name=call.name, is_error=True), 0.0)
        return refused


def tool_use(
    tools: Sequence[Tool[..., Any]],
    *,
    name: str = "tools",
    limit: int = 8,
    timeout: float | None = None,
    approve: Collection[str] = (),
    max_result_chars: int | None = MAX_RESULT_CHARS,
) -> ToolUse:
    """A node that executes the tool calls of the last assistant message.

    Args:
        tools: the only tools this node may run.
        limit: how many calls run at once.
        timeout: seconds per call, for tools without a timeout of their own.
        approve: names of tools whose calls wait for approval (`rt.interrupt`);
            needs a run with a checkpoint store.
        max_result_chars: the most characters of one result the model reads,
            for tools without a bound of their own (None: no bound); a longer
            result keeps its start and end and says what was cut between.
    """
    check_tools(tools, f"tool_use {name!r}")
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise ValueError(f"tool names must be unique, got {names}")
    unknown = sorted(set(approve) - set(names))
    if unknown:
        raise ValueError(f"approve names tools this node does not have: {unknown}")
    # Tools with side effects make the whole node unsafe to repeat.
    retry_safe = all(t.retry_safe for t in tools)
    check_max_result_chars("tool_use", max_result_chars)
    return ToolUse(
        tuple(tools),
        limit,
        timeout,
        frozenset(approve),
        max_result_chars,
        name=name,
        retry_safe=retry_safe,
    )


@attrs.frozen(eq=False, slots=True, repr=False)
class _Answer(Node[Message, str]):
    async def run(self, ctx: AgentContext[Message], rt: Runtime) -> AgentContext[str]:
        return ctx.with_input(ctx.input.content)


def answer(*, name: str = "answer") -> Node[Message, str]:
    """A node that turns the assistant message in its input into its text."""
    return _Answer(name=name)


def tool_turns(ctx: AgentContext[Any]) -> int:
    """How many tool-calling assistant turns the current user turn has taken."""
    turns = 0
    for message in reversed(ctx.history):
        if message.role == "user":
            break
        if message.role == "assistant" and message.tool_calls:
            turns += 1
    return turns


def check_tools(tools: Sequence[Any], where: str) -> None:
    """Refuse, at construction, an entry of `tools=` that is not a `Tool`, naming the fix."""
    if isinstance(tools, Tool | str) or not isinstance(tools, Sequence | set | frozenset):
        raise UsageError(
            f"{where}: tools= takes a list of @tool functions, not {type(tools).__name__}"
        )
    for entry in tools:
        if isinstance(entry, Tool):
            continue
        what = getattr(entry, "__name__", None)
        shown = f"{type(entry).__name__} {what!r}" if what else type(entry).__name__
        fix = "decorate it with @tool" if callable(entry) else "pass @tool functions"
        raise UsageError(f"{where}: tools= got {shown}, which is not a tool: {fix}")


def react_agent(
    model: ChatModel | str,
    tools: Sequence[Tool[..., Any]],
    *,
    system_prompt: str | None = None,
    max_turns: int = 8,
    settings: Settings | None = None,
    name: str = "react_agent",
    approve: Collection[str] = (),
    stream: bool = False,
) -> Graph[str, str]:
    """A ReAct agent as an ordinary graph: user turn → chat ⇄ tools → answer.

    The input is the user's message, the output the final answer. After
    `max_turns` rounds of tool calls the model is asked once more with tools
    disabled, so the run always ends with an answer and every tool call in the
    history has its result. `system_prompt`, when given, replaces the context's.

    `approve` names tools whose calls wait for a person's approval: the run
    stops with `Interrupted` (the question is the `ToolCall`), and
    `GraphRunner.resume(..., answer=True)` runs the call while any other answer
    refuses it. Approval needs a run with a checkpoint store.

    `model` is a `ChatModel` or a `"provider:model"` string (see
    `model_from_string`): `react_agent("openai:gpt-4o-mini", [add])`.

    `stream=True` streams the model's answers, reporting their text as it
    arrives (`ModelStreamed` events).

    The graph is plain data: draw it with `to_mermaid()`, nest it, or rebuild
    it with other nodes.
    """
    if max_turns < 1:
        raise ValueError("max_turns must be at least 1")
    model = as_model(model, f"react_agent {name!r}")
    check_tools(tools, f"react_agent {name!r}")
    specs = tuple(t.spec for t in tools)
    prepare = _Prepare(system_prompt, name="user_turn") if system_prompt else user_turn()
    think = chat(model, name="chat", settings=settings, tools=specs, stream=stream)
    run_tools = tool_use(tools, approve=approve)
    last_word = chat(
        model,
        name="final_chat",
        settings=settings,
        tools=specs,
        tool_choice="none",
        stream=stream,
    )
    reply = answer()

    def route(ctx: AgentContext[Message]) -> Node[Message, Any]:
        if not ctx.input.tool_calls:
            return reply
        return run_tools

    def next_turn(ctx: AgentContext[Message]) -> Node[Any, Message]:
        return think if tool_turns(ctx) < max_turns else last_word

    with GraphBuilder[str, str](name) as g:
        g.start.edge_to(prepare).edge_to(think)
        think.edge_to(route, targets=(run_tools, reply))
        run_tools.edge_to(next_turn, targets=(think, last_word))
        last_word.edge_to(reply)
        reply.edge_to(g.finish)
    return g.build().as_agent()


@attrs.frozen(eq=False, slots=True, repr=False)
class _Prepare(Node[str, str]):
    system_prompt: str | None

    async def run(self, ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        return ctx.evolve(system_prompt=self.system_prompt).append(Message.user(ctx.input))
