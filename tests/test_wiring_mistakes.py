"""Mistakes made while wiring a graph: each a typed error whose message names the fix."""

from __future__ import annotations

import attrs
import pytest

import agentgraph
from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphDefinitionError,
    GraphRunner,
    Node,
    ProviderConfigError,
    UsageError,
    node,
    tool,
)
from agentgraph.nodes import chat, generate, react_agent, summarize, tool_use
from agentgraph.testing import ScriptedModel


@node
def a(ctx: AgentContext[str]) -> AgentContext[str]:
    return ctx


@node
def b(ctx: AgentContext[str]) -> AgentContext[str]:
    return ctx


@tool
def add(x: int, y: int) -> int:
    """Add two numbers."""
    return x + y


def test_a_plain_function_returning_a_context_given_to_edge_to_is_refused_at_once():
    def forgot(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx

    with (
        GraphBuilder[str, str]("g") as g,
        pytest.raises(UsageError, match="Decorate it with @node"),
    ):
        g.start.edge_to(forgot)


def test_an_async_step_without_node_is_refused_too():
    async def forgot(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx

    with (
        GraphBuilder[str, str]("g") as g,
        pytest.raises(UsageError, match="Decorate it with @node"),
    ):
        g.start.edge_to(forgot)


def test_chaining_after_a_router_says_what_edge_to_was_given():
    def forgot(ctx):  # no annotation: edge_to takes it for a router
        return ctx

    with GraphBuilder[str, str]("g") as g:
        after = g.start.edge_to(forgot)
        with pytest.raises(UsageError) as caught:
            after.edge_to(g.finish)
    message = str(caught.value)
    assert "start.edge_to(forgot) took forgot as a router" in message
    assert "decorate it with @node" in message


@pytest.mark.parametrize("make", [react_agent, chat, summarize])
def test_nodes_take_a_provider_model_string(make):
    kwargs = {"context_window": 1000} if make is summarize else {}
    args = ([add],) if make is react_agent else ()
    made = make("scripted:hello", *args, **kwargs)
    assert isinstance(made, Node)


@pytest.mark.parametrize("make", [react_agent, chat, summarize])
def test_a_model_that_is_neither_is_refused_with_the_fix(make):
    kwargs = {"context_window": 1000} if make is summarize else {}
    args = ([add],) if make is react_agent else ()
    with pytest.raises(UsageError, match="a ChatModel or a 'provider:model' string"):
        make(42, *args, **kwargs)
    with pytest.raises(ProviderConfigError, match="write 'provider:model'"):
        make("gpt-4o", *args, **kwargs)


@pytest.mark.anyio
async def test_react_agent_from_a_string_runs():
    agent = react_agent("scripted:The answer.", [add])
    out = await GraphRunner().run(agent, AgentContext("hi"))
    assert out.input == "The answer."


@pytest.mark.parametrize("make", [react_agent, tool_use])
def test_an_undecorated_function_in_tools_is_refused_when_the_node_is_made(make):
    def mul(x: int, y: int) -> int:
        return x * y

    args = (ScriptedModel("x"), [add, mul]) if make is react_agent else ([add, mul],)
    with pytest.raises(
        UsageError, match="tools= got function 'mul', which is not a tool: decorate"
    ):
        make(*args)


def test_chat_tools_take_specs_and_say_so():
    with pytest.raises(UsageError, match=r"pass tool.spec for a @tool function"):
        chat(ScriptedModel("x"), tools=[add])


def test_a_node_subclass_without_a_name_says_to_pass_one():
    @attrs.frozen(eq=False)
    class Shout(Node[str, str]):
        async def run(self, ctx, rt):
            return ctx.with_input(ctx.input.upper())

    with pytest.raises(UsageError, match=r"Shout\(\.\.\.\) needs a name: pass name="):
        Shout()
    assert Shout(name="shout").name == "shout"


def test_a_node_subclass_whose_run_forgets_rt_is_refused_as_the_class_is_made():
    with pytest.raises(UsageError, match=r"Shout.run must take \(self, ctx, rt\)"):

        @attrs.frozen(eq=False)
        class Shout(Node[str, str]):
            async def run(self, ctx):  # type: ignore[override]
                return ctx


@pytest.mark.anyio
async def test_async_for_over_stream_without_async_with_names_the_fix():
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(a).edge_to(g.finish)
    with pytest.raises(UsageError, match=r"write `async with runner\.stream"):
        async for _ in GraphRunner().stream(g.build(), AgentContext("x")):  # type: ignore[attr-defined]
            pass


def test_a_with_retry_copy_wired_instead_of_the_original_is_named():
    with GraphBuilder[str, str]("g") as g:
        retried = a.with_retry(attempts=3)
        g.start.edge_to(retried)
        a.edge_to(g.finish)
    with pytest.raises(GraphDefinitionError) as caught:
        g.build()
    message = str(caught.value)
    assert "finish cannot be reached from start; start reaches start, a and no further" in message
    assert "'a'.with_retry() made a copy" in message
    assert "wire only the copy (a = a.with_retry(...))" in message


def test_a_with_retry_copy_thrown_away_is_refused():
    with GraphBuilder[str, str]("g") as g:
        a.with_retry(attempts=3)
        g.start.edge_to(a).edge_to(g.finish)
    with pytest.raises(GraphDefinitionError, match=r"returned a copy that was never wired"):
        g.build()


def test_a_copy_used_inside_a_combinator_counts_as_wired():
    from agentgraph import parallel

    with GraphBuilder[str, list]("g") as g:
        both = parallel(a.with_timeout(5), b, merge=lambda ctx, outs: ctx.with_input(outs))
        g.start.edge_to(a).edge_to(both).edge_to(g.finish)
    g.build()


def test_finish_unreachable_names_the_nodes_start_reaches():
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(a).edge_to(b)
        b.edge_to(a)
    with pytest.raises(GraphDefinitionError, match="start reaches start, a, b and no further"):
        g.build()


def test_two_nodes_with_one_name_are_refused_with_the_fix():
    model = ScriptedModel("x", repeat=True)
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(generate(instruction="One.", model=model)).edge_to(
            generate(instruction="Two.", model=model)
        ).edge_to(g.finish)
    with pytest.raises(GraphDefinitionError) as caught:
        g.build()
    message = str(caught.value)
    assert "two different nodes are named 'generate'" in message
    assert "Give one a name of its own with name=" in message
    assert "generate, chat, tools, answer, retrieve" in message


def test_react_agent_is_at_the_top_level_too():
    assert agentgraph.react_agent is react_agent
