"""Comparing two reports, and the gate CI applies: thresholds and a baseline.

`compare(before, after)` says, per case and score (and for the means over
all cases), what got better, worse or stayed. `check` lists what fails a
gate: a mean below its threshold, or below the baseline's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, TextIO

import attrs

from ._report import Report

if TYPE_CHECKING:
    from ._whatif import WhatIfReport

__all__ = ("Change", "Comparison", "check", "compare", "report_means")

Verdict = Literal["better", "worse", "same", "new", "gone"]

_PASS = re.compile(r"pass(@|\^)(\d+)")


@attrs.frozen
class Change:
    """One case's (or, with `case=None`, the whole report's) score before and after."""

    case: str | None
    score: str
    before: float | None
    after: float | None

    @property
    def verdict(self) -> Verdict:
        """`better`, `worse` or `same`; `new` or `gone` when only one report has it."""
        if self.before is None:
            return "new"
        if self.after is None:
            return "gone"
        if abs(self.after - self.before) < 1e-9:
            return "same"
        return "better" if self.after > self.before else "worse"


@attrs.frozen
class Comparison:
    """Every change between two reports: per case and score, then overall."""

    changes: tuple[Change, ...]
    overall: tuple[Change, ...]

    def of(self, verdict: Verdict) -> tuple[Change, ...]:
        """The per-case changes with this verdict."""
        return tuple(c for c in self.changes if c.verdict == verdict)

    def render(self, out: TextIO, *, detail: bool = False) -> None:
        """Write the overall changes, then each case whose pass rate moved.

        With `detail`, every score of every case that moved is listed.
        The last line counts the per-case changes of every score.
        """
        for change in self.overall:
            out.write(f"{change.score}: {_shown(change)} ({change.verdict})\n")
        for change in self.changes:
            if change.verdict != "same" and (detail or change.score == "passed"):
                out.write(
                    f"  {change.case} / {change.score}: {_shown(change)} ({change.verdict})\n"
                )
        out.write(
            f"{len(self.of('better'))} better, {len(self.of('worse'))} worse, "
            f"{len(self.of('same'))} the same\n"
        )


def _shown(change: Change) -> str:
    def text(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    return f"{text(change.before)} -> {text(change.after)}"


def report_means(report: Report) -> dict[str, float]:
    """The means over all runs per score, with `pass@1` and `pass^n`.

    n is the fewest runs of any case (the repeats, when every case has as many),
    so that pass^n is over every case.
    """
    fewest = report.runs_per_case[0]
    means = {}
    if fewest:
        means = {"pass@1": report.pass_at(1), f"pass^{fewest}": report.pass_hat(fewest)}
    means.update(report.means())
    return means


def _per_case(report: Report) -> dict[tuple[str, str], float]:
    found: dict[tuple[str, str], float] = {}
    for case in report.cases():
        found[(case.name, "passed")] = case.passes / case.runs
        for name, value in case.means.items():
            found[(case.name, name)] = value
    return found


def compare(before: Report | WhatIfReport, after: Report | None = None) -> Comparison:
    """What changed from `before` to `after`, per case and score, and overall.

    Given a what-if's report alone, what changed from its recorded runs to its new ones.
    """
    if not isinstance(before, Report):
        pair = before  # a what-if report
        before, after = pair.before, pair.after
    if after is None:
        raise TypeError("compare(before, after) needs two reports, or one what-if report")
    old, new = _per_case(before), _per_case(after)
    keys = list(dict.fromkeys([*old, *new]))
    changes = tuple(
        Change(case, score, old.get((case, score)), new.get((case, score))) for case, score in keys
    )
    old_means, new_means = before.means(), after.means()
    if before.results:
        old_means["pass@1"] = before.pass_at(1)
    if after.results:
        new_means["pass@1"] = after.pass_at(1)
    names = list(dict.fromkeys([*old_means, *new_means]))
    overall = tuple(Change(None, n, old_means.get(n), new_means.get(n)) for n in names)
    return Comparison(changes, overall)


def _mean(report: Report, name: str) -> float | None:
    found = _PASS.fullmatch(name)
    if found is None:
        return report.means().get(name)
    k = int(found[2])
    if not 1 <= k <= report.runs_per_case[1]:
        return None
    return report.pass_at(k) if found[1] == "@" else report.pass_hat(k)


def check(
    report: Report,
    *,
    thresholds: Mapping[str, float] | None = None,
    baseline: Report | None = None,
    tolerance: float = 0.0,
) -> list[str]:
    """What fails the gate, one line each (empty: it passes).

    A threshold names a score (its mean over all runs must reach the value) or
    `pass@k` / `pass^k` (over the cases with at least k runs); a name the
    report lacks, or a k above every case's runs, fails too. With a baseline,
    each mean the baseline has (scores and `pass@1`) must not fall more than
    `tolerance` below it.
    """
    problems = []
    for name, least in (thresholds or {}).items():
        value = _mean(report, name)
        if value is None:
            problems.append(f"{name}: the report has no such score")
        elif value < least:
            problems.append(f"{name}: {value:.3f} is below the threshold {least:g}")
    if baseline is not None:
        for name, before in report_means(baseline).items():
            after = _mean(report, name)  # pass^k of the baseline's k, whatever the repeats now
            if after is None:
                problems.append(f"{name}: in the baseline ({before:.3f}) but not in this report")
            elif after < before - tolerance:
                problems.append(f"{name}: {after:.3f} is below the baseline's {before:.3f}")
    return problems
