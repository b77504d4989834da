"""score_runs over recorded runs: read from each checkpoint store, calling no model or tool."""

import pytest

from agentgraph import AgentContext, GraphRunner, NodeFailed, node
from agentgraph.checkpoint import Effect, MemoryStore
from agentgraph.evals import (
    MaxModelRequests,
    MaxSteps,
    RecordedRunError,
    ToolArguments,
    evaluate,
    read_runs,
    score_runs,
)
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel
from agentgraph.tracing import JsonlSink
from tests.checkpoint.conftest import store as store  # the three stores, as a fixture
from tests.evals.agents import EVALUATORS, agent, calculate, cases, reply

pytestmark = pytest.mark.anyio

ALL = [*EVALUATORS, MaxSteps(10), MaxModelRequests(3), ToolArguments("calculate", {"a": 2})]


async def test_scores_from_each_store_equal_the_live_scores(store):
    live = await evaluate(agent(), cases(), ALL, store=store, progress=False)
    runs = {r.run_id: c for r, c in zip(live.results, cases(), strict=True)}
    again = await score_runs(store, ALL, runs=runs, name=live.name)
    assert [(r.case, r.output, r.scores, r.usage) for r in again.results] == [
        (r.case, r.output, r.scores, r.usage) for r in live.results
    ]
    assert again.pass_at(1) == live.pass_at(1) == pytest.approx(1 / 3)  # add alone passes all


async def test_a_thousand_recorded_runs_are_scored_without_a_call():
    store = MemoryStore()
    model = ScriptedModel(reply, repeat=True, name="scripted")
    graph = react_agent(model, [calculate], max_turns=3)
    runner = GraphRunner()
    for i in range(1000):
        await runner.run(graph, AgentContext(f"What is {i} + 1?"), store=store)
    made = len(model.requests)
    assert made == 2000
    report = await score_runs(store, ALL)
    assert len(model.requests) == made  # the journal served everything: no call was made
    assert len(report.results) == 1000
    assert all(r.score("trajectory").value is True for r in report.results)
    assert all(r.score("max_model_requests").passed for r in report.results)
    assert report.usage.requests == 2000  # the runs' own usage, as recorded
    assert sum(r.score("tool_arguments").passed for r in report.results) == 1  # a=2 once


async def test_unknown_empty_and_damaged_runs_are_refused_by_name():
    store = MemoryStore()
    with pytest.raises(RecordedRunError, match=r"'nope'.*no such run") as caught:
        await score_runs(store, [], runs=["nope"], fail_fast=True)
    assert caught.value.run_id == "nope"

    live = await evaluate(agent(), cases()[:1], store=store, progress=False)
    run_id = live.results[0].run_id
    store._runs["empty"] = store._runs[run_id].__class__(
        "empty", "react_agent", b"{}", store._runs[run_id].context, 0.0
    )
    store._steps["empty"], store._effects["empty"] = [], {}
    with pytest.raises(RecordedRunError, match=r"'empty'.*no committed step"):
        await score_runs(store, [], runs=["empty"], fail_fast=True)

    key = next(iter(store._effects[run_id]))
    store._effects[run_id][key] = Effect(run_id, key[0], key[1], b"not json")
    with pytest.raises(RecordedRunError, match=f"{run_id!r}.*damaged") as caught:
        await read_runs(store, [run_id])
    assert caught.value.run_id == run_id


@node
async def broken(ctx: AgentContext[str]) -> AgentContext[str]:
    raise RuntimeError("the service was down")


async def test_a_run_that_cannot_be_read_is_an_errored_case_and_the_others_are_scored():
    store = MemoryStore()
    live = await evaluate(agent(), cases(), ALL, store=store, progress=False)
    with pytest.raises(NodeFailed):  # stops before its first step: nothing committed
        await GraphRunner().run(broken, AgentContext("q"), store=store, run_id="stopped")
    report = await score_runs(store, ALL)
    assert report.results[-1].run_id == "stopped"  # the store lists its runs oldest first
    scored = {r.run_id: r.score("trajectory") for r in report.results[:-1]}
    assert scored == {r.run_id: r.score("trajectory") for r in live.results}
    stopped = report.results[-1]
    assert stopped.case == "stopped" and stopped.scores == () and not stopped.passed
    assert stopped.error.startswith("RecordedRunError: recorded run 'stopped' cannot be read")
    assert "stopped before its first step" in stopped.error
    missing = await score_runs(store, ALL, runs={"nope": cases()[0]})
    assert missing.results[0].case == cases()[0].name and "no such run" in missing.results[0].error
    with pytest.raises(RecordedRunError, match="'stopped'"):
        await score_runs(store, ALL, fail_fast=True)


async def test_an_unfinished_run_is_an_error_result_and_not_scored():
    store = MemoryStore()
    live = await evaluate(agent(), cases()[:1], store=store, progress=False)
    run_id = live.results[0].run_id
    store._steps[run_id] = store._steps[run_id][:2]
    report = await score_runs(store, ALL, runs=[run_id])
    (result,) = report.results
    assert result.error.startswith("Unfinished: the record ends after step 2")
    assert result.scores == () and not result.passed


async def test_scores_from_a_trace_file_match_and_say_values_are_masked(tmp_path):
    path = tmp_path / "runs.jsonl"
    with JsonlSink(path) as sink:
        live = await evaluate(
            agent(), cases(), ALL, runner=GraphRunner(sinks=[sink]), progress=False
        )
    runs = {r.run_id: c for r, c in zip(live.results, cases(), strict=True)}
    again = await score_runs(path, ALL, runs=runs, name=live.name)
    assert [(r.output, r.scores) for r in again.results] == [
        (r.output, r.scores) for r in live.results
    ]
    secret = "sk-proj-abcdefghijklmnopqrstuvwx0123456789"
    graph = react_agent(ScriptedModel(f"the key is {secret}"), [], max_turns=1)
    with JsonlSink(tmp_path / "secret.jsonl") as sink:
        await GraphRunner(sinks=[sink]).run(graph, AgentContext("key?"))
    (masked,) = (await score_runs(tmp_path / "secret.jsonl", [])).results
    assert secret not in masked.output and "***" in masked.output
