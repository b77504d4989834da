"""Showing a report: a console table (plain, or rich when installed) and JUnit XML for CI."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Literal, TextIO

from .._util._extras import pip_install
from ._report import Report, every_k

__all__ = ("render_report", "to_junit", "write_junit")


def _columns(report: Report) -> list[str]:
    names: dict[str, None] = {}
    for result in report.results:
        for score in result.scores:
            names.setdefault(score.name, None)
    return list(names)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _rows(report: Report, columns: list[str]) -> list[list[str]]:
    rows = []
    for case in report.cases():
        row = [case.name, f"{case.passes}/{case.runs}"]
        row += [_cell(case.pass_at[0]), _cell(case.pass_hat[-1])]
        row += [_cell(case.means.get(name)) for name in columns]
        row.append(str(case.errors) if case.errors else "")
        rows.append(row)
    return rows


def _headers(report: Report, columns: list[str]) -> list[str]:
    # With uneven runs, each case's pass^n is over its own n (its `passed` column shows n).
    hat = "pass^n" if report.repeat is None else f"pass^{report.repeat}"
    return ["case", "passed", "pass@1", hat, *columns, "errors"]


def _chances(report: Report) -> str:
    """pass@k and pass^k for every k some case has, saying over how many cases when not all."""
    cases = report.cases()
    means = every_k(cases)
    shown = []
    for sign, which in (("@", 0), ("^", 1)):
        for k, found in enumerate(means, 1):
            counted = found[2]
            over = "" if counted == len(cases) else f" ({counted} of {len(cases)} cases)"
            shown.append(f"pass{sign}{k}={found[which]:.3f}{over}")
    return " ".join(shown)


def _runs(report: Report) -> str:
    fewest, most = report.runs_per_case
    if fewest == most:
        return f"{most} repeats"
    return f"{fewest} to {most} runs per case"


def _summary(report: Report) -> list[str]:
    lines = [
        _chances(report),
        "means: " + ", ".join(f"{n}={v:.3f}" for n, v in report.means().items()),
    ]
    usage, judged = report.usage, report.evaluator_usage
    spent = f"agent: {usage.requests} requests, {usage.total_tokens} tokens"
    if report.cost is not None:
        spent += f", cost {report.cost:.6g}"
    if judged.requests:
        spent += f"; evaluators: {judged.requests} requests, {judged.total_tokens} tokens"
    lines.append(spent)
    return lines


def render_report(
    report: Report, out: TextIO, *, style: Literal["auto", "plain", "rich"] = "auto"
) -> None:
    """Write `report` as a table of cases, then the aggregates.

    `style="auto"` uses rich when it is installed and `plain` text otherwise.
    """
    columns = _columns(report)
    headers, rows = _headers(report, columns), _rows(report, columns)
    title = f"{report.name}: {len(report.cases())} cases x {_runs(report)}"
    if style != "plain" and _rich_table(out, title, headers, rows, _summary(report)):
        return
    if style == "rich":
        raise ImportError(f"style='rich' needs rich: {pip_install('rich')}")
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    out.write(title + "\n")
    out.write("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip() + "\n")
    for row in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")
    for line in _summary(report):
        out.write(line + "\n")


def _rich_table(
    out: TextIO, title: str, headers: list[str], rows: list[list[str]], summary: list[str]
) -> bool:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        return False
    table = Table(title=title)
    for header in headers:
        table.add_column(header, justify="left" if header == "case" else "right")
    for row in rows:
        table.add_row(*row)
    # Off a terminal, rich would fit the table into 80 columns and cut the names.
    wide = sum(max([len(h), *(len(r[i]) for r in rows)]) + 3 for i, h in enumerate(headers)) + 4
    terminal = out.isatty() if hasattr(out, "isatty") else False
    console = Console(file=out, highlight=False, width=None if terminal else max(wide, 80))
    console.print(table)
    for line in summary:
        console.print(line, markup=False)
    return True


# Terminal escape sequences (colours, cursor moves, window titles): formatting, not text.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\|$)|[@-Z\\-_])")
# What XML 1.0 cannot hold, even escaped: C0 controls but tab and newlines, lone
# surrogates, and U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    """`text` as XML can hold it: escape sequences dropped, other such characters as `\\xNN`."""
    return _NOT_XML.sub(_escaped, _ANSI.sub("", text))


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def to_junit(report: Report) -> str:
    """The report as JUnit XML: one test case per case and repeat, so CI lists each.

    Terminal escape sequences in the text (a coloured error) are dropped, and
    other characters XML cannot hold are written as escapes (`\\x07`).
    """
    suite = ET.Element("testsuite", name=_xml(report.name))
    failures = errors = 0
    total = 0.0
    once = report.repeat == 1  # derived from every run: read once, not per run
    for result in report.results:
        name = result.case if once else f"{result.case} [{result.repeat + 1}]"
        case = ET.SubElement(
            suite,
            "testcase",
            name=_xml(name),
            classname=_xml(report.name),
            time=f"{result.duration:.6f}",
        )
        total += result.duration
        if result.error is not None:
            errors += 1
            error = _xml(result.error)
            first = (error.splitlines() or [""])[0]
            ET.SubElement(case, "error", message=first[:500]).text = error
            continue
        failed = [s for s in result.scores if s.passed is False]
        if failed:
            failures += 1
            lines = [_xml(f"{s.name}: {s.error or s.reason or s.value}") for s in failed]
            ET.SubElement(case, "failure", message=lines[0][:500]).text = "\n".join(lines)
        scores = ", ".join(f"{s.name}={s.value}" for s in result.scores)
        ET.SubElement(case, "system-out").text = _xml(f"run {result.run_id}: {scores}")
    attributes: dict[str, Any] = {
        "tests": str(len(report.results)),
        "failures": str(failures),
        "errors": str(errors),
        "time": f"{total:.6f}",
    }
    suite.attrib.update(attributes)
    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode")


def write_junit(report: Report, path: str | os.PathLike[str]) -> None:
    """Write the report as a JUnit XML file."""
    Path(path).write_text(to_junit(report) + "\n", encoding="utf-8")
