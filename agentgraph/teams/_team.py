"""`swarm` and `supervisor`: teams of agents as ordinary graphs.

Each agent is three nodes (its chat, its tools, its last word once its tool
rounds are spent); one `handoff` node moves the conversation between them.
The graph is plain: draw it, nest it, checkpoint it, run it with any runner.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._core._context import AgentContext
from .._core._errors import GraphDefinitionError, UsageError
from .._core._graph import Graph, GraphBuilder
from .._core._node import Node
from ..llm._messages import Message
from ..nodes._agent import answer, tool_turns
from ..nodes._chat import chat
from ._handoff import Agent, Handoff, HistoryPolicy, _check_policy
from ._nodes import Begin, Route, Switch, TeamTools, own_specs, team_state

__all__ = ("supervisor", "swarm")


def _members(name: str, agents: Sequence[Agent], team_nodes: Sequence[str]) -> dict[str, Agent]:
    if isinstance(agents, Agent) or not agents:
        raise UsageError(f"team {name!r}: agents= takes a non-empty list of Agent")
    found: dict[str, Agent] = {}
    for member in agents:
        if not isinstance(member, Agent):
            raise UsageError(f"team {name!r}: {member!r} is not an Agent")
        if found.setdefault(member.name, member) is not member:
            raise GraphDefinitionError(name, f"two agents are named {member.name!r}")
    for member in found.values():
        for h in member.handoffs:
            if h.to not in found:
                raise GraphDefinitionError(
                    name,
                    f"agent {member.name!r} hands off to {h.to!r}, which is not in the team "
                    f"(its agents: {', '.join(found)})",
                )
            if h.to == member.name:
                raise GraphDefinitionError(name, f"agent {member.name!r} hands off to itself")
    _check_node_names(name, found, team_nodes)
    return found


# Each agent makes three nodes, named after it.
_AGENT_NODES = ("{}", "{}_last", "{}_tools")


def _check_node_names(name: str, members: Mapping[str, Agent], team: Sequence[str]) -> None:
    """Refuse agent names that would name two nodes of the team's graph alike."""
    owners = {node: "the team" for node in team}
    for agent in members:
        for pattern in _AGENT_NODES:
            node = pattern.format(agent)
            owner = owners.setdefault(node, f"agent {agent!r}")
            if owner != f"agent {agent!r}":
                raise GraphDefinitionError(
                    name,
                    f"agent {agent!r} would make a node named {node!r}, as {owner} does: "
                    f"rename the agent (the team's own nodes are {', '.join(team)}; "
                    "each agent makes <name>, <name>_last and <name>_tools)",
                )


def swarm(
    agents: Sequence[Agent],
    *,
    start: str | None = None,
    history: HistoryPolicy = "full",
    max_handoffs: int = 10,
    route: Callable[[AgentContext[Message]], str | None] | None = None,
    name: str = "swarm",
) -> Graph[str, str]:
    """Peers that hand the conversation to each other, as a `Graph[str, str]`.

    The input is the user's message; `start` (default: the first agent) takes
    it. An agent hands off by calling `transfer_to_<name>` for an agent in
    its `handoffs`; the receiving agent reads the conversation by the
    handoff's `history` policy (default: this team's) and goes on with its
    own instructions and tools. Whoever answers without a tool call ends the
    run (or, under a handoff with `returns=True`, hands back to its caller).

    `route`, a plain function, hands off by code: it is given the context of
    every answer (`ctx.input` the answer, `team_state(ctx)["agent"]` who gave
    it) and returns the name of the agent to go on, or None to let the answer
    stand. The routed answer is withdrawn from the conversation and becomes
    the handoff's task; the receiving agent reads the conversation before it
    by the history policy of the source's `Handoff` to it, else the team's.
    A routed handoff does not return (no call waits for its answer).

    Raises:
        GraphDefinitionError: a handoff to an agent not in the team, two
            agents with one name, an agent name that clashes with a node of the
            team (`user_turn`, `handoff`, `answer`, `route` with `route=`, or
            another agent's `<name>_last` and `<name>_tools`).
    """
    team_nodes = ("user_turn", "handoff", "answer", *(("route",) if route is not None else ()))
    members = _members(name, agents, team_nodes)
    _check_policy(None, None, history)
    if max_handoffs < 0:
        raise UsageError(f"team {name!r}: max_handoffs must be 0 or more")
    if route is not None and (not callable(route) or inspect.iscoroutinefunction(route)):
        raise UsageError(
            f"team {name!r}: route= takes a plain function of the context returning an "
            f"agent's name or None, not {route!r}"
        )
    first = members[start] if start is not None and start in members else None
    if start is not None and first is None:
        raise GraphDefinitionError(name, f"start agent {start!r} is not in the team")
    first = first or next(iter(members.values()))
    edges = {(a.name, h.to): h for a in members.values() for h in a.handoffs}
    switch = Switch(members, edges, history, max_handoffs, name="handoff")
    reply = answer()
    begin = Begin(first, name="user_turn")
    router = Route(route, name="route") if route is not None else None
    chats: dict[str, Node[Any, Message]] = {}
    with GraphBuilder[str, str](name) as g:
        g.start.edge_to(begin)
        lasts = {}
        for member in members.values():
            specs = own_specs(member, members)
            chats[member.name] = chat(
                member.model, name=member.name, settings=member.settings, tools=specs
            )
            lasts[member.name] = chat(
                member.model,
                name=f"{member.name}_last",
                settings=member.settings,
                tools=specs,
                tool_choice="none",
            )
        to_agent = _to_agent(chats)
        begin.edge_to(to_agent, targets=tuple(chats.values()))
        switch.edge_to(to_agent, targets=tuple(chats.values()))
        for member in members.values():
            think, last = chats[member.name], lasts[member.name]
            handoffs = {h.tool_name: h for h in member.handoffs}
            tools = TeamTools(member, handoffs, name=f"{member.name}_tools")
            done = _done(switch, reply) if router is None else (lambda ctx: router)
            ends = (switch, reply) if router is None else (router,)
            think.edge_to(_after_chat(tools, done), targets=(tools, *ends))
            tools.edge_to(
                _after_tools(switch, think, last, member.max_turns), targets=(switch, think, last)
            )
            last.edge_to(done, targets=ends)
        if router is not None:
            router.edge_to(_routed(switch, reply), targets=(switch, reply))
        reply.edge_to(g.finish)
    return g.build()


def _to_agent(chats: Mapping[str, Node[Any, Message]]) -> Any:
    def route(ctx: AgentContext[Any]) -> Node[Any, Message]:
        return chats[team_state(ctx)["agent"]]

    return route


def _done(switch: Switch, reply: Node[Message, str]) -> Any:
    def route(ctx: AgentContext[Message]) -> Node[Any, Any]:
        return switch if team_state(ctx)["stack"] else reply  # a sub-task answers its caller

    return route


def _routed(switch: Switch, reply: Node[Message, str]) -> Any:
    def route(ctx: AgentContext[Message]) -> Node[Any, Any]:
        state = team_state(ctx)
        return switch if state.get("handoff") is not None or state["stack"] else reply

    return route


def _after_chat(tools: Node[Message, Message], done: Any) -> Any:
    def route(ctx: AgentContext[Message]) -> Node[Any, Any]:
        return tools if ctx.input.tool_calls else done(ctx)

    return route


def _after_tools(switch: Switch, think: Node[Any, Any], last: Node[Any, Any], turns: int) -> Any:
    def route(ctx: AgentContext[Message]) -> Node[Any, Any]:
        if team_state(ctx).get("handoff") is not None:
            return switch
        return think if tool_turns(ctx) < turns else last

    return route


def supervisor(
    boss: Agent,
    specialists: Sequence[Agent],
    *,
    history: HistoryPolicy = "none",
    max_handoffs: int = 10,
    name: str = "supervisor",
) -> Graph[str, str]:
    """A router agent over specialists, as a `Graph[str, str]`.

    `boss` takes the user's message and may ask any specialist
    (`transfer_to_<name>`, with a `task`); the specialist works with its
    own tools on what the `history` policy gives it (default `"none"`: the
    task alone), and its answer comes back to `boss` as the result of that
    call. `boss` answers the user. Specialists do not hand off themselves.
    """
    if not isinstance(boss, Agent):
        raise UsageError(f"supervisor {name!r}: boss= takes an Agent")
    for member in specialists:
        if isinstance(member, Agent) and member.handoffs:
            raise UsageError(
                f"supervisor {name!r}: specialist {member.name!r} has handoffs of its own; "
                "use swarm() for peers that hand off"
            )
    asks = tuple(Handoff(s.name, returns=True) for s in specialists)
    router = Agent(
        boss.name,
        boss.model,
        boss.tools,
        boss.system_prompt,
        boss.description,
        (*boss.handoffs, *asks),
        boss.max_turns,
        boss.settings,
    )
    return swarm(
        (router, *specialists),
        start=boss.name,
        history=history,
        max_handoffs=max_handoffs,
        name=name,
    )
