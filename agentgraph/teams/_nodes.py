"""The nodes a team graph is made of: the turn's start, an agent's tools, and the switch.

A team keeps its bookkeeping in `ctx.state["team"]` as plain data (who holds
the conversation, a handoff asked for, the chain so far, and the callers
waiting for a sub-task's answer), so a checkpointed team resumes like any
other graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from .._core._context import AgentContext, History
from .._core._events import HandedOff
from .._core._node import Node
from ..llm._anthropic_wire import THINKING_KEY
from ..llm._messages import Message, ToolCall, ToolSpec
from ..nodes._summarize import summarize
from ._errors import HandoffError, HandoffLoop
from ._handoff import Agent, Handoff, HandoffView, Summary, conversation_problem

if TYPE_CHECKING:
    from .._core._runner import Runtime

__all__ = (
    "STATE",
    "Begin",
    "Route",
    "Switch",
    "TeamTools",
    "handoff_spec",
    "team_state",
    "turn_agent",
)

STATE = "team"
"""The key of the team's bookkeeping in `ctx.state`."""

_TASK = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "description": "What the next agent should do, in a sentence or two.",
        }
    },
    "required": [],
}


def handoff_spec(handoff: Handoff, target: Agent) -> ToolSpec:
    """The tool an agent calls to hand the conversation to `target`."""
    about = handoff.description or target.description or f"the {target.name} agent"
    verb = "Ask" if handoff.returns else "Hand the conversation to"
    return ToolSpec(handoff.tool_name, f"{verb} {target.name}: {about}", _TASK)


def team_state(ctx: AgentContext[Any]) -> Mapping[str, Any]:
    """The team's bookkeeping in `ctx` (who holds the conversation, the chain, ...)."""
    found = ctx.state.get(STATE)
    if not isinstance(found, Mapping):
        raise KeyError("the context holds no team state: it did not come from a team graph")
    return found


def turn_agent(node: Node[Any, Any], path: Sequence[str], ctx: AgentContext[Any]) -> str | None:
    """The agent whose turn a starting step is part of, or None for any other step.

    An agent's turn is its steps in the team graph (`<agent>`, `<agent>_tools`,
    `<agent>_last`) and the `handoff` step that ends it. Steps of the same
    names elsewhere (after the team, in an outer graph) are not: the team
    state names the team graph's path.
    """
    state = ctx.state.get(STATE)
    if not isinstance(state, Mapping):
        return None
    agent, where = state.get("agent"), state.get("path")
    if not isinstance(agent, str) or not isinstance(where, Sequence) or isinstance(where, str):
        return None
    if len(path) != len(where) + 1 or any(a != b for a, b in zip(path, where, strict=False)):
        return None
    if isinstance(node, Switch | Route) or path[-1] in (agent, f"{agent}_tools", f"{agent}_last"):
        return agent
    return None


def waiting_agents(state: Mapping[str, Any]) -> list[str]:
    """The agents waiting for a sub-task's answer, the first caller first."""
    return [frame["agent"] for frame in state["stack"]]


def waiting_text(waiting: Sequence[str]) -> str:
    """The stack as the errors name it: the callers, the one answered next last."""
    return "waiting: " + ", then ".join(reversed(waiting))


def _with_state(ctx: AgentContext[Any], **changes: Any) -> AgentContext[Any]:
    return ctx.with_state(**{STATE: {**team_state(ctx), **changes}})


@attrs.frozen(eq=False, slots=True, repr=False)
class Begin(Node[str, str]):
    """The user's turn: the message joins the history and the first agent takes it."""

    first: Agent

    async def run(self, ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        out = ctx.evolve(system_prompt=self.first.system_prompt).append(Message.user(ctx.input))
        state = {
            "agent": self.first.name,
            "to": None,
            "chain": [self.first.name],
            "handoffs": 0,  # forward moves only: a sub-task's return is bounded by its call
            "stack": [],
            "user": ctx.input,  # the user's latest message: what `history="none"` gives
            "path": list(rt.path[:-1]),  # the team graph's, so traces tell its steps apart
        }
        return out.with_state(**{STATE: state})


@attrs.frozen(eq=False, slots=True, repr=False)
class TeamTools(Node[Message, Message]):
    """Runs an agent's own tool calls and answers its handoff calls.

    The first handoff call of a turn wins; any other is answered with an error
    saying where the conversation went. A handoff to an agent that waits for
    a sub-task's answer (its frame is on the stack) is answered with an error
    naming the waiting agents: only the sub-task's answer goes back to them.
    Every call gets its result, so the conversation any agent reads next has
    no call left open.
    """

    agent: Agent
    handoffs: Mapping[str, Handoff]

    async def run(self, ctx: AgentContext[Message], rt: Runtime) -> AgentContext[Message]:
        calls = ctx.input.tool_calls
        waiting = waiting_agents(team_state(ctx))
        free = [c for c in calls if c.name in self.handoffs]
        chosen = next((c for c in free if self.handoffs[c.name].to not in waiting), None)
        mine = {t.name for t in self.agent.tools}
        own = [c for c in calls if c.name in mine]
        answered = iter(await rt.call_tools(self.agent.tools, own, context=ctx))
        results: list[Message] = []
        for call in calls:
            if call.name in mine:
                results.append(next(answered)[1])
            elif call.name in self.handoffs and self.handoffs[call.name].to in waiting:
                results.append(self._busy(call, waiting))
            elif call.name in self.handoffs:
                results.append(self._answer(call, chosen))
            else:
                results.append(self._refuse(call, [*mine, *self.handoffs]))
        out = ctx.append(*results)
        for message in results:
            if message.usage is not None:
                out = out.add_usage(message.usage)
        if chosen is None:
            return out
        task = chosen.arguments.get("task")
        handoff = self.handoffs[chosen.name]
        pending = {
            "to": handoff.to,
            "call": chosen.id,
            "tool": chosen.name,
            "task": task if isinstance(task, str) and task else None,
        }
        return _with_state(out, handoff=pending)

    def _refuse(self, call: ToolCall, names: list[str]) -> Message:
        """A call to a tool this agent does not have (another agent's, read in the history)."""
        allowed = ", ".join(orjson.dumps(n).decode() for n in names) or "none"
        shown = orjson.dumps(call.name[:80]).decode()
        text = f"there is no tool named {shown} here; the tools you may call are: {allowed}"
        return Message.tool(call.id, text, name=call.name, is_error=True)

    def _busy(self, call: ToolCall, waiting: Sequence[str]) -> Message:
        """A handoff to an agent waiting for the sub-task this agent is working on."""
        target = self.handoffs[call.name].to
        text = (
            f"not transferred: {target} waits for the answer of a sub-task "
            f"({waiting_text(waiting)}); answer instead, and your answer goes back to "
            f"{waiting[-1]}"
        )
        return Message.tool(call.id, text, name=call.name, is_error=True)

    def _answer(self, call: ToolCall, chosen: ToolCall | None) -> Message:
        target = self.handoffs[call.name].to
        if call is chosen:
            return Message.tool(call.id, f"Transferred to {target}.", name=call.name)
        assert chosen is not None
        went = self.handoffs[chosen.name].to
        text = f"not transferred: the conversation went to {went}, one handoff per turn"
        return Message.tool(call.id, text, name=call.name, is_error=True)


@attrs.frozen(eq=False, slots=True, repr=False)
class Route(Node[Message, Message]):
    """An agent's answer meets the team's router, which may name the agent to go on.

    A name becomes a handoff the `handoff` step makes: the answer is withdrawn
    from the conversation (a trailing answer would be read as the start of
    the next agent's) and its text is the handoff's task. None lets the answer
    stand: it ends the run, or goes back to a caller waiting for it.
    """

    router: Callable[[AgentContext[Message]], str | None]

    async def run(self, ctx: AgentContext[Message], rt: Runtime) -> AgentContext[Message]:
        chosen = self.router(ctx)
        if chosen is None:
            return ctx
        source = team_state(ctx)["agent"]
        if not isinstance(chosen, str):
            problem = f"the router returned a {type(chosen).__name__}, not an agent's name or None"
            raise HandoffError(
                problem,
                source=source,
                target=repr(chosen)[:60],
                context=ctx,
                step=rt.step,
                path=rt.path,
            )
        task = ctx.input.content if isinstance(ctx.input, Message) else None
        pending = {"to": chosen, "call": None, "tool": None, "task": task or None}
        return _with_state(ctx, handoff=pending)


@attrs.frozen(eq=False, slots=True, repr=False)
class Switch(Node[Any, Any]):
    """Moves the conversation: to the agent a handoff named, or back to a waiting caller."""

    agents: Mapping[str, Agent]
    edges: Mapping[tuple[str, str], Handoff]
    history: Any
    max_handoffs: int

    async def run(self, ctx: AgentContext[Any], rt: Runtime) -> AgentContext[Any]:
        state = team_state(ctx)
        if state.get("handoff") is not None:
            return await self._forward(ctx, state, rt)
        return await self._back(ctx, state, rt)

    def _error(
        self, rt: Runtime, ctx: AgentContext[Any], source: str, target: str, problem: str
    ) -> HandoffError:
        return HandoffError(
            problem, source=source, target=target, context=ctx, step=rt.step, path=rt.path
        )

    async def _forward(
        self, ctx: AgentContext[Any], state: Mapping[str, Any], rt: Runtime
    ) -> AgentContext[Any]:
        source, pending = state["agent"], state["handoff"]
        target, routed = pending["to"], pending["call"] is None
        agent = self.agents.get(target)
        edge = self.edges.get((source, target))
        waiting = waiting_agents(state)
        problem = None
        if agent is None:
            problem = f"the team has no agent {target!r} (its agents: {', '.join(self.agents)})"
        elif target == source:
            problem = f"{source!r} may not hand to itself"
        elif edge is None and not routed:  # a router may choose any member; a model its tools
            problem = f"{source!r} may not hand to {target!r}"
        elif target in waiting:
            problem = (
                f"{target!r} waits for the answer of a sub-task ({waiting_text(waiting)}): "
                "only that answer goes back to it"
            )
        if problem is not None:
            raise self._error(rt, ctx, source, target, problem)
        assert agent is not None
        chain = [*state["chain"], target]
        moves = state.get("handoffs", len(state["chain"]) - 1) + 1
        if moves > self.max_handoffs:
            raise HandoffLoop(
                chain=chain, limit=self.max_handoffs, context=ctx, step=rt.step, path=rt.path
            )
        stack = list(state["stack"])
        if routed:  # the answer that was routed is withdrawn: no one reads a trailing answer
            ctx = ctx.evolve(history=History(ctx.history[:-1]))
        elif edge is not None and edge.returns:  # the caller waits for the target's answer
            stack.append(
                {
                    "agent": source,
                    "history": _open(ctx.history, pending["call"]),
                    "call": pending["call"],
                    "tool": pending["tool"],
                    "system_prompt": ctx.system_prompt,
                }
            )
        policy = edge.history if edge is not None and edge.history is not None else self.history
        view = HandoffView(source, target, tuple(ctx.history), pending["task"])
        messages, kind, ctx = await self._view(policy, view, ctx, rt)
        wrong = conversation_problem(messages)
        if wrong is not None:
            raise self._error(rt, ctx, source, target, f"the history policy returned {wrong}")
        if _thinks(agent, ctx):
            messages = _close_last_call(messages, source)
        await rt.emit(
            HandedOff(rt.step, rt.path, source, target, kind, len(messages), pending["task"])
        )
        out = ctx.evolve(history=History(messages), system_prompt=agent.system_prompt)
        return _with_state(
            out, agent=target, handoff=None, chain=chain, handoffs=moves, stack=stack
        )

    async def _view(
        self, policy: Any, view: HandoffView, ctx: AgentContext[Any], rt: Runtime
    ) -> tuple[Sequence[Any], str, AgentContext[Any]]:
        """The messages the target reads, the policy's name, and `ctx` with any usage added."""
        if policy == "full":
            return view.history, "full", ctx
        if policy == "none":
            if view.task is not None:
                return (Message.user(view.task),), "none", ctx
            # The user's own latest message, not a task an earlier handoff put in the history.
            said = team_state(ctx).get("user")
            latest = Message.user(said) if isinstance(said, str) else ctx.history.last("user")
            return ((latest,) if latest is not None else ()), "none", ctx
        if policy == "summary" or isinstance(policy, Summary):
            settings = policy if isinstance(policy, Summary) else Summary()
            model = settings.model or self.agents[view.source].model
            shrink = summarize(
                model,
                context_window=1,  # the policy always summarizes what precedes the latest turn
                threshold=1.0,
                strategy=settings.strategy,
                keep_last=settings.keep_last,
                chunk_tokens=settings.chunk_tokens,
                instructions=settings.instructions,
                name="handoff_summary",
            )
            out = await shrink.run(ctx, rt)
            return tuple(out.history), "summary", ctx.evolve(usage=out.usage)
        try:
            made = policy(view)
        except Exception as exc:
            raise self._error(
                rt,
                ctx,
                view.source,
                view.target,
                f"the history function raised {type(exc).__name__}: {exc}",
            ) from exc
        if isinstance(made, str | bytes | Mapping) or not isinstance(made, Sequence):
            raise self._error(
                rt,
                ctx,
                view.source,
                view.target,
                f"the history function returned a {type(made).__name__}, not a list of messages",
            )
        return tuple(made), "function", ctx

    async def _back(
        self, ctx: AgentContext[Any], state: Mapping[str, Any], rt: Runtime
    ) -> AgentContext[Any]:
        stack = list(state["stack"])
        frame = stack.pop()
        source, caller = state["agent"], frame["agent"]
        answer = ctx.input.content if isinstance(ctx.input, Message) else str(ctx.input)
        result = Message.tool(frame["call"], answer or "(no answer)", name=frame["tool"])
        history = History([*frame["history"], result])
        await rt.emit(HandedOff(rt.step, rt.path, source, caller, "return", len(history)))
        out = ctx.evolve(history=history, system_prompt=frame["system_prompt"])
        out = out.with_input(result)
        return _with_state(out, agent=caller, chain=[*state["chain"], caller], stack=stack)


def _open(history: Sequence[Message], call: str) -> list[Message]:
    """`history` with the result of the handoff `call` taken out of its last turn.

    Only the last turn is searched: call ids are unique within one model
    message, not across a conversation of several models.
    """
    turn = max((i for i, m in enumerate(history) if m.role == "assistant"), default=-1)
    results = [m for m in history[turn + 1 :] if m.tool_call_id != call]
    return [*history[: turn + 1], *results]


def _thinks(agent: Agent, ctx: AgentContext[Any]) -> bool:
    """Whether `agent`'s requests turn thinking on (its settings, else the context's)."""
    own = agent.settings.think if agent.settings is not None else None
    return bool(own if own is not None else ctx.settings.think)


def _close_last_call(messages: Sequence[Message], source: str) -> tuple[Message, ...]:
    """`messages` with the handing agent's turn told in words if it calls tools unthinking.

    With thinking on, Anthropic takes a last assistant message that calls tools
    only if it starts with its own thinking block, which an agent that did not
    think (or thought on another provider) could not have made, and which
    cannot be made up. The turn since the user's latest message (its answers,
    calls and their results) becomes one user message, so the receiving
    agent's first request starts a turn of its own.
    """
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=None)
    if last is None or not messages[last].tool_calls:
        return tuple(messages)
    if messages[last].provider_data.get(THINKING_KEY):
        return tuple(messages)
    start = max((i for i, m in enumerate(messages[:last]) if m.role == "user"), default=-1) + 1
    results = {m.tool_call_id: m.content for m in messages[start:] if m.role == "tool"}
    lines = [f"What {source} did before handing the conversation over:"]
    for message in messages[start:]:
        if message.role == "assistant":
            if message.content.strip():
                lines.append(f"- said: {message.content}")
            for call in message.tool_calls:
                shown = orjson.dumps(dict(call.arguments)).decode()
                answer = results.get(call.id, "(no result)")
                lines.append(f"- called {call.name}({shown}): {answer}")
        elif message.role != "tool":
            lines.append(f"- {message.role}: {message.content}")
    return (*messages[:start], Message.user("\n".join(lines)))


def own_specs(agent: Agent, agents: Mapping[str, Agent]) -> tuple[ToolSpec, ...]:
    """What `agent` is offered: its own tools, then its handoffs."""
    specs = [t.spec for t in agent.tools]
    specs.extend(handoff_spec(h, agents[h.to]) for h in agent.handoffs)
    return tuple(specs)
