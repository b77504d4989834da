"""The console sink and tree: with rich (live and at the end) and in plain text."""

import io
import re

import anyio
import pytest

from agentgraph import AgentContext, GraphRunner, NodeFailed
from agentgraph.tracing import ConsoleSink, TraceRecorder, render_trace
from agentgraph.tracing import _console as console_module

from .support import FAKE_KEY, nested_graph, scripted_agent
from .support import secret_context as secret_ctx

pytestmark = pytest.mark.anyio

FAILURE = (
    "NodeFailed: node outer/inner/check failed at step 8 after 1 attempt: ValueError: 32 is too big"
)
DURATION = re.compile(r"\d+(\.\d+)? (µs|ms|s)\b")


def normal(text: str) -> list[str]:
    """Lines with durations replaced by T and trailing spaces dropped."""
    return [DURATION.sub("T", line).rstrip() for line in text.splitlines()]


async def run_failing(sink):
    with pytest.raises(NodeFailed):
        await GraphRunner(sinks=[sink]).run(nested_graph(fail=True), AgentContext(1))


async def test_plain_log_of_a_nested_run_with_a_retry_and_a_failure():
    out = io.StringIO()
    await run_failing(ConsoleSink(out, style="plain"))
    failure = FAILURE
    assert normal(out.getvalue()) == [
        "▸ run outer",
        "  ▸ prepare",
        "  ✓ prepare · T",
        "  ▸ inner",
        "    ▸ flaky",
        "      ↻ attempt 1 failed: TimeoutError: upstream slow · retry in T",
        "    ✓ flaky · T · 2 attempts",
        *["    ▸ double", "    ✓ double · T"] * 4,
        "    ▸ check",
        "    ✗ check failed after 1 attempt: ValueError: 32 is too big",
        f"  ✗ inner failed after 1 attempt: {failure}",
        f"✗ run outer · 8 steps · T · {failure}",
    ]


async def test_plain_log_of_an_agent_shows_model_calls_tokens_and_tools():
    agent, _ = scripted_agent()
    out = io.StringIO()
    await GraphRunner(sinks=[ConsoleSink(out, style="plain")]).run(agent, secret_ctx("2 + 3?"))
    text = out.getvalue()
    lines = normal(text)
    assert re.fullmatch(r"    ◆ model scripted-model · T · \d+→\d+ tokens", lines[4])
    assert '    ⚙ add({"a":2,"b":3}) → 5' in lines
    assert any(
        line.startswith('    ⚙ lookup({"name":"Ann"}) → ✗ tool "lookup" failed') for line in lines
    )
    assert re.fullmatch(r"✓ run react_agent · 5 steps · T · \d+→\d+ tokens", lines[-1])
    assert FAKE_KEY not in text


async def test_a_stream_that_cannot_encode_the_marks_gets_ascii():
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii")
    await run_failing(ConsoleSink(out, style="plain"))
    out.flush()
    text = raw.getvalue().decode("ascii")
    assert "~ attempt 1 failed" in text and text.splitlines()[-1].startswith("x run outer")


async def test_rich_prints_the_tree_once_when_it_cannot_redraw():
    out = io.StringIO()
    await run_failing(ConsoleSink(out, style="rich", live=False))
    lines = normal(out.getvalue())
    assert lines[0].startswith("✗ run outer · 8 steps · T · NodeFailed")
    tree = "\n".join(lines)
    assert "├── ✓ prepare · T" in tree
    assert "    ├── ✓ flaky · T · 2 attempts" in tree
    assert "    │   └── ↻ attempt 1 failed: TimeoutError: upstream slow · retry in T" in tree
    assert "    └── ✗ check · T · ValueError: 32 is too big" in tree
    assert "\x1b" not in out.getvalue()


async def test_rich_live_tree_redraws_in_place_and_ends_with_the_whole_tree():
    out = io.StringIO()
    agent, _ = scripted_agent()
    sink = ConsoleSink(out, style="rich", live=True)
    await GraphRunner(sinks=[sink]).run(agent, AgentContext("2 + 3?"))
    text = out.getvalue()
    assert "\x1b[" in text  # cursor movement: the tree was redrawn as it grew
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    assert plain.count("✓ run react_agent") == 1  # the finished tree, printed once
    assert "◆ model scripted-model" in plain and "⚙ add(a=2, b=3) → 5" in plain
    assert sink._live is None  # the live display was stopped


async def test_concurrent_runs_share_one_live_display():
    out = io.StringIO()
    runner = GraphRunner(sinks=[ConsoleSink(out, style="rich", live=True)])
    async with anyio.create_task_group() as tg:
        for start in (1, 2):
            tg.start_soon(runner.run, nested_graph(), AgentContext(start))
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert plain.count("✓ run outer · 8 steps") == 1 and plain.count("✓ run outer · 7 steps") == 1


async def test_without_rich_auto_is_plain_and_rich_is_an_error(monkeypatch):
    monkeypatch.setattr(console_module, "_has_rich", lambda: False)
    with pytest.raises(ImportError, match=r"agentgraph-engine\[rich\]"):
        ConsoleSink(io.StringIO(), style="rich")
    out = io.StringIO()
    sink = ConsoleSink(out)
    assert not sink.rich
    await run_failing(sink)
    assert normal(out.getvalue())[0] == "▸ run outer"


async def test_render_trace_draws_a_saved_run_both_ways():
    recorder = TraceRecorder()
    await run_failing(recorder)
    trace = recorder.trace()
    plain_out, rich_out = io.StringIO(), io.StringIO()
    render_trace(trace, plain_out, style="plain")
    render_trace(trace, rich_out, style="rich")
    plain_lines = normal(plain_out.getvalue())
    assert plain_lines[1:3] == [
        "├── ✓ prepare · T",
        f"└── ✗ inner · T · {FAILURE}",
    ]
    assert plain_lines[-1] == "    └── ✗ check · T · ValueError: 32 is too big"
    assert "└── ✗ check · T · ValueError: 32 is too big" in "\n".join(normal(rich_out.getvalue()))
