"""`agent_tool`: any graph offered as a tool of another agent, run as steps of the caller's run.

The sub-run is not a run of its own: its steps execute inside the caller's
`tool_use` step (`ToolSite.runtime`), so they count against the caller's
step cap and usage limits, appear in the trace one level below that step,
and, in a checkpointed run, record their effects (model calls, tool results,
questions) inside it. A question the sub-run asks (`rt.interrupt`) stops the
caller's run with `Interrupted`; resuming the caller runs its tool step
again, and the sub-run, served its recorded effects, reaches the question
and gets the answer. Its usage is added to the caller's context with the
tool's result.
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any

import attrs

from .._core._context import AgentContext
from .._core._errors import UsageError
from .._core._node import Node
from ..llm._messages import Message, ToolCall
from ..structured._guide import Guide
from ..structured._schema import TOOL_NAME
from ..tools._tool import Tool, ToolResult, ToolSite, tool

__all__ = ("agent_tool",)

_SITE = "agentgraph_site"
_CONTEXT = "agentgraph_context"


def _position(call: ToolCall, context: AgentContext[Any]) -> int:
    """The call's place among its message's calls: the same on every resume of the step."""
    calls = context.input.tool_calls if isinstance(context.input, Message) else ()
    for i, made in enumerate(calls):
        if made is call:
            return i + 1
    for i, made in enumerate(calls):
        if made.id == call.id:
            return i + 1
    return 1


def agent_tool(
    graph: Node[Any, Any],
    *,
    name: str | None = None,
    description: str | None = None,
    input_type: Any = str,
    argument: str = "task",
    retry_safe: bool = True,
) -> Tool[..., Any]:
    """Offer `graph` (an agent, or any node) as a tool another agent can call.

    The tool's arguments are `input_type`'s: an attrs class or a dataclass
    gives its fields (the JSON Schema `@tool` would build), any other type
    one argument named `argument`. The graph runs on a fresh conversation
    with the validated input; its output is the result (text as is, other
    values as JSON), and its usage joins the caller's.

    Args:
        graph: what runs for each call, e.g. a `react_agent(...)`.
        name: the tool's name (default: the graph's).
        description: what the caller's model reads about the tool.
        input_type: the graph's input type (default `str`).
        argument: the argument's name when `input_type` is not a class of fields.
        retry_safe: False when running the graph twice would do harm; a call
            found in flight on resume is then a `ResumeError`.

    Raises:
        UsageError: `graph` is not a node, or the name is not a valid tool name.
        ToolError: `input_type` has no JSON Schema.
    """
    if not isinstance(graph, Node):
        raise UsageError(f"agent_tool takes a graph or a node, not {type(graph).__name__}")
    tool_name = graph.name if name is None else name
    if not TOOL_NAME.fullmatch(tool_name):
        raise UsageError(
            f"agent_tool: {tool_name!r} is not a valid tool name (1-64 letters, digits, "
            "'_' or '-'); pass name="
        )
    unpack = isinstance(input_type, type) and (attrs.has(input_type) or _is_dataclass(input_type))
    key = "input" if unpack else argument

    async def run(**kwargs: Any) -> ToolResult:
        site: ToolSite = kwargs.pop(_SITE)
        caller: AgentContext[Any] = kwargs.pop(_CONTEXT)
        local = _position(site.call, caller)
        out = await site.runtime.execute(graph, AgentContext(kwargs[key]), local, branch=True)
        return ToolResult(out.input, usage=out.usage)

    hint = Annotated[input_type, Guide(f"the input for {tool_name}")] if not unpack else input_type
    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(_SITE, inspect.Parameter.KEYWORD_ONLY, annotation=ToolSite),
            inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=AgentContext),
            inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=hint),
        ]
    )
    made: Tool[..., Any] = tool(
        name=tool_name,
        description=description or f"Ask the {tool_name} agent to do a task; returns its answer.",
        retry_safe=retry_safe,
        unpack=unpack,
    )(run)
    return made


def _is_dataclass(tp: type) -> bool:
    import dataclasses

    return dataclasses.is_dataclass(tp)
