"""What an evaluation found: one `RunResult` per case and repeat, and their aggregates.

With n runs of a case of which c passed, the unbiased estimators are
pass@k = 1 - C(n-c, k) / C(n, k) (at least one of k runs passes) and
pass^k = C(c, k) / C(n, k) (all k runs pass), for every k <= n. A run passes
when it finished and none of its scores failed (see `Score.passed`).
Cases may have different numbers of runs (recorded runs read from a store
usually do): each case's pass@k is over its own n, and a report's pass@k is
the mean over the cases that have at least k runs.
A report is plain data: it saves as JSON and loads back, as a baseline.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from .._core._errors import DatasetError
from ..llm._messages import Usage
from ._score import Score

__all__ = ("CaseSummary", "Report", "RunResult", "pass_at_k", "pass_hat_k")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of `k` runs passes, from `c` passes in `n` runs."""
    _check(n, c, k)
    return 1.0 - _chances(n, n - c, k)[-1]


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that all `k` runs pass (pass^k), from `c` passes in `n` runs."""
    _check(n, c, k)
    return _chances(n, c, k)[-1]


def _chances(n: int, m: int, most: int) -> list[float]:
    """C(m, k) / C(n, k) for k = 1..most, each from the one before.

    The ratio is the product of (m - i) / (n - i) for i < k: one float
    multiplication per k, where the binomials themselves are integers of
    hundreds of digits once n is in the thousands (a case scored over many
    recorded runs), and dividing them for every k costs more than quadratic.
    """
    out, ratio = [], 1.0
    for i in range(most):
        ratio *= max(m - i, 0) / (n - i)
        out.append(ratio)
    return out


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, not n={n}, c={c}, k={k}")


@attrs.frozen
class RunResult:
    """One run of one case: its output, scores, usage, cost, duration, run id and error.

    `output` is plain JSON data and `error` is `Type: message`; secrets in
    both, and in score reasons, are masked as in traces.
    """

    case: str
    repeat: int
    output: Any
    scores: tuple[Score, ...]
    usage: Usage = attrs.field(factory=Usage)
    cost: float | None = None
    duration: float = 0.0
    run_id: str = ""
    error: str | None = None

    @property
    def passed(self) -> bool:
        """The run finished and no score failed."""
        return self.error is None and all(s.passed is not False for s in self.scores)

    def score(self, name: str) -> Score | None:
        """The score named `name`, if the run has one."""
        return next((s for s in self.scores if s.name == name), None)


@attrs.frozen
class CaseSummary:
    """A case over its repeats: runs, passes, pass@k and pass^k (index k-1), mean scores."""

    name: str
    runs: int
    passes: int
    pass_at: tuple[float, ...]
    pass_hat: tuple[float, ...]
    means: Mapping[str, float]
    errors: int


def _number(score: Score) -> float | None:
    value = score.value
    if isinstance(value, bool | int | float):
        return float(value)
    return None


def mean_scores(results: Iterable[RunResult]) -> dict[str, float]:
    """Per score name, the mean of its numeric values (a bool counts 1 or 0; an error 0)."""
    sums: dict[str, list[float]] = {}
    for result in results:
        for score in result.scores:
            number = 0.0 if score.error is not None else _number(score)
            if number is not None:
                sums.setdefault(score.name, []).append(number)
    return {name: sum(values) / len(values) for name, values in sums.items()}


def _results(items: Iterable[RunResult]) -> tuple[RunResult, ...]:
    return tuple(items)


def every_k(cases: Sequence[CaseSummary]) -> list[tuple[float, float, int]]:
    """For k = 1, 2, ... up to the most runs of a case: mean pass@k, mean pass^k, cases counted.

    Each mean is over the cases with at least k runs, as `Report.pass_at` has
    it; one pass over the summaries, where asking the report for every k
    would regroup its runs for each.
    """
    most = max((case.runs for case in cases), default=0)
    at, hat, counted = [0.0] * most, [0.0] * most, [0] * most
    for case in cases:
        for i in range(case.runs):
            at[i] += case.pass_at[i]
            hat[i] += case.pass_hat[i]
            counted[i] += 1
    return [(a / n, h / n, n) for a, h, n in zip(at, hat, counted, strict=True)]


@attrs.frozen
class Report:
    """The results of `evaluate`: every run, per case summaries and aggregates.

    How many runs each case has follows from the results: `repeat` when every
    case has the same number, `runs_per_case` (the fewest and the most) always.
    """

    name: str
    results: tuple[RunResult, ...] = attrs.field(converter=_results)

    def _grouped(self) -> dict[str, list[RunResult]]:
        grouped: dict[str, list[RunResult]] = {}
        for result in self.results:
            grouped.setdefault(result.case, []).append(result)
        return grouped

    @property
    def runs_per_case(self) -> tuple[int, int]:
        """The fewest and the most runs any case has; `(0, 0)` for a report without runs."""
        counts = [len(runs) for runs in self._grouped().values()]
        return (min(counts), max(counts)) if counts else (0, 0)

    @property
    def repeat(self) -> int | None:
        """The runs every case has, or None when cases have different numbers of runs."""
        fewest, most = self.runs_per_case
        return most if fewest == most and most else None

    def cases(self) -> tuple[CaseSummary, ...]:
        """One summary per case, in the dataset's order; each over its own runs."""
        summaries = []
        for name, runs in self._grouped().items():
            n, c = len(runs), sum(r.passed for r in runs)
            summaries.append(
                CaseSummary(
                    name,
                    n,
                    c,
                    tuple(1.0 - p for p in _chances(n, n - c, n)),
                    tuple(_chances(n, c, n)),
                    mean_scores(runs),
                    sum(r.error is not None for r in runs),
                )
            )
        return tuple(summaries)

    def means(self) -> dict[str, float]:
        """Per score name, its mean over every run."""
        return mean_scores(self.results)

    def pass_at(self, k: int) -> float:
        """pass@k averaged over the cases that have at least `k` runs.

        Raises:
            ValueError: `k` is below 1, or above the most runs any case has.
        """
        return self._mean_chance(k, pass_at_k)

    def pass_hat(self, k: int) -> float:
        """pass^k averaged over the cases that have at least `k` runs.

        Raises:
            ValueError: `k` is below 1, or above the most runs any case has.
        """
        return self._mean_chance(k, pass_hat_k)

    def counted(self, k: int) -> int:
        """How many cases have at least `k` runs: those `pass_at(k)` and `pass_hat(k)` average."""
        return sum(len(runs) >= k for runs in self._grouped().values())

    def _mean_chance(self, k: int, chance: Callable[[int, int, int], float]) -> float:
        grouped = self._grouped()
        most = max((len(runs) for runs in grouped.values()), default=0)
        if not 1 <= k <= most:
            raise ValueError(
                f"pass@k and pass^k need 1 <= k <= n, the most runs of a case: k={k}, n={most}"
            )
        values = [
            chance(len(runs), sum(r.passed for r in runs), k)
            for runs in grouped.values()
            if len(runs) >= k
        ]
        return sum(values) / len(values)

    @property
    def usage(self) -> Usage:
        """The agent's model usage over every run."""
        return sum((r.usage for r in self.results), Usage())

    @property
    def evaluator_usage(self) -> Usage:
        """What evaluators themselves spent on models (LLM judges), apart from the agent."""
        return sum((s.usage for r in self.results for s in r.scores if s.usage), Usage())

    @property
    def cost(self) -> float | None:
        """The agent's cost over every run, when every run's cost is known."""
        costs = [r.cost for r in self.results]
        return None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)

    def to_data(self) -> dict[str, Any]:
        """The report as plain JSON data."""
        return {
            "name": self.name,
            "repeat": self.repeat,
            "runs_per_case": list(self.runs_per_case),
            "results": [_result(r) for r in self.results],
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the report as JSON (for a later `compare` or `--baseline`)."""
        Path(path).write_bytes(orjson.dumps(self.to_data(), option=orjson.OPT_INDENT_2))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Report:
        """Read a report `save` wrote.

        Raises:
            DatasetError: the file cannot be read or is not a report.
        """
        source = str(path)
        try:
            data = orjson.loads(Path(path).read_bytes())
            # `repeat` is derived from the results: what the file says of it is not read.
            return cls(str(data["name"]), [_from_result(r) for r in data["results"]])
        except OSError as exc:
            raise DatasetError(source, exc.strerror or str(exc)) from exc
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise DatasetError(source, f"not a report: {type(exc).__name__}: {exc}") from exc


def _result(r: RunResult) -> dict[str, Any]:
    return {
        "case": r.case,
        "repeat": r.repeat,
        "passed": r.passed,
        "output": r.output,
        "scores": [_score(s) for s in r.scores],
        "usage": attrs.asdict(r.usage),
        "cost": r.cost,
        "duration": r.duration,
        "run_id": r.run_id,
        "error": r.error,
    }


def _score(s: Score) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": s.name,
        "value": s.value,
        "reason": s.reason,
        "passed": s.passed,
    }
    if s.error is not None:
        data["error"] = s.error
    if s.usage is not None:
        data["usage"] = attrs.asdict(s.usage)
    return data


def _from_result(d: Mapping[str, Any]) -> RunResult:
    scores = tuple(
        Score(
            s["name"],
            s["value"],
            s.get("reason"),
            s.get("passed"),
            s.get("error"),
            Usage(**s["usage"]) if s.get("usage") else None,
        )
        for s in d["scores"]
    )
    return RunResult(
        str(d["case"]),
        int(d["repeat"]),
        d.get("output"),
        scores,
        Usage(**d.get("usage", {})),
        d.get("cost"),
        float(d.get("duration", 0.0)),
        str(d.get("run_id", "")),
        d.get("error"),
    )
