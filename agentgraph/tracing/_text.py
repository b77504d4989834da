"""Short text for steps, calls and errors, shared by the console tree and the HTML page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ._trace import ModelCall, RetryRecord, Step, ToolRecord, Trace

__all__ = (
    "ASCII",
    "UNICODE",
    "Glyphs",
    "call_text",
    "error_text",
    "guard_text",
    "handoff_text",
    "retry_text",
    "seconds",
    "short",
    "step_text",
    "tokens",
    "tool_text",
    "trace_text",
)


class Glyphs:
    """The marks used in text output; ASCII ones for streams that cannot encode the others."""

    def __init__(self, **marks: str) -> None:
        self.ok = marks["ok"]
        self.failed = marks["failed"]
        self.running = marks["running"]
        self.interrupted = marks["interrupted"]
        self.retry = marks["retry"]
        self.model = marks["model"]
        self.tool = marks["tool"]
        self.output = marks["output"]
        self.handoff = marks["handoff"]
        self.arrow = marks["arrow"]
        self.dot = marks["dot"]
        self.branch, self.last, self.pipe = marks["branch"], marks["last"], marks["pipe"]

    def status(self, status: str) -> str:
        return str(getattr(self, status, "?"))

    def all(self) -> str:
        return "".join(str(v) for v in vars(self).values())


UNICODE = Glyphs(
    ok="✓",
    failed="✗",
    running="▸",
    interrupted="■",
    retry="↻",
    model="◆",
    tool="⚙",
    output="▣",
    handoff="⇄",
    arrow="→",
    dot="·",
    branch="├── ",
    last="└── ",
    pipe="│   ",
)
ASCII = Glyphs(
    ok="+",
    failed="x",
    running=">",
    interrupted="#",
    retry="~",
    model="*",
    tool="%",
    output="=",
    handoff="<>",
    arrow="->",
    dot="|",
    branch="|-- ",
    last="`-- ",
    pipe="|   ",
)


def seconds(value: float | None) -> str:
    """A duration for people: `40 µs`, `2.50 ms`, `12.5 ms`, `340 ms`, `1.23 s`, `2 min 03 s`."""
    if value is None:
        return "…"
    if value == 0:
        return "0"
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    if value < 0.01:
        return f"{value * 1000:.2f} ms"
    if value < 0.1:
        return f"{value * 1000:.1f} ms"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.2f} s"
    minutes, rest = divmod(int(value), 60)
    return f"{minutes} min {rest:02d} s"


def short(value: Any, limit: int = 80) -> str:
    """`value` on one line, cut to `limit` characters."""
    text = value if isinstance(value, str) else orjson.dumps(value, default=repr).decode()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tokens(usage: Mapping[str, Any] | None, g: Glyphs = UNICODE) -> str:
    """`30→8 tokens (20 cached)`, or an empty string when nothing was counted."""
    if not usage:
        return ""
    given, taken = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    if not (given or taken):
        return ""
    read, written = (int(usage.get(k) or 0) for k in ("cache_read_tokens", "cache_write_tokens"))
    cache = ", ".join(f"{n} {label}" for n, label in ((read, "cached"), (written, "to cache")) if n)
    return f"{given}{g.arrow}{taken} tokens" + (f" ({cache})" if cache else "")


def error_text(error: Mapping[str, Any] | None, limit: int = 160) -> str:
    if not error:
        return ""
    return short(f"{error.get('type', 'Error')}: {error.get('message', '')}", limit)


def _join(parts: list[str], g: Glyphs) -> str:
    return f" {g.dot} ".join(p for p in parts if p)


def step_text(step: Step, g: Glyphs = UNICODE) -> str:
    """`✓ name · 12 ms · 2 attempts · 30→8 tokens`."""
    usage = {"input_tokens": step.input_tokens, "output_tokens": step.output_tokens}
    parts = [
        f"{g.status(step.status)} {step.name}",
        seconds(step.duration) if step.duration is not None else step.status,
        f"{step.attempts} attempts" if step.attempts > 1 else "",
        tokens(usage, g),
    ]
    if step.status == "failed":
        parts.append(error_text(step.error))
    return _join(parts, g)


def retry_text(retry: RetryRecord, g: Glyphs = UNICODE) -> str:
    return _join(
        [
            f"{g.retry} attempt {retry.attempt} failed: {error_text(retry.error)}",
            f"retry in {seconds(retry.wait)}",
        ],
        g,
    )


def call_text(call: ModelCall, g: Glyphs = UNICODE) -> str:
    finish = (call.response or {}).get("finish_reason")
    return _join(
        [
            f"{g.model} model {call.model}",
            seconds(call.latency) if call.latency is not None else "no answer",
            tokens(call.usage, g),
            str(finish) if finish else "",
        ],
        g,
    )


def tool_text(tool: ToolRecord, g: Glyphs = UNICODE) -> str:
    arguments = ", ".join(f"{k}={short(v, 30)}" for k, v in tool.arguments.items())
    outcome = f"{g.failed} {short(tool.result, 60)}" if tool.is_error else short(tool.result, 60)
    return _join(
        [f"{g.tool} {tool.name}({arguments}) {g.arrow} {outcome}", seconds(tool.duration)], g
    )


def guard_text(record: Mapping[str, Any], g: Glyphs = UNICODE) -> str:
    """`guard tool_policy · tool · block · tool 'send' is denied`."""
    parts = [f"guard {record.get('guard', '?')}", str(record.get("stage", "?"))]
    parts.append(str(record.get("action", "?")))
    if record.get("reason"):
        parts.append(str(record["reason"]))
    if record.get("replayed"):
        parts.append("from the record")
    return _join(parts, g)


def handoff_text(record: Mapping[str, Any], g: Glyphs = UNICODE) -> str:
    """`⇄ handoff triage → billing · full · 5 messages · task: refund order 7`.

    A sub-task handing back to its caller reads `⇄ return billing → triage`.
    """
    policy = str(record.get("history", "?"))
    back = policy == "return"
    source, target = record.get("source", "?"), record.get("target", "?")
    count = record.get("messages")
    parts = [
        f"{g.handoff} {'return' if back else 'handoff'} {source} {g.arrow} {target}",
        "" if back else policy,
        f"{count} message{'s' if count != 1 else ''}" if isinstance(count, int) else "",
    ]
    task = record.get("task")
    if task:
        parts.append(f"task: {short(task, 60)}")
    return _join(parts, g)


def output_text(output: Mapping[str, Any], g: Glyphs = UNICODE) -> str:
    if output.get("event") == "guard_decided":
        return guard_text(output, g)
    if output.get("event") == "handed_off":
        return handoff_text(output, g)
    attempts = output.get("attempts") or ()
    return _join(
        [
            f"{g.output} output {output.get('output_type', '?')}",
            f"{len(attempts)} attempt{'s' if len(attempts) != 1 else ''}",
            "valid" if output.get("ok") else "invalid",
        ],
        g,
    )


def trace_text(trace: Trace, g: Glyphs = UNICODE) -> str:
    """The run's headline: `✓ run agent · 6 steps · 14 ms · 30→8 tokens`."""
    parts = [
        f"{g.status(trace.status)} run {trace.graph}",
        f"{trace.step_count} steps",
        seconds(trace.duration) if trace.duration is not None else trace.status,
        tokens(trace.usage, g),
    ]
    if trace.status == "failed":
        parts.append(error_text(trace.error))
    return _join(parts, g)


def entries(step: Step) -> list[tuple[float, object]]:
    """What happened inside `step`, in time order: retries, calls, outputs, guards,
    handoffs, child steps."""
    items: list[tuple[float, object]] = [(r.at, r) for r in step.retries]
    items += [(c.start, c) for c in step.model_calls]
    items += [(t.start, t) for t in step.tool_calls]
    items += [(float(o.get("elapsed", step.start)), o) for o in step.outputs]
    items += [(float(r.get("elapsed", step.start)), r) for r in step.guards]
    items += [(float(r.get("elapsed", step.start)), r) for r in step.handoffs]
    items += [(c.start, c) for c in step.children]
    items.sort(key=lambda item: item[0])
    return items
