"""Engine overhead: agentgraph beside LangGraph, pydantic-graph and a plain asyncio loop.

Three scenarios, each (framework, scenario) pair measured in its own subprocess so that
peak memory belongs to one case:

- linear: a 10-node chain whose nodes add one to a counter; µs per node step.
- loop: an ``llm`` <-> ``tool`` pair behind a router, each step appending one message to
  the history; µs per step, and the cost of steps 1-100 against the last hundred.
- concurrent: 1,000 concurrent runs of a 10-node chain whose nodes yield to the event
  loop once; µs per step (wall time / steps) and peak RSS.

Usage::

    python benchmarks/engine_overhead.py                        # all cases, writes its section
    python benchmarks/engine_overhead.py --quick                # fewer runs, prints only
    python benchmarks/engine_overhead.py --case agentgraph:loop # one case, one JSON line

Only the ``## Engine overhead`` section of RESULTS.md is replaced; the rest is left alone.

The frameworks' graphs are built in ``_engine_overhead_frameworks.py``, the section in
``_engine_overhead_report.py``.
"""

import asyncio
import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

import _common
from _common import case_parser, measure_in_children, peak_rss_mib
from _common import clean_error as clean_error  # re-exported: the report's error lines
from _engine_overhead_frameworks import FRAMEWORKS, Framework
from _engine_overhead_report import render

CHAIN = 10
"""Nodes in the linear and concurrent chains."""


@dataclass(frozen=True)
class Sizes:
    """How much work each scenario does."""

    linear_runs: int = 2_000
    warmup_runs: int = 100
    loop_runs: int = 20
    loop_steps: int = 1_000
    concurrent_runs: int = 1_000
    concurrent_repeats: int = 3
    concurrent_seconds: float = 1.0


FULL = Sizes()
QUICK = Sizes(
    linear_runs=400, warmup_runs=20, loop_runs=4, concurrent_repeats=1, concurrent_seconds=0.2
)


# -- scenarios --------------------------------------------------------------------------


def _check(got: int, expected: int) -> None:
    if got != expected:
        raise RuntimeError(f"a run produced {got}, expected {expected}")


def measure_linear(framework: Framework, sizes: Sizes) -> dict[str, float]:
    """Sequential runs of the plain chain, each timed alone; the median run, per step.

    Timing runs one by one keeps a moment of contention on the machine out of the median.
    """
    run_once = framework.chain(CHAIN, False)

    async def main() -> list[float]:
        for _ in range(sizes.warmup_runs):
            _check(await run_once(), CHAIN)
        samples = []
        for _ in range(sizes.linear_runs):
            started = perf_counter()
            await run_once()
            samples.append(perf_counter() - started)
        _check(await run_once(), CHAIN)
        return samples

    return {"us_per_step": statistics.median(asyncio.run(main())) / CHAIN * 1e6}


def measure_loop(framework: Framework, sizes: Sizes) -> dict[str, float]:
    """Runs of the llm/tool loop; every node stamps its entry time, so segments are comparable.

    A run has `loop_steps + 1` steps (it starts and ends on `llm`), so the entry into the
    last step closes the interval of step `loop_steps`.
    """
    if sizes.loop_steps % 2 or sizes.loop_steps < 10:
        raise ValueError("loop_steps must be an even number of at least 10")
    total = sizes.loop_steps + 1
    segment = min(100, sizes.loop_steps // 10)
    stamps: list[float] = []
    run_once = framework.loop(total, stamps.append)

    async def main() -> dict[str, list[float]]:
        for _ in range(2):
            _check(await run_once(), total)
        figures: dict[str, list[float]] = {"overall": [], "early": [], "late": []}
        for _ in range(sizes.loop_runs):
            stamps.clear()
            started = perf_counter()
            count = await run_once()
            elapsed = perf_counter() - started
            _check(count, total)
            _check(len(stamps), total)
            last = sizes.loop_steps
            figures["overall"].append(elapsed / total)
            figures["early"].append((stamps[segment] - stamps[0]) / segment)
            figures["late"].append((stamps[last] - stamps[last - segment]) / segment)
        return figures

    medians = {k: statistics.median(v) * 1e6 for k, v in asyncio.run(main()).items()}
    return {
        "us_per_step": medians["overall"],
        "early_us": medians["early"],
        "late_us": medians["late"],
        "late_over_early": medians["late"] / medians["early"],
        "segment": segment,
        "steps": total,
    }


def measure_concurrent(framework: Framework, sizes: Sizes) -> dict[str, float]:
    """Batches of concurrent runs of the yielding chain; wall time over all their steps."""
    run_once = framework.chain(CHAIN, True)
    count = sizes.concurrent_runs

    async def batch(size: int) -> float:
        started = perf_counter()
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(run_once()) for _ in range(size)]
        elapsed = perf_counter() - started
        for task in tasks:
            _check(task.result(), CHAIN)
        return elapsed / (size * CHAIN)

    async def main() -> list[float]:
        await batch(min(100, count))
        samples: list[float] = []
        began = perf_counter()
        # Cheap engines finish a batch in milliseconds: more batches keep a moment of
        # contention on the machine out of their median.
        while len(samples) < sizes.concurrent_repeats or (
            perf_counter() - began < sizes.concurrent_seconds and len(samples) < 50
        ):
            samples.append(await batch(count))
        return samples

    baseline = peak_rss_mib()
    us_per_step = statistics.median(asyncio.run(main())) * 1e6
    peak = peak_rss_mib()
    return {"us_per_step": us_per_step, "peak_rss_mib": peak, "rss_growth_mib": peak - baseline}


SCENARIOS: dict[str, Callable[[Framework, Sizes], dict[str, float]]] = {
    "linear": measure_linear,
    "loop": measure_loop,
    "concurrent": measure_concurrent,
}
CASES = tuple(f"{fw}:{scenario}" for scenario in SCENARIOS for fw in FRAMEWORKS)


def run_case(case: str, sizes: Sizes) -> dict[str, Any]:
    """Measure one `framework:scenario` case in this process."""
    name, _, scenario = case.partition(":")
    if name not in FRAMEWORKS or scenario not in SCENARIOS:
        raise ValueError(f"unknown case {case!r}; known: {', '.join(CASES)}")
    result: dict[str, Any] = {"framework": name, "scenario": scenario}
    result.update(SCENARIOS[scenario](FRAMEWORKS[name], sizes))
    return result


# -- report and command line -------------------------------------------------------------


def render_results(
    results: list[dict[str, Any]], *, sizes: Sizes, load: tuple[float, float] | None = None
) -> str:
    """This benchmark's section of RESULTS.md: results table, targets, method and machine."""
    return render(results, sizes=sizes, chain=CHAIN, load=load)


def write_section(path: Path, section: str) -> None:
    """Put `section` into `path` in place of its old version; nothing else changes.

    A file without it gets it before its first `## ` section: the engine's section leads.
    """
    _common.write_section(path, section, first=True)


def _failed(case: str, error: str) -> dict[str, Any]:
    name, _, scenario = case.partition(":")
    return {"framework": name, "scenario": scenario, "error": error}


def main(argv: list[str] | None = None) -> None:
    args = case_parser(__doc__.splitlines()[0], CASES).parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.case:
        print(json.dumps(run_case(args.case, sizes)), flush=True)
        return
    script = Path(__file__).resolve()
    results, load = measure_in_children(
        script, CASES, quick=args.quick, timeout=600, failed=_failed
    )
    report = render_results(results, sizes=sizes, load=load)
    _common.publish(report, output=args.output, quick=args.quick, first=True)


if __name__ == "__main__":
    main()
