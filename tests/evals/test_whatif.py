"""What-if replays: the recorded prefix from the journal, the rest live with the change."""

import re
from html.parser import HTMLParser

import pytest

from agentgraph import AgentContext, GraphRunner, ReplayDiverged
from agentgraph.checkpoint import MemoryStore
from agentgraph.evals import (
    Case,
    EqualsExpected,
    RecordedRunError,
    Trajectory,
    Variant,
    compare,
    report_to_html,
    what_if,
)
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel
from agentgraph.tracing import TraceRecorder
from tests.evals.agents import calculate, reply

pytestmark = pytest.mark.anyio

EVALUATORS = [EqualsExpected(), Trajectory(["calculate"], order="exact")]


def divides(request):
    """The new model: uses the tool for divisions too."""
    last = request.messages[-1]
    found = re.fullmatch(r"What is (\d+) / (\d+)\?", last.content or "")
    if last.role == "user" and found:
        return ScriptedModel.tool_call("calculate", op="div", a=int(found[1]), b=int(found[2]))
    return reply(request)


async def recorded(store, count):
    model = ScriptedModel(reply, repeat=True, name="old")
    graph = react_agent(model, [calculate], max_turns=3)
    runs = {}
    for i in range(count):
        op = "/" if i % 2 else "+"
        a, b = 2 * i + 2, 2
        expected = f"The answer is {a / b:g}." if op == "/" else f"The answer is {a + b}."
        run_id = f"run-{i}"
        await GraphRunner().run(
            graph, AgentContext(f"What is {a} {op} {b}?"), store=store, run_id=run_id
        )
        runs[run_id] = Case(f"c{i}", f"What is {a} {op} {b}?", expected=expected)
    return model, runs


async def test_swapping_the_model_calls_the_new_one_only_after_the_fork_point():
    store = MemoryStore()
    old, runs = await recorded(store, 50)
    before = len(old.requests)
    new = ScriptedModel(divides, repeat=True, name="new")
    report = await what_if(
        store, runs, Variant(react_agent(new, [calculate], max_turns=3), at=1), EVALUATORS
    )

    assert len(old.requests) == before  # the prefix came from the journal
    # Every request the new model saw was made after step 1: the user turn is all it shares.
    assert len(new.requests) == 50 * 2  # each run: a tool call, then the answer
    assert report.live_usage.requests == 100
    assert len(report.cases) == 50
    divisions = [c for c in report.cases if int(c.case[1:]) % 2]
    assert all(c.diverged_at == 2 for c in divisions)  # the first chat answers differently
    for sums in (c for c in report.cases if c not in divisions):
        # The same answers; the new model numbers its tool calls its own way, which the
        # contexts show from step 2 on.
        assert sums.changed.output == sums.recorded.output
        assert sums.changed.scores == sums.recorded.scores
    assert all(not c.recorded.passed and c.changed.passed for c in divisions)
    comparison = compare(report)
    assert [c.case for c in comparison.of("better") if c.score == "passed"] == [
        c.case for c in divisions
    ]
    assert comparison.of("worse") == ()
    assert report.before.pass_at(1) == 0.5 and report.after.pass_at(1) == 1.0


async def test_a_fork_later_in_the_run_serves_more_steps_from_the_journal():
    store = MemoryStore()
    _, runs = await recorded(store, 2)
    new = ScriptedModel(divides, repeat=True, name="new")
    report = await what_if(
        store, runs, Variant(react_agent(new, [calculate], max_turns=3), at=3), EVALUATORS
    )
    # Run 0 (a sum) shares steps 1-3 (user turn, chat, tools): one live model request.
    # Run 1 (a division) ended at step 3 (answer): forked there, nothing is left to run.
    assert len(new.requests) == 1
    assert [c.forked_at for c in report.cases] == [3, 3]


async def test_a_changed_prompt_at_the_fork_is_measured_on_the_same_history():
    store = MemoryStore()
    _, runs = await recorded(store, 1)
    graph = react_agent(ScriptedModel(reply, repeat=True, name="old"), [calculate], max_turns=3)
    change = Variant(
        graph, at=1, context=lambda ctx: ctx.evolve(system_prompt="Be brief."), name="brief"
    )
    report = await what_if(store, runs, change, EVALUATORS)
    (pair,) = report.cases
    assert pair.diverged_at == 1  # the context at the fork point itself changed
    assert pair.changed.output == pair.recorded.output


async def test_a_change_that_alters_the_recorded_prefix_is_replay_diverged_naming_the_step():
    store = MemoryStore()
    _, runs = await recorded(store, 1)
    prompted = react_agent(
        ScriptedModel(reply, repeat=True), [calculate], max_turns=3, system_prompt="Other."
    )
    with pytest.raises(ReplayDiverged) as caught:
        await what_if(store, runs, Variant(prompted, at=3), EVALUATORS)
    assert caught.value.step in (1, 2)
    assert "run-0" in "".join(caught.value.__notes__)

    other = react_agent(ScriptedModel(reply, repeat=True), [calculate], max_turns=3, name="other")
    with pytest.raises(ReplayDiverged, match="step 1"):
        await what_if(store, runs, Variant(other, at=2), EVALUATORS)


async def test_the_runner_s_sinks_and_callbacks_see_the_new_run_only():
    store = MemoryStore()
    _, runs = await recorded(store, 1)
    graph = react_agent(ScriptedModel(reply, repeat=True), [calculate], max_turns=3)
    recorder, steps = TraceRecorder(), []
    runner = GraphRunner(sinks=[recorder], on_step=lambda step, node, ctx: steps.append(step.index))
    report = await what_if(store, runs, Variant(graph, at=3), runner=runner)
    (pair,) = report.cases
    assert pair.changed.error is None
    # The check of the recorded prefix is not a run of theirs: no event of the recorded run.
    assert [r.get("run") for r in recorder.records if r.get("run") == "run-0"] == []
    started = [r["run"] for r in recorder.records if r["event"] == "run_started"]
    finished = [r for r in recorder.records if r["event"] == "run_finished"]
    assert len(started) == 1 and started[0] != "run-0"
    assert [r.get("error") for r in finished] == [None]
    assert steps == [4, 5]  # the steps run after the fork point, none of the prefix


async def test_bad_runs_and_fork_points_are_refused_by_name():
    store = MemoryStore()
    _, runs = await recorded(store, 1)
    graph = react_agent(ScriptedModel(reply, repeat=True), [calculate], max_turns=3)
    with pytest.raises(RecordedRunError, match="'missing'"):
        await what_if(store, ["missing"], Variant(graph), EVALUATORS)
    with pytest.raises(RecordedRunError, match=r"no committed step 9 .*1, 2, 3, 4, 5"):
        await what_if(store, runs, Variant(graph, at=9), EVALUATORS)


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.text = [], []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.links.append(dict(attrs)["href"])

    def handle_data(self, data):
        self.text.append(data)


async def test_the_html_report_escapes_masks_and_links_each_run_to_its_trace():
    store = MemoryStore()
    secret = "sk-proj-abcdefghijklmnopqrstuvwx0123456789"
    model = ScriptedModel(f"<b>key</b> {secret}", repeat=True)
    graph = react_agent(model, [], max_turns=1)
    await GraphRunner().run(graph, AgentContext("hi <script>"), store=store, run_id="r1")
    report = await what_if(store, {"r1": Case("<i>case</i>", "hi")}, Variant(graph), [])
    html = report_to_html(report, trace_link="traces/{run_id}.html")
    assert (
        secret not in html
        and "<script>" not in html.split("<style>")[0] + html.split("</style>")[1]
    )
    assert "&lt;i&gt;case&lt;/i&gt;" in html
    page = _Text()
    page.feed(html)
    assert "traces/r1.html" in page.links
    assert any(link.startswith("traces/") and link != "traces/r1.html" for link in page.links)
    assert "recorded" in "".join(page.text) and "changed" in "".join(page.text)
    plain = report_to_html(report.after, trace_link=None)
    assert "<a " not in plain and "***" in plain
