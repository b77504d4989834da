"""LLM path profile: where agentgraph's client CPU per request goes, beside bare httpx.

The LLM path's task (``_llm_path_task.py``: two tool turns and an answer, three
chat-completion requests per run) is run by `react_agent` over `OpenAIModel` and by the
bare-httpx contender of ``llm_path.py`` (hand-built JSON, the same connection pools),
each in a fresh interpreter with the loopback fake server in a thread of its own. Only
the event loop's thread is measured (`time.thread_time`), so neither the server nor the
load on the machine is charged to the client.

Two measurements per contender:

- **CPU per request**: thread CPU over a batch of concurrent runs divided by the model
  requests, with no profiler; the contenders take turns batch by batch and the median
  is reported. With ``--before REV`` agentgraph at that revision (checked out into a
  temporary worktree) takes its turn as well, so before and after share the machine.
- **Profile**: the same batch under `cProfile` with `time.thread_time_ns` as the timer,
  own time (tottime) summed by area and the agentgraph functions with the most
  inclusive time, per request. The profiler's own cost inflates these figures; compare
  them with each other, not with the unprofiled ones.

Usage::

    python benchmarks/llm_profile.py                    # writes its section of RESULTS.md
    python benchmarks/llm_profile.py --quick            # fewer runs; prints only
    python benchmarks/llm_profile.py --before 4c5ab3e   # adds the earlier revision's row
"""

import argparse
import asyncio
import cProfile
import gc
import os
import pstats
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from _common import ChildFailed, load_average, publish, python, run_child, versions

HERE = Path(__file__).resolve().parent
HEADING = "## LLM path profile"
CONTENDERS = ("httpx", "agentgraph")

# Areas of own time, first match wins: (label, substrings of the code's file name).
AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("agentgraph: provider client (`agentgraph/llm`)", ("agentgraph/llm/",)),
    ("agentgraph: agent and chat nodes (`agentgraph/nodes`)", ("agentgraph/nodes/",)),
    ("agentgraph: tools (`agentgraph/tools`)", ("agentgraph/tools/",)),
    ("agentgraph: engine, context, events (rest of `agentgraph`)", ("agentgraph/",)),
    ("benchmark task (the contender's loop, the tools)", ("benchmarks/",)),
    ("httpx", ("/httpx/",)),
    ("httpcore, h11", ("/httpcore/", "/h11/")),
    ("anyio", ("/anyio/",)),
    ("asyncio", ("/asyncio/",)),
)


def area(filename: str, function: str) -> str:
    """The area a profiled function's own time is charged to."""
    if filename == "~":  # built-ins: the JSON codecs are worth naming
        if "orjson" in function:
            return "orjson"
        return "built-in functions"
    for label, needles in AREAS:
        if any(needle in filename for needle in needles):
            return label
    return "other Python"


async def _contender(name: str, url: str, stack: AsyncExitStack) -> Any:
    from _llm_path_pool import Pool
    from llm_path import agentgraph_contender, httpx_contender

    pool = Pool(shards=5, connections=10)
    make = agentgraph_contender if name.startswith("agentgraph") else httpx_contender
    return await make(url, pool, stack)


async def _batch(run_once: Any, first: int, runs: int) -> int:
    from _llm_path_task import expected_answer

    requests = 0
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(run_once(i)) for i in range(first, first + runs)]
    for i, task in zip(range(first, first + runs), tasks, strict=True):
        answer, made = task.result()
        if answer != expected_answer(i):
            raise RuntimeError(f"run {i} answered {answer!r}")
        requests += made
    return requests


async def _child(name: str, runs: int, profile: bool) -> dict[str, Any]:
    from _llm_path_task import respond

    from agentgraph.testing import FakeServer

    with FakeServer(responder=respond) as server:
        async with AsyncExitStack() as stack:
            run_once = await _contender(name, server.openai_url, stack)
            await _batch(run_once, 0, runs)  # warm-up: connections, caches, imports
            gc.collect()
            profiler = cProfile.Profile(time.thread_time_ns, 1e-9) if profile else None
            start = time.thread_time()
            if profiler is not None:
                profiler.enable()
            requests = await _batch(run_once, runs, runs)
            if profiler is not None:
                profiler.disable()
            cpu = time.thread_time() - start
    result: dict[str, Any] = {"requests": requests, "cpu_ms": cpu * 1e3 / requests}
    if profiler is not None:
        result.update(_summary(pstats.Stats(profiler), requests))
    return result


def _summary(stats: pstats.Stats, requests: int) -> dict[str, Any]:
    """Own time by area and the agentgraph functions with most inclusive time, µs/request."""
    areas: dict[str, float] = {}
    calls = 0
    top: list[tuple[float, float, int, str]] = []
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, line, function), (_, ncalls, tottime, cumtime, _) in raw.items():
        label = area(filename, function)
        areas[label] = areas.get(label, 0.0) + tottime * 1e6 / requests
        calls += ncalls
        if "agentgraph/" in filename:
            short = filename[filename.rindex("agentgraph/") :]
            top.append(
                (
                    cumtime * 1e6 / requests,
                    tottime * 1e6 / requests,
                    ncalls,
                    f"{short}:{line} {function}",
                )
            )
    top.sort(reverse=True)
    return {
        "areas": areas,
        "calls": calls / requests,
        "top": [
            {"cum_us": c, "own_us": o, "calls": n / requests, "where": w} for c, o, n, w in top[:25]
        ],
    }


# -- the parent: turns, medians, the section -----------------------------------------------


def _measure(name: str, runs: int, tree: Path | None, *, profile: bool = False) -> dict[str, Any]:
    previous = os.environ.get("PYTHONPATH")
    if tree is not None:
        os.environ["PYTHONPATH"] = str(tree)
    try:
        args = ["--child", name, "--runs", str(runs), *(["--profile"] if profile else [])]
        result: dict[str, Any] = run_child(HERE / "llm_profile.py", *args, timeout=600)
        return result
    finally:
        if tree is not None:
            if previous is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = previous


def render(
    cpu: dict[str, list[float]],
    profiles: dict[str, dict[str, Any]],
    *,
    runs: int,
    rounds: int,
    before: str | None,
    load: tuple[float, float],
) -> str:
    base = statistics.median(cpu["httpx"])
    labels = {
        "httpx": "bare httpx (hand-built JSON)",
        "agentgraph": "agentgraph (`react_agent`, `OpenAIModel`)",
        "agentgraph-before": f"agentgraph at `{before}` (before)",
    }
    lines = [
        HEADING,
        "",
        f"Client CPU of the LLM path's task ({runs} concurrent ReAct runs, three chat-completion "
        "requests each) against the loopback fake provider answering at once, measured on the "
        "event loop's thread only (`time.thread_time`). Produced by "
        "`python benchmarks/llm_profile.py`; each contender runs in a fresh interpreter, after "
        f"a warm-up batch, taking turns with the others; the median of {rounds} turns.",
        "",
        "| Client | CPU µs/request | vs bare httpx | turns (µs/request) |",
        "|---|--:|--:|---|",
    ]
    for name in cpu:
        median = statistics.median(cpu[name])
        turns = ", ".join(f"{v * 1e3:.0f}" for v in cpu[name])
        lines.append(f"| {labels[name]} | {median * 1e3:.0f} | {median / base:.2f}x | {turns} |")
    ours, bare = profiles["agentgraph"], profiles["httpx"]
    lines += [
        "",
        "### Own time by area (profiled, µs/request)",
        "",
        "`cProfile` with `time.thread_time_ns` as its timer over one batch; own time "
        "(tottime) of every function summed by where its code lives. The profiler's cost "
        "per call inflates these figures, most where calls are many and short.",
        "",
        "| Area | agentgraph | bare httpx | extra |",
        "|---|--:|--:|--:|",
    ]
    names = sorted(
        set(ours["areas"]) | set(bare["areas"]),
        key=lambda a: -(ours["areas"].get(a, 0.0) - bare["areas"].get(a, 0.0)),
    )
    for name in names:
        a, b = ours["areas"].get(name, 0.0), bare["areas"].get(name, 0.0)
        lines.append(f"| {name} | {a:.0f} | {b:.0f} | {a - b:+.0f} |")
    total_a, total_b = sum(ours["areas"].values()), sum(bare["areas"].values())
    lines += [
        f"| **total** | **{total_a:.0f}** | **{total_b:.0f}** | **{total_a - total_b:+.0f}** |",
        f"| Python function calls per request | {ours['calls']:.0f} | {bare['calls']:.0f} | "
        f"{ours['calls'] - bare['calls']:+.0f} |",
        "",
        "### agentgraph functions by inclusive time (profiled, µs/request)",
        "",
        "| Function | inclusive | own | calls/request |",
        "|---|--:|--:|--:|",
    ]
    for row in ours["top"][:20]:
        lines.append(
            f"| `{row['where']}` | {row['cum_us']:.0f} | {row['own_us']:.0f} | {row['calls']:.1f} |"
        )
    lines += [
        "",
        "### Machine",
        "",
        f"- {python()}; {versions('httpx', 'httpcore', 'orjson')}",
        f"- 1-minute load average {load[0]:.2f} before the run, {load[1]:.2f} after",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs; print only")
    parser.add_argument("--before", help="also measure agentgraph at this git revision")
    parser.add_argument("--runs", type=int, help="concurrent runs per batch")
    parser.add_argument("--rounds", type=int, help="turns per contender")
    parser.add_argument("--output", type=Path, help="write the section here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    runs = args.runs or (50 if args.quick else 200)
    if args.child:
        sys.path.insert(0, str(HERE))
        print(json_line(asyncio.run(_child(args.child, runs, args.profile))))
        return
    rounds = args.rounds or (3 if args.quick else 7)
    load_before = load_average()
    with _trees(args.before) as trees:
        cpu: dict[str, list[float]] = {name: [] for name in trees}
        try:
            for _ in range(rounds):
                for name, tree in trees.items():
                    cpu[name].append(_measure(name, runs, tree)["cpu_ms"])
            profiles = {name: _measure(name, runs, None, profile=True) for name in CONTENDERS}
        except ChildFailed as failed:
            sys.exit(f"a contender failed: {failed}")
    section = render(
        cpu,
        profiles,
        runs=runs,
        rounds=rounds,
        before=args.before,
        load=(load_before, load_average()),
    )
    publish(section, output=args.output, quick=args.quick)


def json_line(value: Any) -> str:
    import json

    return json.dumps(value)


class _trees:
    """The trees to measure: this one's contenders, and the earlier revision's agentgraph."""

    def __init__(self, before: str | None) -> None:
        self._before = before
        self._checkout: Any = None

    def __enter__(self) -> dict[str, Path | None]:
        trees: dict[str, Path | None] = {name: None for name in CONTENDERS}
        if self._before is not None:
            from before_after import checkout

            self._checkout = checkout(self._before)
            trees["agentgraph-before"] = self._checkout.__enter__()
        return trees

    def __exit__(self, *exc: object) -> None:
        if self._checkout is not None:
            self._checkout.__exit__(*exc)


if __name__ == "__main__":
    main()
