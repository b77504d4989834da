"""Replay from the record (no model, no tools), divergence diffs, forks, and `Recording`."""

from collections import Counter

import pytest

from agentgraph import (
    AgentContext,
    CheckpointError,
    GraphBuilder,
    GraphRunner,
    Interrupted,
    Message,
    ReplayDiverged,
    RunHandle,
    Settings,
    node,
    tool,
)
from agentgraph.checkpoint import decode_contexts, fork
from agentgraph.nodes import react_agent
from agentgraph.testing import Recording, ScriptedModel
from tests.checkpoint.support import Tally, chain

pytestmark = pytest.mark.anyio


class Weather:
    def __init__(self):
        self.calls = Counter()

        @tool
        def forecast(city: str) -> str:
            """Tomorrow's weather in a city."""
            self.calls[city] += 1
            return f"{city}: rain"

        self.forecast = forecast


def weather_model():
    return ScriptedModel(
        ScriptedModel.tool_calls(("forecast", {"city": "Oslo"}), ("forecast", {"city": "Bergen"})),
        "Rain in both.",
    )


async def recorded_agent(store, *, prompt="You forecast."):
    weather = Weather()
    agent = react_agent(weather_model(), [weather.forecast], system_prompt=prompt)
    handle = RunHandle()
    out = await GraphRunner().run(
        agent, AgentContext("Oslo and Bergen?"), store=store, handle=handle
    )
    return handle.run_id, out, weather


async def test_a_replay_serves_models_and_tools_from_the_record(store):
    run_id, out, _ = await recorded_agent(store)
    weather = Weather()
    silent = ScriptedModel()  # an empty script: any call would raise
    agent = react_agent(silent, [weather.forecast], system_prompt="You forecast.")
    contexts = []
    runner = GraphRunner(on_step=lambda info, node, ctx: contexts.append(ctx))
    replayed = await runner.replay(agent, run_id, store)
    assert replayed == out
    assert silent.requests == () and weather.calls == Counter()
    # Every committed context came out as recorded, step for step.
    recorded = decode_contexts(await store.load(run_id))[1:]
    assert len(recorded) == 5 and contexts == recorded


async def test_a_changed_request_diverges_with_a_readable_diff(store):
    run_id, _, _ = await recorded_agent(store)
    weather = Weather()
    agent = react_agent(
        ScriptedModel(),
        [weather.forecast],
        system_prompt="You forecast.",
        settings=Settings(temperature=0.2),
    )
    with pytest.raises(ReplayDiverged) as info:
        await GraphRunner().replay(agent, run_id, store)
    error = info.value
    assert error.what == "the model request differs from the recorded one"
    assert error.path == ("react_agent", "chat") and error.step == 2
    assert '-  "temperature": null,' in error.diff
    assert '+  "temperature": 0.2,' in error.diff
    assert error.diff.startswith("--- recorded request\n+++ replayed request")
    assert error.diff in str(error)


async def test_a_node_that_now_computes_something_else_diverges_on_its_context(store):
    tally = Tally()
    handle = RunHandle()
    await GraphRunner().run(tally.three_levels(), AgentContext(0), store=store, handle=handle)
    other = Tally()
    c = chain("c", other.adder("c1"), other.adder("c2", 5), other.adder("c3"))
    graph = chain("a", other.adder("a1"), chain("b", other.adder("b1"), c, other.adder("b2")))
    with pytest.raises(ReplayDiverged) as info:
        await GraphRunner().replay(graph, handle.run_id, store)
    assert info.value.what == "the context differs from the recorded one"
    assert info.value.path == ("a", "b", "c", "c2")
    assert '-  "input": 4,' in info.value.diff and '+  "input": 8,' in info.value.diff


async def test_a_replay_that_routes_elsewhere_or_stops_early_diverges(store):
    tally = Tally()
    handle = RunHandle()
    await GraphRunner().run(tally.three_levels(), AgentContext(0), store=store, handle=handle)
    other = Tally()
    c = chain("c", other.adder("c1"), other.adder("c2"), other.adder("c3"))
    shorter = chain("a", other.adder("a1"), chain("b", other.adder("b1"), c, other.adder("b2")))
    with pytest.raises(ReplayDiverged, match="went to 'a2'; the replay ran step 2 a/b"):
        await GraphRunner().replay(shorter, handle.run_id, store)


async def test_replaying_an_interrupted_run_stops_at_the_same_question(store):
    @node
    async def ask(ctx, rt):
        return ctx.with_input(await rt.interrupt("ok?"))

    graph = chain("g", ask)
    with pytest.raises(Interrupted) as info:
        await GraphRunner().run(graph, AgentContext(None), store=store)
    with pytest.raises(Interrupted) as again:
        await GraphRunner().replay(graph, info.value.run_id, store)
    assert again.value.question == "ok?"
    await GraphRunner().resume(graph, info.value.run_id, store, answer="fine")
    assert (await GraphRunner().replay(graph, info.value.run_id, store)).input == "fine"


async def test_a_fork_from_a_middle_step_goes_on_with_an_edited_context(store):
    run_id, out, weather = await recorded_agent(store)
    log = await store.load(run_id)
    tools_step = next(r for r in log.steps if r.node == "tools")
    contexts = decode_contexts(log)
    at_tools = contexts[log.steps.index(tools_step) + 1]
    # Edit what the tools returned, then let the model answer from the edited results.
    edited = at_tools.evolve(
        history=[*list(at_tools.history)[:-2], Message.tool("call_1", "Oslo: sun", name="forecast"),
                 Message.tool("call_2", "Bergen: sun", name="forecast")]
    )  # fmt: skip
    forked = await fork(store, run_id, tools_step.step, context=edited)
    assert forked != run_id
    model = ScriptedModel("Sun in both.")
    agent = react_agent(model, [weather.forecast], system_prompt="You forecast.")
    result = await GraphRunner().resume(agent, forked, store)
    assert result.input == "Sun in both."
    assert [m.content for m in model.requests[0].messages[-2:]] == ["Oslo: sun", "Bergen: sun"]
    assert weather.calls == Counter({"Oslo": 1, "Bergen": 1})  # the fork ran no tool
    # The original run is untouched, and the fork replays from where it was forked.
    assert decode_contexts(await store.load(run_id))[-1] == out
    silent = react_agent(ScriptedModel(), [Weather().forecast], system_prompt="You forecast.")
    assert await GraphRunner().replay(silent, forked, store) == result
    info = (await store.load(forked)).run
    assert (info.parent, info.parent_step) == (run_id, tools_step.step)


async def test_a_fork_without_edits_reuses_the_record_and_refuses_unknown_steps(store):
    run_id, out, weather = await recorded_agent(store)
    log = await store.load(run_id)
    chat_step = log.steps[1].step  # the first chat step
    forked = await store.fork(run_id, chat_step)
    # The copy goes on after the first model call: the model is asked once more.
    agent = react_agent(
        ScriptedModel("Rain in both."), [weather.forecast], system_prompt="You forecast."
    )
    assert await GraphRunner().resume(agent, forked, store) == out
    assert weather.calls == Counter({"Oslo": 2, "Bergen": 2})  # the tools ran again in the copy
    with pytest.raises(CheckpointError, match=r"step 99 of run .* was never committed"):
        await fork(store, run_id, 99)
    with pytest.raises(CheckpointError, match="no run 'nope'"):
        await fork(store, "nope", 1)


async def test_recording_records_once_then_replays_from_the_file(tmp_path):
    path = tmp_path / "recordings" / "weather.jsonl"
    recording = Recording(path)
    assert not recording.recorded
    weather = Weather()
    agent = react_agent(weather_model(), [weather.forecast])
    first = await recording.run(GraphRunner(), agent, AgentContext("Oslo and Bergen?"))
    assert recording.recorded and first.input == "Rain in both."

    silent = ScriptedModel()
    replayed = Weather()
    agent = react_agent(silent, [replayed.forecast])
    again = await Recording(path).run(GraphRunner(), agent, AgentContext("Oslo and Bergen?"))
    assert again == first and silent.requests == () and replayed.calls == Counter()

    with pytest.raises(ReplayDiverged, match="started from another context") as info:
        await Recording(path, mode="replay").run(GraphRunner(), agent, AgentContext("Paris?"))
    assert '-  "input": "Oslo and Bergen?",' in info.value.diff
    with pytest.raises(ValueError, match="mode"):
        Recording(path, mode="sometimes")


async def test_recording_again_replaces_the_file(tmp_path):
    path = tmp_path / "run.jsonl"
    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(Tally().adder("x")).edge_to(g.finish)
    graph = g.build()
    await Recording(path).run(GraphRunner(), graph, AgentContext(1))
    out = await Recording(path, mode="record").run(GraphRunner(), graph, AgentContext(5))
    assert out.input == 6
    assert decode_contexts(Recording(path).load())[0].input == 5
