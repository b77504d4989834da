"""Handoffs in the JSON-lines trace, its reader, the console tree and the HTML page."""

import io
import json
import re

import pytest

from agentgraph import AgentContext, GraphRunner, tool
from agentgraph._cli import main
from agentgraph.teams import Agent, Handoff, supervisor, swarm
from agentgraph.testing import ScriptedModel
from agentgraph.tracing import ConsoleSink, JsonlSink, load_trace, render_trace, trace_to_html
from agentgraph.tracing._text import ASCII
from tests.tracing.support import FAKE_KEY, mask_emails
from tests.tracing.test_browser import browser, headless

pytestmark = pytest.mark.anyio

transfer = ScriptedModel.tool_call
TASK = f"refund order 7 for ann@example.com, key {FAKE_KEY}"


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"order {order} refunded"


def team():
    return swarm(
        [
            Agent(
                "triage",
                ScriptedModel(transfer("transfer_to_billing", task=TASK)),
                handoffs=[Handoff("billing", history="full")],
            ),
            Agent(
                "billing",
                ScriptedModel(transfer("refund", order="7"), "Order 7 is refunded."),
                tools=[refund],
            ),
        ]
    )


def boss_and_math():
    boss = ScriptedModel(transfer("transfer_to_math", task="What is 2+2?"), "It is 4.")
    return supervisor(Agent("boss", boss), [Agent("math", ScriptedModel("4"))])


async def traced(tmp_path, graph, text="Please refund order 7."):
    path = tmp_path / "team.jsonl"
    with JsonlSink(path, redact=mask_emails) as sink:
        await GraphRunner(sinks=[sink]).run(graph, AgentContext(text))
    return path


async def test_the_jsonl_record_of_a_handoff_is_masked_and_read_back(tmp_path):
    path = await traced(tmp_path, team())
    raw = path.read_text()
    assert FAKE_KEY not in raw and "ann@example.com" not in raw
    (record,) = [r for r in map(json.loads, raw.splitlines()) if r["event"] == "handed_off"]
    assert record["path"] == ["swarm", "handoff"]
    assert (record["source"], record["target"], record["history"], record["messages"]) == (
        "triage",
        "billing",
        "full",
        3,
    )
    assert record["task"].startswith("refund order 7 for <email>, key ")
    trace = load_trace(path)
    assert trace.handoffs == (record,)
    (step,) = [s for s in trace.walk() if s.handoffs]
    assert (step.name, step.index) == ("handoff", record["index"])


async def test_a_sub_task_handing_back_is_a_return_record(tmp_path):
    trace = load_trace(await traced(tmp_path, boss_and_math(), "What is 2+2?"))
    shown = [(h["source"], h["target"], h["history"], h["task"]) for h in trace.handoffs]
    assert shown == [("boss", "math", "none", "What is 2+2?"), ("math", "boss", "return", None)]


async def test_the_console_tree_shows_each_handoff_under_its_step(tmp_path):
    trace = load_trace(await traced(tmp_path, team()))
    out = io.StringIO()
    render_trace(trace, out, style="plain")
    lines = out.getvalue().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("├── ✓ handoff · "))
    assert lines[at + 1] == (
        "│   └── ⇄ handoff triage → billing · full · 3 messages · "
        "task: refund order 7 for <email>, key ***"
    )
    out = io.StringIO()
    render_trace(load_trace(await traced(tmp_path, boss_and_math(), "2+2?")), out, style="plain")
    assert "⇄ return math → boss · 3 messages" in out.getvalue()


async def test_the_live_console_logs_the_handoff_and_ascii_streams_get_ascii():
    out = io.StringIO()
    await GraphRunner(sinks=[ConsoleSink(out, style="plain")]).run(team(), AgentContext("hi"))
    lines = out.getvalue().splitlines()
    at = lines.index("  ▸ handoff")
    assert lines[at + 1].startswith("    ⇄ handoff triage → billing · full · 3 messages · task: ")
    assert lines[at + 2].startswith("  ✓ handoff · ")
    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    await GraphRunner(sinks=[ConsoleSink(ascii_out, style="plain")]).run(team(), AgentContext("hi"))
    ascii_out.seek(0)
    text = ascii_out.read()
    assert "    <> handoff triage -> billing | full | 3 messages | task: " in text
    assert ASCII.handoff == "<>"


async def test_the_rich_tree_shows_the_handoff(tmp_path):
    pytest.importorskip("rich")
    out = io.StringIO()
    render_trace(load_trace(await traced(tmp_path, team())), out, style="rich")
    assert "⇄ handoff triage → billing · full · 3 messages" in out.getvalue()


async def test_the_html_page_marks_the_handoff_on_the_timeline_and_in_its_step(tmp_path):
    trace = load_trace(await traced(tmp_path, team()))
    page = trace_to_html(trace)
    assert FAKE_KEY not in page
    marks = re.findall(r'<path class="handoff"[^>]*><title>([^<]*)</title></path>', page)
    assert marks == [
        "⇄ handoff triage → billing · full · 3 messages · task: refund order 7 for "
        "&lt;email&gt;, key ***"
    ]
    data = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', page)
    assert data is not None
    steps = json.loads(data.group(1))["steps"]
    handed = [(s["path"], s["handoffs"]) for s in steps if s["handoffs"]]
    assert [
        (path, [(h["source"], h["target"], h["history"]) for h in hs]) for path, hs in handed
    ] == [(["handoff"], [("triage", "billing", "full")])]
    assert 'i style="background:#1f7a8c"></i>handoff' in page


async def test_show_prints_the_handoff_of_a_saved_trace(tmp_path):
    path = await traced(tmp_path, team())
    out, err = io.StringIO(), io.StringIO()
    assert main(["show", str(path), "--plain"], stdout=out, stderr=err) == 0
    assert "⇄ handoff triage → billing · full · 3 messages" in out.getvalue()


@browser
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_pages_script_shows_the_handoff_in_its_steps_details(tmp_path):
    page = tmp_path / "team.html"
    page.write_text(trace_to_html(load_trace(await traced(tmp_path, team()))))
    dom = headless(page, tmp_path / "profile", "--dump-dom").stdout.decode()
    assert re.search(r'<body[^>]*data-ready="1"', dom)
    (summary,) = re.findall(r'<span class="handoff">([^<]*)</span>', dom)
    assert summary.startswith(" ⇄ handoff triage → billing · full · 3 messages · task: ")
    assert "<h4>handoffs</h4>" in dom
    assert '"from": "triage"' in dom and '"to": "billing"' in dom and '"policy": "full"' in dom
