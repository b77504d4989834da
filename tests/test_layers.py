"""Layers around a run's effects: the runner's own, in their documented place, seeing every
effect of the run wherever it is made, and one path per effect whatever layers are in."""

from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import attrs
import pytest

from agentgraph import (
    AgentContext,
    EmbedEffect,
    GraphRunner,
    GuardDecided,
    InterruptEffect,
    Journal,
    Layer,
    MemoryEffect,
    ModelCallEffect,
    ModelStreamEffect,
    NodeFailed,
    OnceEffect,
    ToolCallsEffect,
    UsageError,
    node,
    parallel,
    tool,
)
from agentgraph._core._effect_kinds import Effect
from agentgraph._core._gate import GateLayer
from agentgraph._core._journal import RemoteJournal
from agentgraph._core._layer_events import EventsLayer
from agentgraph._core._layer_journal import JournalLayer, RemoteJournalLayer
from agentgraph._core._layer_limits import LimitsLayer
from agentgraph.checkpoint import MemoryStore, SQLiteStore
from agentgraph.guards import Decision, Guards, guard
from agentgraph.guards._layers import AroundGuards, BesideGuards, ResultGuards
from agentgraph.llm import ChatRequest, ChatResponse, Message, ResponseDone, Usage
from agentgraph.nodes import chat, react_agent
from agentgraph.teams import Agent, agent_tool, supervisor
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Seen(Layer):
    """Notes the kind and step path of every effect it sees."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[str, ...]]] = []

    async def around(self, rt: Any, effect: Any, proceed: Any) -> Any:
        self.seen.append((type(effect).__name__, rt.path))
        return await proceed(rt, effect)

    @asynccontextmanager
    async def around_stream(
        self, rt: Any, effect: ModelStreamEffect, proceed: Any
    ) -> AsyncIterator[Any]:
        self.seen.append((type(effect).__name__, rt.path))
        async with proceed(rt, effect) as events:
            yield events


class CostTracker(Layer):
    """Sums the tokens each model spent, streamed or not."""

    wants = frozenset({ModelCallEffect, ModelStreamEffect})

    def __init__(self) -> None:
        self.tokens: dict[str, int] = defaultdict(int)

    async def around(self, rt: Any, effect: Any, proceed: Any) -> Any:
        response = await proceed(rt, effect)
        self.tokens[effect.name] += response.usage.total_tokens
        return response

    @asynccontextmanager
    async def around_stream(
        self, rt: Any, effect: ModelStreamEffect, proceed: Any
    ) -> AsyncIterator[Any]:
        async with proceed(rt, effect) as events:
            counted = self._counted(effect.name, events)
            async with aclosing(counted):  # finished here even if the reader stops early
                yield counted

    async def _counted(self, name: str, events: Any) -> Any:
        async for event in events:
            if isinstance(event, ResponseDone):
                self.tokens[name] += event.response.usage.total_tokens
            yield event


class Cache(Layer):
    """Answers a request it answered before without calling the model."""

    wants = frozenset({ModelCallEffect})
    performed = True

    def __init__(self) -> None:
        self.answers: dict[str, ChatResponse] = {}
        self.hits = 0

    async def around(self, rt: Any, effect: Any, proceed: Any) -> Any:
        key = repr(effect.request)  # requests are frozen values: equal ones print alike
        found = self.answers.get(key)
        if found is not None:
            self.hits += 1
            return found
        response: ChatResponse = await proceed(rt, effect)
        self.answers[key] = response
        return response


def _usage(tokens: int) -> Usage:
    return Usage(input_tokens=tokens, output_tokens=tokens)


async def test_a_cost_tracker_sums_spend_per_model_streamed_or_not() -> None:
    tracker = CostTracker()
    plain = ScriptedModel(ChatResponse(Message.assistant("a"), usage=_usage(3)), name="small")
    streamed = ScriptedModel(ChatResponse(Message.assistant("b"), usage=_usage(5)), name="large")
    runner = GraphRunner(layers=[tracker])
    await runner.run(chat(plain), AgentContext("hi"))
    await runner.run(chat(streamed, stream=True), AgentContext("hi"))
    assert dict(tracker.tokens) == {"small": 6, "large": 10}


async def test_a_cache_answers_a_repeated_request_and_the_journal_records_its_answer() -> None:
    model = ScriptedModel("hello", "never asked", name="scripted")

    @node
    async def twice(ctx: AgentContext[str], rt: Any) -> AgentContext[str]:
        request = ChatRequest(messages=(Message.user(ctx.input),))
        first = await rt.call_model(model, request)
        second = await rt.call_model(model, request)
        return ctx.with_input(f"{first.message.content}/{second.message.content}")

    cache = Cache()
    store = MemoryStore()
    runner = GraphRunner(layers=[cache])
    out = await runner.run(twice, AgentContext("hi"), store=store, run_id="cached")
    assert out.input == "hello/hello"
    assert len(model.requests) == 1 and cache.hits == 1
    # A replay is served both answers from the record: neither the cache nor the model is asked.
    fresh = Cache()
    again = await GraphRunner(layers=[fresh]).replay(twice, "cached", store)
    assert again.input == "hello/hello"
    assert len(model.requests) == 1 and fresh.answers == {} and fresh.hits == 0


async def test_a_cache_below_the_journal_keeps_a_sqlite_replay_exact(tmp_path: Any) -> None:
    model = ScriptedModel("one", name="scripted")
    cache = Cache()
    store = SQLiteStore(tmp_path / "runs.db")
    runner = GraphRunner(layers=[cache])
    graph = react_agent(model, [], name="agent")
    out = await runner.run(graph, AgentContext("hi"), store=store, run_id="r1")
    replayed = await GraphRunner().replay(graph, "r1", store)
    assert replayed.history == out.history and len(model.requests) == 1


async def test_a_layer_may_answer_refuse_or_change_an_effect() -> None:
    class Rewrite(Layer):
        wants = frozenset({ModelCallEffect})

        async def around(self, rt: Any, effect: Any, proceed: Any) -> Any:
            changed = attrs.evolve(effect.request, messages=(Message.user("rewritten"),))
            return await proceed(rt, attrs.evolve(effect, request=changed))

    model = ScriptedModel("ok")
    await GraphRunner(layers=[Rewrite()]).run(chat(model), AgentContext("original"))
    assert model.requests[0].messages == (Message.user("rewritten"),)

    class Refuse(Layer):
        async def around(self, rt: Any, effect: Any, proceed: Any) -> Any:
            raise PermissionError("no models today")

    with pytest.raises(Exception) as caught:
        await GraphRunner(layers=[Refuse()]).run(chat(ScriptedModel("x")), AgentContext("x"))
    assert isinstance(caught.value.__cause__, PermissionError)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_a_layer_sees_every_kind_of_effect() -> None:
    seen = Seen()

    @node
    async def busy(ctx: AgentContext[str], rt: Any) -> AgentContext[str]:
        await rt.once("clock", lambda: 7)
        return ctx

    model = ScriptedModel(ScriptedModel.tool_call("add", a=1, b=2), "3")
    agent = react_agent(model, [add], name="agent")
    await GraphRunner(layers=[seen]).run(busy, AgentContext("x"))
    await GraphRunner(layers=[seen]).run(agent, AgentContext("sum"))
    kinds = [kind for kind, _ in seen.seen]
    assert kinds == ["OnceEffect", "ModelCallEffect", "ToolCallsEffect", "ModelCallEffect"]


class _Memo(Layer):
    """Notes each memory call, and answers reads of `cached` without the store."""

    wants = frozenset({MemoryEffect})

    def __init__(self, *, performed: bool = False) -> None:
        self.seen: list[tuple[str, str, bool, str | None]] = []
        self.performed = performed  # type: ignore[misc]

    async def around(self, rt: Any, effect: Any, proceed: Any) -> Any:
        self.seen.append((effect.operation, effect.name, effect.write, effect.effect_id))
        return await proceed(rt, effect)


def _remembering(memory: Any) -> Any:
    @node
    async def remember(ctx: AgentContext[str], rt: Any) -> AgentContext[str]:
        mem = rt.memory(memory)
        await mem.put(("user", "1"), "name", {"text": ctx.input})
        item = await mem.get(("user", "1"), "name")
        return ctx.with_input(item.value["text"])

    return remember


async def test_memory_calls_are_effects_a_layer_sees_and_the_journal_records() -> None:
    from agentgraph.memory import InMemoryMemory

    memory = InMemoryMemory()
    above, below = _Memo(), _Memo(performed=True)
    runner = GraphRunner(layers=[above, below])
    store = MemoryStore()
    out = await runner.run(_remembering(memory), AgentContext("Ada"), store=store, run_id="m")
    assert out.input == "Ada"
    assert [(op, name, write) for op, name, write, _ in above.seen] == [
        ("put", "put user/1:name", True),
        ("get", "get user/1:name", False),
    ]
    # Below the journal each call carries its effect id (a write is applied once under it).
    assert [effect_id.split(":")[0] for *_, effect_id in below.seen] == ["m/1.1.1", "m/1.1.2"]
    assert [effect_id for *_, effect_id in above.seen] == [None, None]
    # A replay is served from the record: the layers above see the calls, those below do not.
    above.seen.clear()
    below.seen.clear()
    again = await runner.replay(_remembering(memory), "m", store)
    assert again.input == "Ada"
    assert [op for op, *_ in above.seen] == ["put", "get"] and below.seen == []


async def test_memory_calls_without_a_store_pass_the_layers_to_the_store() -> None:
    from agentgraph.memory import InMemoryMemory

    seen = _Memo()
    out = await GraphRunner(layers=[seen]).run(_remembering(InMemoryMemory()), AgentContext("Bo"))
    assert out.input == "Bo"
    assert [(op, effect_id) for op, _, _, effect_id in seen.seen] == [("put", None), ("get", None)]


def test_the_journal_protocol_has_what_the_runtime_asks_of_a_journal() -> None:
    # rt.patched, rt.thread_id, a thread turn's prelude and memory calls read these
    # members; a journal that makes effects elsewhere gets them from RemoteJournal.
    members = set(dir(Journal))
    assert {"patched", "thread_id", "prelude", "memory"} <= members | set(Journal.__annotations__)
    remote = _RemoteJournal(AgentContext("x"))
    assert remote.thread_id is None and remote.prelude is None and remote.patched("any")


async def test_a_remote_journal_refuses_memory_calls() -> None:
    from agentgraph._core._runner_checks import as_graph
    from agentgraph.memory import InMemoryMemory

    ctx = AgentContext("Cy")
    graph = as_graph(_remembering(InMemoryMemory()))
    with pytest.raises(NodeFailed) as failed:
        await GraphRunner()._drive(graph, ctx, None, None, "r", _RemoteJournal(ctx))
    assert isinstance(failed.value.error, UsageError)
    assert "cannot record them" in str(failed.value.error)


async def test_a_layer_sees_nested_graphs_fan_outs_team_agents_and_agent_tools() -> None:
    seen = Seen()
    runner = GraphRunner(layers=[seen])
    # A nested graph and a fan-out.
    inner = react_agent(ScriptedModel("in"), [], name="inner")
    both = parallel(
        chat(ScriptedModel("a"), name="left"),
        chat(ScriptedModel("b"), name="right"),
        merge=lambda ctx, outs: outs[0],
    )
    await runner.run(inner, AgentContext("x"))
    await runner.run(both, AgentContext("x"))
    # An agent used as a tool.
    sub = react_agent(ScriptedModel("Booked."), [], name="booker")
    outer = ScriptedModel(ScriptedModel.tool_call("booker", task="book"), "All set.")
    await runner.run(react_agent(outer, [agent_tool(sub)], name="caller"), AgentContext("go"))
    # A team of agents.
    boss = ScriptedModel(ScriptedModel.tool_call("transfer_to_math", task="2+2"), "It is 4.")
    team = supervisor(Agent("boss", boss), [Agent("math", ScriptedModel("4"))])
    await runner.run(team, AgentContext("what is 2+2?"))
    paths = [path for kind, path in seen.seen if kind == "ModelCallEffect"]
    assert any(p[-2:] == ("inner", "llm") or "inner" in p for p in paths)
    assert any("left" in p for p in paths) and any("right" in p for p in paths)
    assert any("booker" in p for p in paths) and any("caller" in p for p in paths)
    assert any("math" in p for p in paths) and any("boss" in p for p in paths)


async def test_the_stack_holds_only_what_the_runner_needs_in_the_documented_order() -> None:
    plain = GraphRunner()
    assert [type(layer) for layer in plain._stack(False, None).layers] == [LimitsLayer]

    class Gate:
        async def admit(self, provider: str, model: str, request: ChatRequest) -> None:
            return None

        def settle(self, *args: Any) -> None:
            return None

    @guard(stages=["input", "output", "tool", "result"], rewrites=False)
    def watch(stage: str, value: Any) -> Decision:
        return Decision.allow()

    mine, cache = Seen(), Cache()
    full = GraphRunner(
        guards=Guards(input=[watch], output=[watch], tools=[watch], results=[watch]),
        model_gate=Gate(),
        layers=[cache, mine],
    )
    order = [type(layer) for layer in full._stack(True, _journal(local=True)).layers]
    assert order == [
        AroundGuards,
        LimitsLayer,
        EventsLayer,
        BesideGuards,
        Seen,
        JournalLayer,
        ResultGuards,
        Cache,
        GateLayer,
    ]
    remote = [type(layer) for layer in full._stack(False, _journal(local=False)).layers]
    assert RemoteJournalLayer in remote and EventsLayer not in remote


def _journal(*, local: bool) -> Any:
    class Local:
        pass

    class Remote(RemoteJournal):
        pass

    return Local() if local else Remote()


class _RemoteJournal(RemoteJournal):
    """A journal that makes effects elsewhere, here by calling the model itself."""

    run_id = "remote"
    replaying = False
    resumed_at = None

    def __init__(self, initial: AgentContext[Any]) -> None:
        self.initial = initial
        self.recorded: list[ChatResponse] = []

    def enter(self, *args: Any) -> None:
        return None

    def new_attempt(self, rt: Any) -> None:
        return None

    def reenter(self, rt: Any, graph: Any) -> None:
        return None

    def commit(self, *args: Any) -> None:
        return None

    async def model(self, rt: Any, request: ChatRequest, call: Any) -> ChatResponse:
        response: ChatResponse = await call.model.request(call.request)
        return response

    def recorded_model(self, rt: Any, request: ChatRequest) -> tuple[str, None]:
        return "", None

    def record_model(self, rt: Any, key: str, request: Any, response: ChatResponse) -> None:
        self.recorded.append(response)

    async def value(self, rt: Any, name: str, call: Any) -> Any:
        return await call()

    async def finish(self) -> None:
        return None

    async def settle(self, stopped: Any = None) -> None:
        return None

    def close(self) -> None:
        return None


@pytest.mark.parametrize("beside", [False, True])
async def test_a_remote_journal_streams_one_recorded_answer_guarded_or_not(beside: bool) -> None:
    @guard(stages=["input"], rewrites=not beside)
    def watch(stage: str, value: Any) -> Decision:
        return Decision.allow()

    for guards in (None, Guards(input=[watch], beside=beside)):
        model = ScriptedModel("streamed answer")
        ctx = AgentContext("hi")
        journal = _RemoteJournal(ctx)
        events: list[object] = []
        runner = GraphRunner(guards=guards, sinks=[events.append])
        out = await runner._drive(_graph(model), ctx, None, None, "remote", journal)
        assert out.history[-1].content == "streamed answer"
        assert journal.recorded == []  # fetched remotely: recorded there, never here
        assert len(model.requests) == 1
        if guards is not None:
            assert [e for e in events if isinstance(e, GuardDecided)]


def _graph(model: ScriptedModel) -> Any:
    from agentgraph._core._runner_checks import as_graph

    return as_graph(chat(model, stream=True))


async def test_layers_must_be_layers() -> None:
    with pytest.raises(UsageError, match="layers="):
        GraphRunner(layers=[object()])
    with pytest.raises(UsageError, match="list of layers"):
        GraphRunner(layers=Seen())  # type: ignore[arg-type]


async def test_a_layer_that_overrides_nothing_costs_nothing() -> None:
    runner = GraphRunner(layers=[Layer()])
    stack = runner._stack(False, None)
    assert [type(layer) for layer in stack.layers] == [LimitsLayer, Layer]
    # Linked into no chain: the model's chain is the limits layer's link over the call.
    assert stack.model.__closure__ is not None
    linked = [cell.cell_contents for cell in stack.model.__closure__]
    assert all(not isinstance(getattr(c, "__self__", None), Layer) for c in linked)
    out = await runner.run(chat(ScriptedModel("ok")), AgentContext("x"))
    assert out.input.content == "ok"


def test_every_effect_kind_is_a_frozen_value() -> None:
    kinds: tuple[type[Any], ...] = (
        ModelCallEffect,
        ModelStreamEffect,
        ToolCallsEffect,
        EmbedEffect,
        MemoryEffect,
        OnceEffect,
        InterruptEffect,
    )
    assert all(attrs.has(kind) and kind.__attrs_attrs__ is not None for kind in kinds)
    effect: Effect = OnceEffect("clock", lambda: 1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        effect.name = "other"  # type: ignore[misc]


class _Gate:
    def __init__(self) -> None:
        self.admitted = 0
        self.settled: list[Any] = []

    async def admit(self, provider: str, model: str, request: ChatRequest) -> None:
        self.admitted += 1

    def settle(self, provider: str, model: str, request: Any, usage: Any, error: Any) -> None:
        self.settled.append((usage, error))


def _allow(stage: str, value: object) -> Decision:
    return Decision.allow()


_GUARDS = {
    "plain": None,
    "guard-before": Guards(input=[guard(_allow, stages=["input"])]),
    "guard-beside": Guards(input=[guard(_allow, stages=["input"], rewrites=False)]),
}


class _Performed(Seen):
    performed = True


@pytest.mark.parametrize("stream", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize("guards", _GUARDS, ids=list(_GUARDS))
@pytest.mark.parametrize("journaled", [False, True], ids=["plain", "journaled"])
@pytest.mark.parametrize("place", ["above", "performed"])
async def test_one_path_for_every_combination_of_layers(
    stream: bool, guards: str, journaled: bool, place: str
) -> None:
    gate, seen = _Gate(), Seen() if place == "above" else _Performed()
    model = ScriptedModel("hello there")
    runner = GraphRunner(model_gate=gate, guards=_GUARDS[guards], layers=[seen])
    store = MemoryStore() if journaled else None
    graph = chat(model, stream=stream)
    out = await runner.run(graph, AgentContext("hi"), store=store, run_id="r")
    kind = "ModelStreamEffect" if stream else "ModelCallEffect"
    assert out.input.content == "hello there"
    assert gate.admitted == 1 and gate.settled == [(out.usage, None)]
    assert [k for k, _ in seen.seen] == [kind]
    if store is not None:
        again = await runner.replay(graph, "r", store)
        assert again.input == out.input and len(model.requests) == 1 and gate.admitted == 1
        # A layer above the journal sees the served effect; one below it does not.
        assert len(seen.seen) == (2 if place == "above" else 1)
