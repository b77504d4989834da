"""A self-contained HTML page for one trace: the graph, the step timeline and every step.

Everything is inline (styles, SVG, a small script and the trace data), so the
page opens from disk with no server and fetches nothing. The graph and the
timeline are static SVG drawn here; the script only fills in the step details
and links the pictures to them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any

import orjson

from ._diagram import diagram_from_graph, diagram_from_trace
from ._mermaid import run_to_mermaid
from ._svg import BAR, HANDOFF, MODEL, RETRY, TOOL, diagram_svg, timeline_svg
from ._text import UNICODE, error_text, handoff_text, seconds, tokens
from ._trace import Step, Trace

if TYPE_CHECKING:
    from .._core._graph import Graph

__all__ = ("trace_to_html",)

_CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; padding: 18px 24px 40px; font: 14px/1.45 system-ui, -apple-system,
  "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1d2430; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 15px; margin: 22px 0 8px; color: #3a4453; }
.summary span { margin-right: 14px; }
.badge { display: inline-block; padding: 1px 9px; border-radius: 10px; color: #fff;
  font-weight: 600; }
.badge.ok { background: #2e9d5b; } .badge.failed { background: #d64545; }
.badge.running, .badge.interrupted { background: #8a8f98; }
.error { color: #b02a2a; white-space: pre-wrap; }
.scroll { overflow-x: auto; border: 1px solid #e3e6ea; border-radius: 6px; padding: 6px; }
svg text { font: 13px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  fill: #1d2430; }
svg .edge-label { font-size: 11px; font-weight: 600; paint-order: stroke;
  stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }
svg .tick { font-size: 11px; fill: #6b7380; }
svg .step-no { fill: #8a8f98; font-size: 11px; }
svg .row { cursor: pointer; } svg .row:hover .row-bg { fill: #eef3fb; }
svg .box { cursor: pointer; }
.legend { color: #5b6472; font-size: 12px; margin: 6px 0 0; }
.legend i { display: inline-block; width: 12px; height: 9px; margin: 0 4px 0 10px;
  border-radius: 2px; }
details.step { border: 1px solid #e3e6ea; border-radius: 6px; margin: 6px 0; }
details.step > summary { padding: 5px 10px; cursor: pointer; }
details.step[open] > summary { background: #f4f6f9; }
details.step.flash { outline: 2px solid #3b6fb6; }
.step-body { padding: 4px 12px 10px; }
.step-body h4 { margin: 10px 0 3px; font-size: 12px; color: #5b6472; text-transform: uppercase; }
pre { margin: 0; padding: 6px 8px; background: #f7f8fa; border-radius: 4px; overflow-x: auto;
  font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre-wrap; }
.handoff { color: #1f7a8c; font-weight: 600; }
.st-ok { color: #2e9d5b; } .st-failed { color: #d64545; } .st-running { color: #8a8f98; }
"""

STEP_SCRIPT = """
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }
  function block(body, title, value) {
    if (value === null || value === undefined || (Array.isArray(value) && !value.length)) return;
    body.appendChild(el("h4", "", title));
    body.appendChild(el("pre", "", typeof value === "string" ? value
      : JSON.stringify(value, null, 2)));
  }
  function stepDetails(s) {
    var d = el("details", "step");
    d.id = "step-" + s.index;
    var sum = el("summary");
    sum.appendChild(el("span", "st-" + s.status, s.mark + " "));
    sum.appendChild(document.createTextNode("#" + s.index + " " + s.path.join(" / ") + " · "
      + s.took + (s.attempts > 1 ? " · " + s.attempts + " attempts" : "")));
    (s.handoffs || []).forEach(function (h) {
      sum.appendChild(el("span", "handoff", " " + h.text));
    });
    d.appendChild(sum);
    var body = el("div", "step-body");
    block(body, "error", s.error);
    block(body, "input", s.input);
    block(body, "output", s.output);
    block(body, "messages added", s.messages);
    block(body, "retries", s.retries);
    block(body, "model calls", s.model_calls);
    block(body, "tool calls", s.tool_calls);
    block(body, "structured output", s.outputs);
    block(body, "handoffs", (s.handoffs || []).map(function (h) {
      return { from: h.source, to: h.target, policy: h.history, messages: h.messages,
        task: h.task };
    }));
    d.appendChild(body);
    return d;
  }
"""
"""The step list's script, shared with the live page: `el`, `block` and `stepDetails(step)`."""

_SCRIPT = (
    """
(function () {
  var data = JSON.parse(document.getElementById("trace-data").textContent);
  var list = document.getElementById("step-list");
"""
    + STEP_SCRIPT
    + """
  data.steps.forEach(function (s) { list.appendChild(stepDetails(s)); });
  function show(index) {
    var d = document.getElementById("step-" + index);
    if (!d) return;
    d.open = true;
    d.classList.add("flash");
    setTimeout(function () { d.classList.remove("flash"); }, 900);
    d.scrollIntoView({ behavior: "smooth", block: "nearest" });
  }
  document.querySelectorAll("#timeline-svg .row").forEach(function (row) {
    row.addEventListener("click", function () { show(row.getAttribute("data-index")); });
  });
  document.body.setAttribute("data-steps", String(data.steps.length));
  document.body.setAttribute("data-ready", "1");
})();
"""
)


def _script_json(value: Any) -> str:
    """JSON that is safe inside a `<script>` element."""
    text = orjson.dumps(value, default=repr).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _step_data(step: Step) -> dict[str, Any]:
    return {
        "index": step.index,
        "path": list(step.path[1:]),
        "status": step.status,
        "mark": UNICODE.status(step.status),
        "took": seconds(step.duration) if step.duration is not None else step.status,
        "attempts": step.attempts,
        "error": error_text(step.error, 2000) or None,
        "input": step.input,
        "output": step.output if step.status == "ok" else None,
        "messages": list(step.messages),
        "retries": [
            {"attempt": r.attempt, "wait": r.wait, "error": error_text(r.error, 500)}
            for r in step.retries
        ],
        "model_calls": [
            {
                "model": c.model,
                "latency": c.latency,
                "usage": dict(c.usage),
                "request": c.request,
                "response": c.response,
            }
            for c in step.model_calls
        ],
        "tool_calls": [
            {
                "name": t.name,
                "id": t.id,
                "arguments": t.arguments,
                "result": t.result,
                "is_error": t.is_error,
                "duration": t.duration,
            }
            for t in step.tool_calls
        ],
        "outputs": list(step.outputs),
        "handoffs": [
            {
                "source": h.get("source"),
                "target": h.get("target"),
                "history": h.get("history"),
                "messages": h.get("messages"),
                "task": h.get("task"),
                "text": handoff_text(h),
            }
            for h in step.handoffs
        ],
    }


def _header(trace: Trace, title: str) -> str:
    started = (
        datetime.fromtimestamp(trace.started_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        if trace.started_at is not None
        else "unknown start"
    )
    facts = [
        f'<span class="badge {trace.status}">{escape(trace.status)}</span>',
        f"<span>{trace.step_count} steps</span>",
        f"<span>{escape(seconds(trace.duration))}</span>",
        f"<span>{escape(tokens(trace.usage) or 'no tokens')}</span>",
        f"<span>started {escape(started)}</span>",
        f"<span>run {escape(trace.run)}</span>",
    ]
    error = f'<p class="error">{escape(error_text(trace.error, 2000))}</p>' if trace.error else ""
    return (
        f'<header><h1>{escape(title)}</h1><p class="summary">{"".join(facts)}</p>{error}</header>'
    )


def _legend() -> str:
    items = [
        (BAR["ok"], "step"),
        (BAR["failed"], "failed step"),
        (MODEL, "model call"),
        (TOOL, "tool call"),
        (RETRY, "retry"),
        (HANDOFF, "handoff"),
    ]
    marks = "".join(f'<i style="background:{color}"></i>{name}' for color, name in items)
    return f'<p class="legend">{marks}</p>'


def trace_to_html(
    trace: Trace,
    graph_mermaid: str | None = None,
    *,
    graph: Graph[Any, Any] | None = None,
    title: str | None = None,
) -> str:
    """A self-contained HTML page showing `trace`: its graph, its timeline and every step.

    Args:
        trace: a run, from `load_trace` or `TraceRecorder.trace()`.
        graph_mermaid: Mermaid source to include for copying (by default, when
            `graph` is given, `run_to_mermaid(graph, trace)`).
        graph: the graph that ran. With it the picture shows every node and
            edge, the ones the run took highlighted with counts; without it,
            the picture is drawn from the trace alone (what ran).
        title: the page title; the graph's name by default.
    """
    diagram = diagram_from_graph(graph, trace) if graph is not None else diagram_from_trace(trace)
    if graph_mermaid is None and graph is not None:
        graph_mermaid = run_to_mermaid(graph, trace)
    title = title or f"{trace.graph} · agentgraph trace"
    steps = [_step_data(step) for step in trace.walk()]
    mermaid = (
        f'<details id="mermaid"><summary>Mermaid source</summary><pre>{escape(graph_mermaid)}'
        "</pre></details>"
        if graph_mermaid
        else ""
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"{_header(trace, title)}"
        f'<section id="graph"><h2>Graph</h2><div class="scroll">{diagram_svg(diagram)}</div>'
        "</section>"
        f'<section id="timeline"><h2>Timeline</h2><div class="scroll">{timeline_svg(trace)}'
        f"</div>{_legend()}</section>"
        '<section id="steps"><h2>Steps</h2><div id="step-list"></div>'
        "<noscript>Step details need JavaScript; the pictures above do not.</noscript></section>"
        f"{mermaid}"
        f'<script type="application/json" id="trace-data">{_script_json({"steps": steps})}'
        f"</script><script>{_SCRIPT}</script></body></html>\n"
    )
