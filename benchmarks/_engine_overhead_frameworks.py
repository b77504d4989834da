"""How each framework of the engine overhead benchmark builds its two graph shapes.

A chain of nodes that add one to a counter, and the ``llm`` <-> ``tool`` loop whose
nodes append one pre-built message each. Every builder returns a coroutine factory
that runs the graph once; peers are imported inside their own builders, so agentgraph
the design floor and the bare loop run without them.
"""

import asyncio
import operator
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from itertools import pairwise
from time import perf_counter
from typing import Annotated, Any, NamedTuple, TypedDict

from agentgraph import AgentContext, Graph, GraphBuilder, GraphRunner, Message, Node, node

RunOnce = Callable[[], Coroutine[Any, Any, int]]
Stamp = Callable[[float], None]


# Built once: the figures measure the engines, not message construction.
ASSISTANT = Message.assistant("calling the probe tool")
TOOL = Message.tool("call-1", "probe result", name="probe")


class Framework(NamedTuple):
    """How one framework builds the two graph shapes; each returns a coroutine factory."""

    chain: Callable[[int, bool], RunOnce]
    loop: Callable[[int, Stamp], RunOnce]


# -- agentgraph ------------------------------------------------------------------------


def _on_step_noop(step: object, node: object, ctx: object) -> None:
    return None


def agentgraph_chain(length: int, yielding: bool = False) -> Graph[int, int]:
    """`length` nodes in a row, each adding one to the input (after one yield if `yielding`)."""

    def make(i: int) -> Node[int, int]:
        if yielding:

            @node(name=f"n{i}")
            async def step(ctx: AgentContext[int]) -> AgentContext[int]:
                await asyncio.sleep(0)
                return ctx.with_input(ctx.input + 1)

        else:

            @node(name=f"n{i}")
            async def step(ctx: AgentContext[int]) -> AgentContext[int]:
                return ctx.with_input(ctx.input + 1)

        return step

    with GraphBuilder[int, int]("chain") as g:
        last: Node[Any, int] = g.start
        for i in range(length):
            last = last.edge_to(make(i))
        last.edge_to(g.finish)
    return g.build()


def _agentgraph_chain(length: int, yielding: bool) -> RunOnce:
    graph = agentgraph_chain(length, yielding)
    runner = GraphRunner(on_step=_on_step_noop)
    start = AgentContext(0)

    async def run_once() -> int:
        return (await runner.run(graph, start)).input

    return run_once


def agentgraph_loop(llm: Node[None, None], tool: Node[None, None], total: int) -> Graph[None, None]:
    """The loop: `llm`, then `tool` and back to `llm` until the history holds `total` messages."""

    def more(ctx: AgentContext[None]) -> Node[None, None] | None:
        return tool if len(ctx.history) < total else None

    with GraphBuilder[None, None]("loop") as g:
        g.start.edge_to(llm)
        llm.edge_to(more, targets=(tool,))
        llm.edge_to(g.finish)
        tool.edge_to(llm)
    return g.build()


def _agentgraph_loop(total: int, stamp: Stamp) -> RunOnce:
    @node
    async def llm(ctx: AgentContext[None]) -> AgentContext[None]:
        stamp(perf_counter())
        return ctx.append(ASSISTANT)

    @node
    async def tool(ctx: AgentContext[None]) -> AgentContext[None]:
        stamp(perf_counter())
        return ctx.append(TOOL)

    graph = agentgraph_loop(llm, tool, total)
    runner = GraphRunner(max_steps=total + 1, on_step=_on_step_noop)
    start = AgentContext(None)

    async def run_once() -> int:
        return len((await runner.run(graph, start)).history)

    return run_once


# -- LangGraph --------------------------------------------------------------------------


class _Counter(TypedDict):
    count: int


class _Chat(TypedDict):
    messages: Annotated[list[Message], operator.add]


def _langgraph_chain(length: int, yielding: bool) -> RunOnce:
    from langgraph.graph import END, START, StateGraph

    async def add(state: _Counter) -> dict[str, int]:
        return {"count": state["count"] + 1}

    async def add_yielding(state: _Counter) -> dict[str, int]:
        await asyncio.sleep(0)
        return {"count": state["count"] + 1}

    builder = StateGraph(_Counter)
    names = [f"n{i}" for i in range(length)]
    for name in names:
        builder.add_node(name, add_yielding if yielding else add)
    for source, target in pairwise([START, *names, END]):
        builder.add_edge(source, target)
    graph = builder.compile()

    async def run_once() -> int:
        return int((await graph.ainvoke({"count": 0}))["count"])

    return run_once


def langgraph_loop(
    state: type, llm: Callable[..., Any], tool: Callable[..., Any], total: int, saver: Any = None
) -> Any:
    """The same loop as a compiled LangGraph `StateGraph`.

    The history is the `messages` key of `state`; `saver` is the checkpointer, if any.
    """
    from langgraph.graph import END, START, StateGraph

    def more(state: Any) -> str:
        return "tool" if len(state["messages"]) < total else END

    builder: Any = StateGraph(state)
    builder.add_node("llm", llm)
    builder.add_node("tool", tool)
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", more, ["tool", END])
    builder.add_edge("tool", "llm")
    return builder.compile(checkpointer=saver)


def _langgraph_loop(total: int, stamp: Stamp) -> RunOnce:
    async def llm(state: _Chat) -> dict[str, list[Message]]:
        stamp(perf_counter())
        return {"messages": [ASSISTANT]}

    async def tool(state: _Chat) -> dict[str, list[Message]]:
        stamp(perf_counter())
        return {"messages": [TOOL]}

    graph = langgraph_loop(_Chat, llm, tool, total)
    # One superstep per node here, so the limit only has to exceed the step count.
    config: Any = {"recursion_limit": total + 10}

    async def run_once() -> int:
        return len((await graph.ainvoke({"messages": []}, config))["messages"])

    return run_once


# -- pydantic-graph ---------------------------------------------------------------------


@dataclass
class _ChatState:
    messages: list[Message] = field(default_factory=list)


def _pydantic_graph_chain(length: int, yielding: bool) -> RunOnce:
    from pydantic_graph import GraphBuilder as PydanticGraphBuilder
    from pydantic_graph import StepContext

    g = PydanticGraphBuilder(name="chain", input_type=int, output_type=int)

    async def add(ctx: StepContext[None, None, int]) -> int:
        return ctx.inputs + 1

    async def add_yielding(ctx: StepContext[None, None, int]) -> int:
        await asyncio.sleep(0)
        return ctx.inputs + 1

    steps = [g.step(add_yielding if yielding else add, node_id=f"n{i}") for i in range(length)]
    g.add(
        g.edge_from(g.start_node).to(steps[0]),
        *(g.edge_from(source).to(target) for source, target in pairwise(steps)),
        g.edge_from(steps[-1]).to(g.end_node),
    )
    graph = g.build()

    async def run_once() -> int:
        return await graph.run(inputs=0)

    return run_once


def _pydantic_graph_loop(total: int, stamp: Stamp) -> RunOnce:
    from pydantic_graph import GraphBuilder as PydanticGraphBuilder
    from pydantic_graph import StepContext

    g = PydanticGraphBuilder(name="loop", state_type=_ChatState, output_type=int)

    @g.step
    async def llm(ctx: StepContext[_ChatState, None, None]) -> int:
        stamp(perf_counter())
        ctx.state.messages.append(ASSISTANT)
        return len(ctx.state.messages)

    @g.step
    async def tool(ctx: StepContext[_ChatState, None, int]) -> None:
        stamp(perf_counter())
        ctx.state.messages.append(TOOL)

    route = (
        g.decision()
        .branch(g.match(int, matches=lambda count: count < total).to(tool))
        .branch(g.match(int).to(g.end_node))
    )
    g.add(
        g.edge_from(g.start_node).to(llm),
        g.edge_from(llm).to(route),
        g.edge_from(tool).to(llm),
    )
    graph = g.build()

    async def run_once() -> int:
        return await graph.run(state=_ChatState())

    return run_once


# -- the bare loop: plain functions, plain values ----------------------------------------


def _floor_chain(length: int, yielding: bool) -> RunOnce:
    async def add(value: int) -> int:
        return value + 1

    async def add_yielding(value: int) -> int:
        await asyncio.sleep(0)
        return value + 1

    steps = [add_yielding if yielding else add] * length

    async def run_once() -> int:
        value = 0
        for step in steps:
            value = await step(value)
        return value

    return run_once


Handler = Callable[[list[Message]], Awaitable[Any]]


def _floor_loop(total: int, stamp: Stamp) -> RunOnce:
    async def llm(history: list[Message]) -> Handler | None:
        stamp(perf_counter())
        history.append(ASSISTANT)
        return tool if len(history) < total else None

    async def tool(history: list[Message]) -> Handler:
        stamp(perf_counter())
        history.append(TOOL)
        return llm

    async def run_once() -> int:
        history: list[Message] = []
        step: Handler | None = llm
        while step is not None:
            step = await step(history)
        return len(history)

    return run_once


# -- the design floor: agentgraph's data work, dispatched by hand -------------------------
#
# What an engine cannot avoid: the same contexts built the same way (`AgentContext`,
# `with_input`, `append`), with the next function found in a dict and the loop's router
# called, and nothing else. The engine's own cost is what it adds on top of this.

CtxHandler = Callable[[AgentContext[Any]], Awaitable[AgentContext[Any]]]


def _design_floor_chain(length: int, yielding: bool) -> RunOnce:
    async def add(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_input(ctx.input + 1)

    async def add_yielding(ctx: AgentContext[int]) -> AgentContext[int]:
        await asyncio.sleep(0)
        return ctx.with_input(ctx.input + 1)

    names = [f"n{i}" for i in range(length)]
    handlers: dict[str, CtxHandler] = {n: add_yielding if yielding else add for n in names}
    following = dict(pairwise([*names, "finish"]))

    async def run_once() -> int:
        ctx = AgentContext(0)
        name = names[0]
        while name != "finish":
            ctx = await handlers[name](ctx)
            name = following[name]
        return ctx.input

    return run_once


def _design_floor_loop(total: int, stamp: Stamp) -> RunOnce:
    async def llm(ctx: AgentContext[None]) -> AgentContext[None]:
        stamp(perf_counter())
        return ctx.append(ASSISTANT)

    async def tool(ctx: AgentContext[None]) -> AgentContext[None]:
        stamp(perf_counter())
        return ctx.append(TOOL)

    def more(ctx: AgentContext[None]) -> str:
        return "tool" if len(ctx.history) < total else "finish"

    handlers: dict[str, CtxHandler] = {"llm": llm, "tool": tool}
    routes: dict[str, Callable[[AgentContext[None]], str]] = {"llm": more, "tool": lambda _: "llm"}

    async def run_once() -> int:
        ctx = AgentContext(None)
        name = "llm"
        while name != "finish":
            ctx = await handlers[name](ctx)
            name = routes[name](ctx)
        return len(ctx.history)

    return run_once


FRAMEWORKS = {
    "agentgraph": Framework(_agentgraph_chain, _agentgraph_loop),
    "langgraph": Framework(_langgraph_chain, _langgraph_loop),
    "pydantic-graph": Framework(_pydantic_graph_chain, _pydantic_graph_loop),
    "design-floor": Framework(_design_floor_chain, _design_floor_loop),
    "bare-loop": Framework(_floor_chain, _floor_loop),
}
