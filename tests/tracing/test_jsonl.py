"""The JSON-lines sink and `load_trace`: files that `jq` reads and that rebuild the step tree."""

import io
import json
import os
import shutil
import subprocess
import threading

import anyio
import orjson
import pytest

from agentgraph import AgentContext, GraphRunner, NodeFailed, parallel
from agentgraph.tracing import JsonlSink, TraceFormatError, TraceRecorder, load_trace, load_traces

from .support import FAILED_RUN, FAKE_KEY, Waits, kinds, mask_emails, nested_graph, scripted_agent
from .support import secret_context as secret_ctx

pytestmark = pytest.mark.anyio


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_failed_nested_run_is_one_line_per_event_and_loads_as_a_tree(tmp_path):
    path = tmp_path / "run.jsonl"
    waits = Waits()
    with JsonlSink(path) as sink, pytest.raises(NodeFailed):
        await GraphRunner(sinks=[sink]).run(nested_graph(fail=True, waits=waits), AgentContext(1))
    assert waits == [0.25]
    assert kinds(lines(path)) == FAILED_RUN

    trace = load_trace(path)
    assert (trace.graph, trace.status, trace.step_count, trace.input) == ("outer", "failed", 8, 1)
    assert trace.error["type"] == "NodeFailed" and trace.duration > 0
    prepare, inner = trace.steps
    assert (prepare.name, prepare.status, prepare.output, prepare.depth) == ("prepare", "ok", 2, 0)
    assert (inner.kind, inner.status, inner.error["cause"]["type"]) == (
        "graph",
        "failed",
        "ValueError",
    )
    names = [(s.name, s.status, s.attempts) for s in inner.children]
    assert names == [("flaky", "ok", 2)] + [("double", "ok", 1)] * 4 + [("check", "failed", 1)]
    flaky = inner.children[0]
    assert [(r.attempt, r.wait, r.error["type"]) for r in flaky.retries] == [
        (1, 0.25, "TimeoutError")
    ]
    # The recorder stamps events as they arrive while the runner times the step
    # itself, so the two clocks may disagree by the cost of delivering an event.
    assert flaky.start <= flaky.retries[0].at <= flaky.start + flaky.duration + 0.05
    assert [s.index for s in trace.walk()] == list(range(1, 9))
    assert trace.step(8).error == {"type": "ValueError", "message": "32 is too big"}
    assert [(r.path, r.source, r.target) for r in trace.routes][-2:] == [
        (("outer", "inner"), "double", "double"),
        (("outer", "inner"), "double", "check"),
    ]
    with pytest.raises(KeyError):
        trace.step(99)


async def test_an_agent_trace_holds_model_and_tool_calls_with_secrets_masked(tmp_path):
    path = tmp_path / "agent.jsonl"
    agent, _ = scripted_agent()
    with JsonlSink(path, redact=mask_emails) as sink:
        await GraphRunner(sinks=[sink]).run(agent, secret_ctx("what is 2 + 3?"))
    raw = path.read_text()
    assert FAKE_KEY not in raw and "ann@example.com" not in raw
    trace = load_trace(path)
    assert trace.ok and trace.output == "2 + 3 = 5; write to <email>"
    chat, tools = trace.steps[1], trace.steps[2]
    (call,) = chat.model_calls
    assert call.model == "scripted-model" and call.latency is not None
    assert (
        call.input_tokens > 0 and call.output_tokens > 0 and chat.input_tokens == call.input_tokens
    )
    assert call.response["message"]["tool_calls"][0]["name"] == "add"
    assert [(t.name, t.is_error, t.result[:9]) for t in tools.tool_calls] == [
        ("add", False, "5"),
        ("lookup", True, 'tool "loo'),
    ]
    assert tools.tool_calls[0].arguments == {"a": 2, "b": 3} and tools.tool_calls[0].id
    assert trace.usage["input_tokens"] == sum(s.input_tokens for s in trace.walk())


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
async def test_jq_reads_the_file(tmp_path):
    path = tmp_path / "run.jsonl"
    with JsonlSink(path) as sink:
        await GraphRunner(sinks=[sink]).run(nested_graph(), AgentContext(1))
    out = subprocess.run(
        ["jq", "-r", 'select(.event == "node_finished") | .node'],
        input=path.read_bytes(),
        capture_output=True,
        check=True,
    )
    assert out.stdout.decode().split() == ["prepare", "flaky"] + ["double"] * 4 + ["check", "inner"]


async def test_each_step_reaches_the_file_while_the_run_goes_on(tmp_path):
    path = tmp_path / "live.jsonl"
    seen = []

    from agentgraph import GraphBuilder, node

    @node
    async def peek(ctx):
        # The writer thread puts the step's start on disk without the loop waiting for it.
        with anyio.move_on_after(10):
            while "node_started" not in kinds(lines(path)):
                await anyio.sleep(0.01)
        seen.append(kinds(lines(path)))
        return ctx

    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(peek).edge_to(g.finish)
    with JsonlSink(path) as sink:
        await GraphRunner(sinks=[sink]).run(g.build(), AgentContext(0))
        # The run's end waits for its last lines: the file is whole when run() returns.
        assert kinds(lines(path))[-1] == "run_finished"
    assert seen == [["run_started", "route_chosen", "node_started"]]


async def test_runs_in_one_file_and_concurrent_runs_in_one_sink_stay_apart(tmp_path):
    path = tmp_path / "many.jsonl"
    sink = JsonlSink(path)
    runner = GraphRunner(sinks=[sink])
    await runner.run(nested_graph(), AgentContext(1))
    async with anyio.create_task_group() as tg:
        for start in (1, 2, 3):
            tg.start_soon(runner.run, nested_graph(), AgentContext(start))
    sink.close()
    traces = load_traces(path)
    assert len(traces) == 4 and len({t.run for t in traces}) == 4
    assert sorted(t.output for t in traces) == [24, 32, 32, 32]
    assert sorted(t.input for t in traces) == [1, 1, 2, 3]
    assert all(t.ok and t.step_count == len(list(t.walk())) for t in traces)
    assert [t.step_count for t in traces if t.input == 2] == [7]
    assert load_trace(path).run == traces[-1].run
    assert load_trace(path, run=traces[0].run).output == 32
    with pytest.raises(TraceFormatError, match="no run 'nope'"):
        load_trace(path, run="nope")


async def test_parallel_branches_nest_under_their_combinator(tmp_path):
    from agentgraph import GraphBuilder, node

    @node
    async def left(ctx):
        await anyio.sleep(0)
        return ctx.with_input(ctx.input + 1)

    @node
    async def right(ctx):
        await anyio.sleep(0)
        return ctx.with_input(ctx.input * 10)

    both = parallel(left, right, merge=lambda ctx, outs: ctx.with_input([o.input for o in outs]))
    with GraphBuilder[int, list]("fan") as g:
        g.start.edge_to(both).edge_to(g.finish)
    recorder = TraceRecorder()
    await GraphRunner(sinks=[recorder]).run(g.build(), AgentContext(2))
    (step,) = recorder.trace().steps
    assert step.kind == "composite" and step.output == [3, 20]
    assert sorted(c.name for c in step.children) == ["left", "right"]


async def test_branches_running_one_subgraph_keep_their_own_steps(tmp_path):
    from agentgraph import GraphBuilder, map_each, node

    @node(name="a")
    async def a(ctx):
        await anyio.sleep(0.01 * ctx.input)  # the second branch's first step ends last
        return ctx.with_input(ctx.input + 100)

    @node(name="c")
    async def c(ctx):
        return ctx.with_input(ctx.input + 1000)

    with GraphBuilder[int, int]("inner") as inner:
        inner.start.edge_to(a).edge_to(c).edge_to(inner.finish)
    each = map_each(inner.build(), items=lambda ctx: [1, 2], name="each")
    with GraphBuilder[int, list]("outer") as g:
        g.start.edge_to(each).edge_to(g.finish)
    path = tmp_path / "t.jsonl"
    with JsonlSink(path) as sink:
        await GraphRunner(sinks=[sink]).run(g.build(), AgentContext(0))
    started = [r for r in lines(path) if r["event"] == "node_started"]
    assert started[0]["parent"] == 0 and all(r["parent"] < r["index"] for r in started)

    (step,) = load_trace(path).steps
    branches = [(b.input, [(s.name, s.input, s.output) for s in b.children]) for b in step.children]
    # trio starts branches in random order; each branch must hold its own steps
    assert sorted(branches) == [
        (1, [("a", 1, 101), ("c", 101, 1101)]),
        (2, [("a", 2, 102), ("c", 102, 1102)]),
    ]

    # records written before steps named their parent are still placed by path
    for record in started:
        del record["parent"]
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in started))
    (old,) = load_trace(path).steps
    assert [b.name for b in old.children] == ["inner", "inner"]


def test_a_line_cut_short_at_the_end_is_ignored_but_bad_lines_are_errors(tmp_path):
    good = orjson.dumps(
        {"event": "run_started", "run": "r", "time": 1.0, "elapsed": 0.0, "graph": "g"}
    )
    path = tmp_path / "t.jsonl"
    path.write_bytes(good + b'\n{"event": "node_sta')
    assert load_trace(path).graph == "g"

    cases = {
        b"not json\n" + good: "line 1: not JSON",
        good + b"\n[1, 2]\n": "line 2: not a trace record",
        good + b'\n{"event": "node_started", "run": "r"}\n': "line 2: malformed 'node_started'",
        good + b'\n{"event": "node_started", "run": "r", "path": 5, "index": 1, "elapsed": 0}\n': (
            "line 2: malformed"
        ),
        b"": "holds no run",
    }
    for content, message in cases.items():
        path.write_bytes(content)
        with pytest.raises(TraceFormatError, match=message):
            load_trace(path)
    with pytest.raises(TraceFormatError, match=r"missing\.jsonl"):
        load_trace(tmp_path / "missing.jsonl")


def test_unknown_record_kinds_are_kept_but_ignored(tmp_path):
    path = tmp_path / "t.jsonl"
    records = [
        {"event": "run_started", "run": "r", "time": 1.0, "elapsed": 0.0, "graph": "g"},
        {"event": "from_the_future", "run": "r", "time": 1.0, "elapsed": 0.1},
    ]
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in records))
    trace = load_trace(path)
    assert trace.status == "running" and [r["event"] for r in trace.records] == [
        "run_started",
        "from_the_future",
    ]


def test_a_path_that_cannot_be_written_fails_at_once(tmp_path):
    with pytest.raises(FileNotFoundError):
        JsonlSink(tmp_path / "no" / "such" / "dir.jsonl")


async def test_append_keeps_earlier_runs(tmp_path):
    path = tmp_path / "t.jsonl"
    for _ in range(2):
        with JsonlSink(path, append=True) as sink:
            await GraphRunner(sinks=[sink]).run(nested_graph(), AgentContext(1))
    assert len(load_traces(path)) == 2
    with JsonlSink(path) as sink:  # without append the file starts over
        await GraphRunner(sinks=[sink]).run(nested_graph(), AgentContext(1))
    assert len(load_traces(path)) == 1


async def test_structured_output_attempts_are_in_the_trace(tmp_path):
    import attrs

    from agentgraph import GraphBuilder, generate
    from agentgraph.testing import ScriptedModel
    from agentgraph.tracing import render_trace

    @attrs.frozen
    class Point:
        x: int
        y: int

    model = ScriptedModel('{"x": 1}', '{"x": 1, "y": 2}', name="m")
    point = generate(Point, instruction="Give a point.", model=model, attempts=2, stream=True)
    with GraphBuilder[str, Point]("g") as g:
        g.start.edge_to(point).edge_to(g.finish)
    path = tmp_path / "t.jsonl"
    with JsonlSink(path) as sink:
        out = await GraphRunner(sinks=[sink]).run(g.build(), AgentContext("go"))
    assert out.input == Point(1, 2)
    records = lines(path)
    partials = [r for r in records if r["event"] == "partial_output"]
    assert partials and {r["attempt"] for r in partials} == {1, 2} and partials[-1]["complete"]
    assert set(partials[-1]) >= {"chars", "index", "path"} and "partial" not in partials[-1]
    (step,) = load_trace(path).steps
    (output,) = step.outputs
    assert output["ok"] and output["value"] == {"x": 1, "y": 2}
    assert [a["ok"] for a in output["attempts"]] == [False, True]
    assert output["attempts"][0]["raw"] == '{"x": 1}' and output["attempts"][0]["errors"]
    assert len(step.model_calls) == 2
    shown = io.StringIO()
    render_trace(load_trace(path), shown, style="plain")
    assert "▣ output Point · 2 attempts · valid" in shown.getvalue()


def _steady(records):
    """Records without what changes from run to run (clock readings, ids)."""
    volatile = {"time", "elapsed", "duration", "latency", "run"}

    def clean(value):
        if isinstance(value, dict):
            return {k: "~" if k in volatile else clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return [clean(r) for r in records]


async def test_the_file_holds_the_records_the_recorder_makes(tmp_path):
    # The writer thread builds the file's records; the recorder builds them as events
    # arrive. Tools, usage, a failed tool, secrets and a hook: the same records.
    path = tmp_path / "agent.jsonl"
    agent, _ = scripted_agent()
    recorder = TraceRecorder(redact=mask_emails)
    with JsonlSink(path, redact=mask_emails) as sink:
        await GraphRunner(sinks=[sink, recorder]).run(agent, secret_ctx("what is 2 + 3?"))
        await GraphRunner(sinks=[recorder, sink]).run(nested_graph(), AgentContext(1))
    written = lines(path)
    assert _steady(written) == _steady(recorder.records)
    assert [r["run"] for r in written] == [r["run"] for r in recorder.records]
    assert FAKE_KEY not in path.read_text() and "ann@example.com" not in path.read_text()
    assert {"tool_finished", "model_responded"} <= set(kinds(written))
    usage = [r["usage"] for r in written if r["event"] == "node_finished"]
    assert usage[0]["input_tokens"] == 0 and usage[-1]["input_tokens"] == 0
    assert max(u["input_tokens"] for u in usage) > 0


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
async def test_a_file_that_cannot_be_written_detaches_the_sink_or_ends_the_run(caplog):
    everything, seen = [], []
    await GraphRunner(sinks=[everything.append]).run(nested_graph(), AgentContext(1))
    with JsonlSink("/dev/full") as sink:
        out = await GraphRunner(sinks=[sink, seen.append]).run(nested_graph(), AgentContext(1))
        assert out.input == 32 and [type(e) for e in seen] == [type(e) for e in everything]
        (error,) = [r.getMessage() for r in caplog.records if "detached" in r.getMessage()]
        assert "No space left" in error

        runner = GraphRunner(sinks=[sink], sink_errors="raise")
        with pytest.raises(OSError, match="No space left"):
            await runner.run(nested_graph(), AgentContext(1))


async def test_the_writer_thread_ends_when_the_sink_goes_idle(tmp_path, monkeypatch):
    from agentgraph._util import _writers

    monkeypatch.setattr(_writers, "IDLE", 0.01)
    sink = JsonlSink(tmp_path / "t.jsonl")
    for start in (1, 2):
        await GraphRunner(sinks=[sink]).run(nested_graph(), AgentContext(start))
    assert [t.input for t in load_traces(tmp_path / "t.jsonl")] == [1, 2]
    with anyio.fail_after(10):
        while any(t.name == "agentgraph-writer" for t in threading.enumerate()):
            await anyio.sleep(0.01)
    await GraphRunner(sinks=[sink]).run(nested_graph(), AgentContext(3))  # starts one again
    assert [t.input for t in load_traces(tmp_path / "t.jsonl")] == [1, 2, 3]


async def test_a_sink_that_does_not_wait_ends_the_run_at_once_and_writes_the_same_lines(
    tmp_path,
):
    waited, unwaited = tmp_path / "waited.jsonl", tmp_path / "unwaited.jsonl"
    with JsonlSink(waited) as sink:
        await GraphRunner(sinks=[sink]).run(nested_graph(), AgentContext(1))
    sink = JsonlSink(unwaited, wait=False)
    runner = GraphRunner(sinks=[sink])
    first = await runner.run(nested_graph(), AgentContext(1))
    assert first.input == 32
    # The run's last event is taken without an awaitable: nothing waits for the writer.
    from agentgraph import RunFinished

    assert sink(RunFinished(first, 0)) is None
    sink.flush()
    assert kinds(lines(unwaited))[-1] == "run_finished"
    sink.close()
    drop = ("run", "time", "elapsed", "duration")
    shown = [
        [{k: v for k, v in r.items() if k not in drop} for r in lines(p)]
        for p in (waited, unwaited)
    ]
    assert shown[1][: len(shown[0])] == shown[0]
    assert load_trace(unwaited).output == 32


async def test_a_sink_that_does_not_wait_still_writes_each_step_as_the_run_goes_on(tmp_path):
    path = tmp_path / "live.jsonl"
    seen = []

    from agentgraph import GraphBuilder, node

    @node
    async def peek(ctx):
        with anyio.move_on_after(10):
            while "node_started" not in kinds(lines(path)):
                await anyio.sleep(0.01)
        seen.append(kinds(lines(path)))
        return ctx

    with GraphBuilder[int, int]("g") as g:
        g.start.edge_to(peek).edge_to(g.finish)
    with JsonlSink(path, wait=False) as sink:
        await GraphRunner(sinks=[sink]).run(g.build(), AgentContext(0))
    assert seen == [["run_started", "route_chosen", "node_started"]]
    assert kinds(lines(path))[-1] == "run_finished"


async def test_each_record_s_time_is_the_run_s_start_plus_its_elapsed_seconds(tmp_path):
    import time

    path = tmp_path / "t.jsonl"
    before = time.time()
    with JsonlSink(path) as sink:
        await GraphRunner(sinks=[sink]).run(nested_graph(), AgentContext(1))
    after = time.time()
    records = lines(path)
    start = records[0]["time"] - records[0]["elapsed"]
    assert before <= start <= records[-1]["time"] <= after
    # Float rounding apart, each time is the start plus the elapsed seconds.
    assert [r["time"] for r in records] == pytest.approx(
        [start + r["elapsed"] for r in records], abs=1e-6
    )
    assert [r["elapsed"] for r in records] == sorted(r["elapsed"] for r in records)
