"""A report as a self-contained HTML page, in the style of the trace page.

A table of runs and their scores, each run linking to its trace page (by a
link template of the run id), and for a what-if, the recorded and the new
run side by side. Every value is escaped, and masked as traces are (a
report's outputs, errors and reasons already are; the page masks again
whatever it shows, with the redaction hook given).
"""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any

import orjson

from .._util._redact import Redaction, Redactor
from ..tracing._html import _CSS
from ._compare import compare
from ._report import Report, RunResult
from ._score import Score
from ._whatif import WhatIfCase, WhatIfReport

__all__ = ("report_to_html", "write_html")

_MORE_CSS = """
table.runs { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
table.runs th, table.runs td { border: 1px solid #e3e6ea; padding: 4px 8px; text-align: left;
  vertical-align: top; }
table.runs th { background: #f4f6f9; }
td.pass { color: #2e9d5b; font-weight: 600; } td.fail { color: #d64545; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.side h4 { margin: 4px 0; font-size: 12px; color: #5b6472; text-transform: uppercase; }
"""


class _Page:
    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    def text(self, value: Any) -> str:
        """`value` as escaped, masked text."""
        if value is None:
            return ""
        shown = value if isinstance(value, str) else orjson.dumps(value, default=repr).decode()
        return escape(self.redactor.text(shown, "report"))

    def score(self, score: Score | None) -> str:
        if score is None:
            return "<td></td>"
        cls = {True: "pass", False: "fail"}.get(score.passed, "num")  # type: ignore[arg-type]
        value = "error" if score.error is not None else _value(score.value)
        why = score.error or score.reason
        title = f' title="{self.text(why)}"' if why else ""
        return f'<td class="{cls}"{title}>{self.text(value)}</td>'

    def run_link(self, result: RunResult, link: str | None) -> str:
        if not result.run_id:
            return ""
        if link is None:
            return self.text(result.run_id)
        href = link.format(run_id=result.run_id)
        return f'<a href="{self.text(href)}">{self.text(result.run_id)}</a>'


def _value(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _names(results: list[RunResult]) -> list[str]:
    return list(dict.fromkeys(s.name for r in results for s in r.scores))


def _table(page: _Page, report: Report, link: str | None) -> str:
    names = _names(list(report.results))
    head = ["case", "repeat", "passed", *names, "tokens", "output", "run"]
    rows = []
    for r in report.results:
        status = "pass" if r.passed else "fail"
        cells = [
            f"<td>{page.text(r.case)}</td>",
            f'<td class="num">{r.repeat + 1}</td>',
            f'<td class="{status}">{"yes" if r.passed else "no"}</td>',
            *(page.score(r.score(n)) for n in names),
            f'<td class="num">{r.usage.total_tokens}</td>',
            f"<td>{page.text(r.error or r.output)}</td>",
            f"<td>{page.run_link(r, link)}</td>",
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f'<table class="runs"><tr>{header}</tr>{"".join(rows)}</table>'


def _side(page: _Page, title: str, result: RunResult, link: str | None) -> str:
    scores = ", ".join(f"{s.name}={_value(s.value)}" for s in result.scores)
    return (
        f"<div><h4>{escape(title)}: {page.run_link(result, link)}</h4>"
        f"<pre>{page.text(result.error or result.output)}</pre>"
        f"<p>{page.text(scores)}</p><p>{result.usage.requests} requests, "
        f"{result.usage.total_tokens} tokens</p></div>"
    )


def _pair(page: _Page, pair: WhatIfCase, link: str | None) -> str:
    moved = (
        "the same run" if pair.diverged_at is None else f"first differs at step {pair.diverged_at}"
    )
    summary = (
        f"{page.text(pair.case)} [{pair.recorded.repeat + 1}] · forked after step "
        f"{pair.forked_at} · {moved}"
    )
    return (
        f'<details class="step"{" open" if pair.diverged_at is not None else ""}>'
        f'<summary>{summary}</summary><div class="step-body side">'
        f"{_side(page, 'recorded', pair.recorded, link)}"
        f"{_side(page, 'changed', pair.changed, link)}</div></details>"
    )


def _summary(report: Report) -> str:
    means = ", ".join(f"{n}={v:.3f}" for n, v in report.means().items())
    passed = f"<span>pass@1 {report.pass_at(1):.3f}</span>" if report.results else ""
    return (
        f'<p class="summary"><span>{len(report.results)} runs</span>'
        f"{passed}<span>{escape(means)}</span>"
        f"<span>{report.usage.total_tokens} tokens</span></p>"
    )


def report_to_html(
    report: Report | WhatIfReport,
    *,
    trace_link: str | None = "{run_id}.html",
    title: str | None = None,
    redact: Redaction | Redactor | None = None,
) -> str:
    """A self-contained HTML page showing `report` (an evaluation's or a what-if's).

    Args:
        report: the report to show.
        trace_link: where each run's trace page is, as a template of `{run_id}`
            (pages `trace_to_html` wrote); None shows the run ids without links.
        title: the page title; the report's name by default.
        redact: a hook or `Redactor` masking more than secrets, as on traces.
    """
    page = _Page(redact if isinstance(redact, Redactor) else Redactor(redact))
    title = title or f"{report.name} · agentgraph evaluation"
    if isinstance(report, WhatIfReport):
        comparison = compare(report)
        changes = "".join(
            f"<li>{escape(c.score)}: {_number(c.before)} → {_number(c.after)} "
            f"({escape(c.verdict)})</li>"
            for c in comparison.overall
        )
        body = (
            f"<h2>Recorded</h2>{_summary(report.before)}"
            f"<h2>{escape(report.variant)}</h2>{_summary(report.after)}<ul>{changes}</ul>"
            f"<p>{len(report.differing())} of {len(report.cases)} runs differ; the changed runs "
            f"spent {report.live_usage.requests} requests after their fork points.</p>"
            f"<h2>Runs side by side</h2>{''.join(_pair(page, c, trace_link) for c in report.cases)}"
            f"<h2>Changed runs</h2>{_table(page, report.after, trace_link)}"
        )
    else:
        body = f"{_summary(report)}<h2>Runs</h2>{_table(page, report, trace_link)}"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}{_MORE_CSS}</style></head><body>"
        f"<header><h1>{escape(title)}</h1></header>{body}</body></html>\n"
    )


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def write_html(
    report: Report | WhatIfReport,
    path: str | os.PathLike[str],
    *,
    trace_link: str | None = "{run_id}.html",
    redact: Redaction | Redactor | None = None,
) -> None:
    """Write `report_to_html(report)` to `path`."""
    html = report_to_html(report, trace_link=trace_link, redact=redact)
    Path(path).write_text(html, encoding="utf-8")
