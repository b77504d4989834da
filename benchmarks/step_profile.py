"""Where one engine step's time goes: a profile of the loop workload, on asyncio and trio.

The ``llm`` <-> ``tool`` loop of ``engine_overhead.py`` (a router after ``llm``, one
message appended per step, a no-op ``on_step``) runs under ``cProfile``; each function's
own CPU time is shown as a share of the whole and as calls per step, grouped by the part
of the engine it belongs to. Profiling slows every call alike, so the shares say where the
time goes, not how long a step takes (``engine_overhead.py`` measures that). The same
workload also runs unprofiled, beside the design floor, on each event loop.

Usage::

    python benchmarks/step_profile.py           # writes its section of RESULTS.md
    python benchmarks/step_profile.py --quick   # fewer steps, prints only
"""

import cProfile
import pstats
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from time import perf_counter
from typing import Any

import anyio
from _common import load_average, machine, publish, section_parser
from _engine_overhead_frameworks import FRAMEWORKS

HEADING = "## Step profile"

GROUPS = (
    ("routing", ("agentgraph/_core/_graph",)),
    (
        "the step (`Runtime.execute`, `run_graph`)",
        ("agentgraph/_core/_runtime", "agentgraph/_core/_recovery"),
    ),
    (
        "contexts and history (data work)",
        ("agentgraph._core._context", "agentgraph/_core/_context"),
    ),
    ("step records (`StepInfo`, events)", ("agentgraph._core._events", "agentgraph/_core/_events")),
    ("the runner (start and end of a run)", ("agentgraph/_core/_runner", "agentgraph/_core/_node")),
    ("the nodes and router of the workload", ("_engine_overhead_frameworks",)),
    ("event loop, builtins and the rest", ("",)),
)
"""Parts of a step, told by the file (or generated class) a function belongs to."""


def _workload(steps: int) -> Callable[[], Any]:
    return FRAMEWORKS["agentgraph"].loop(steps, lambda _: None)


def _group(filename: str) -> str:
    for name, marks in GROUPS:
        if any(mark in filename for mark in marks if mark):
            return name
    return GROUPS[-1][0]


def profile(backend: str, steps: int, runs: int) -> tuple[list[tuple[str, float, float]], float]:
    """Shares of own time per function (top rows) and calls per step, on `backend`."""
    run_once = _workload(steps)

    async def many() -> None:
        for _ in range(runs):
            await run_once()

    anyio.run(many, backend=backend)  # warm up: imports and first-call work stay out
    profiler = cProfile.Profile(time.thread_time)  # CPU time: preemption is not charged
    profiler.enable()
    anyio.run(many, backend=backend)
    profiler.disable()
    stats: Any = pstats.Stats(profiler)
    total = sum(row[2] for row in stats.stats.values())
    total_steps = steps * runs
    rows: dict[str, list[float]] = {}
    for (filename, _line, function), (_cc, calls, own, _cum, _callers) in stats.stats.items():
        where = f"{Path(filename).name}:{function}" if filename != "~" else function
        if filename.startswith("<attrs generated"):
            where = f"{filename.split()[-1].rstrip('>')}.{function}"
        elif "agentgraph" in filename:
            where = f"agentgraph/{filename.rpartition('agentgraph/')[2]}:{function}"
        rows[where] = [own / total * 100, calls / total_steps]
    ours = {k: v for k, v in rows.items() if "agentgraph" in k or "_engine_overhead" in k}
    top = sorted(ours.items(), key=lambda item: item[1][0], reverse=True)[:12]
    groups: dict[str, float] = {}
    for (filename, _line, _function), (_cc, _calls, own, _cum, _callers) in stats.stats.items():
        key = _group(filename)
        groups[key] = groups.get(key, 0.0) + own / total * 100
    table = [(name, share, calls) for name, (share, calls) in top]
    table += [(f"**{name}**", groups.get(name, 0.0), -1.0) for name, _ in GROUPS]
    return table, stats.total_calls / total_steps


def timed(framework: str, backend: str, steps: int, runs: int) -> float:
    """Median µs per step of `framework`'s loop, unprofiled, on `backend`."""
    run_once = FRAMEWORKS[framework].loop(steps, lambda _: None)
    samples: list[float] = []

    async def many() -> None:
        for _ in range(runs):
            started = perf_counter()
            await run_once()
            samples.append((perf_counter() - started) / steps * 1e6)

    anyio.run(many, backend=backend)
    return statistics.median(samples)


def _chain(length: int) -> Any:
    """A chain of `length` nodes that hand their context on unchanged: no data work."""
    from agentgraph import AgentContext, GraphBuilder, node

    @node
    async def same(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx

    with GraphBuilder[int, int]("same") as g:
        last: Any = g.start
        for i in range(length):
            last = last.edge_to(same.with_name(f"n{i}"))
        last.edge_to(g.finish)
    return g.build()


def parts(backend: str, long: int, runs: int) -> dict[str, float]:
    """The engine's own costs in µs, with nodes that do no data work, on `backend`.

    A step's cost is the slope between runs of a 1-node and a `long`-node chain, so
    the start and end of a run fall out of it; the run's own cost is what is left.
    """
    from agentgraph import AgentContext, GraphRunner

    def noop(*_: object) -> None:
        return None

    start = AgentContext(0)
    short_graph, long_graph = _chain(1), _chain(long)
    found: dict[str, float] = {}

    async def median_run(runner: GraphRunner, graph: Any, times: int) -> float:
        samples = []
        for _ in range(times):
            began = perf_counter()
            await runner.run(graph, start)
            samples.append(perf_counter() - began)
        return statistics.median(samples) * 1e6

    async def floor(times: int) -> float:
        async def same(ctx: AgentContext[int]) -> AgentContext[int]:
            return ctx

        handlers = {f"n{i}": same for i in range(long)}
        following = {f"n{i}": f"n{i + 1}" for i in range(long)}
        samples = []
        for _ in range(times):
            began = perf_counter()
            ctx, name = start, "n0"
            while name in handlers:
                ctx = await handlers[name](ctx)
                name = following[name]
            samples.append(perf_counter() - began)
        return statistics.median(samples) * 1e6 / long

    async def measure() -> None:
        for label, runner in (("bare", GraphRunner()), ("on_step", GraphRunner(on_step=noop))):
            one = await median_run(runner, short_graph, runs * 10)
            many = await median_run(runner, long_graph, runs)
            step = (many - one) / (long - 1)
            found[f"step {label}"] = step
            found[f"run {label}"] = one - step
        found["floor"] = await floor(runs)

    anyio.run(measure, backend=backend)
    return found


def _parts_table(found: dict[str, dict[str, float]]) -> list[str]:
    backends = list(found)
    rows = [
        ("a step: count, limit, cancellation, call, handle", lambda f: f["step bare"]),
        (
            "a no-op `on_step` on top (`StepInfo`, a clock read, the call)",
            lambda f: f["step on_step"] - f["step bare"],
        ),
        ("starting and ending a run (no store, sink or handle)", lambda f: f["run on_step"]),
        ("the design floor's dispatch of a step", lambda f: f["floor"]),
    ]
    lines = [
        "| Engine part, nodes doing no data work | "
        + " | ".join(f"{b} µs" for b in backends)
        + " |",
        "|---|" + "--:|" * len(backends),
    ]
    for label, value in rows:
        lines.append(
            f"| {label} | " + " | ".join(f"{value(found[b]):.2f}" for b in backends) + " |"
        )
    return lines


def render(steps: int, runs: int) -> str:
    load = load_average()
    lines = [
        HEADING,
        "",
        "Where a step of the `llm` <-> `tool` loop spends its time (`cProfile`, own time "
        f"per function as a share of the whole; {runs} runs of {steps:,} steps, no-op "
        "`on_step`), measured in CPU time so that other work on the machine is not charged "
        "to whatever ran when it was preempted. Produced by "
        "`python benchmarks/step_profile.py`. The rows list agentgraph's functions and the "
        "workload's; the groups below them add up to the whole.",
        "",
    ]
    found = {backend: parts(backend, 201, runs * 15) for backend in ("asyncio", "trio")}
    lines += [
        "### The engine's own parts",
        "",
        "What the engine itself costs, with nodes that return their context unchanged, "
        "so that no data work is counted: a step's cost is the slope between runs of a "
        "1-node and a 201-node chain, a run's the rest.",
        "",
        *_parts_table(found),
        "",
    ]
    for backend in ("asyncio", "trio"):
        table, calls = profile(backend, steps, runs)
        engine = timed("agentgraph", backend, steps, runs)
        floor = timed("design-floor", backend, steps, runs)
        lines += [
            f"### {backend}",
            "",
            f"Unprofiled: {engine:.2f} µs/step, design floor {floor:.2f} µs/step "
            f"({engine / floor:.2f}x); {calls:.1f} Python function calls per step.",
            "",
            "| Function (own time) | Share | Calls per step |",
            "|---|--:|--:|",
        ]
        lines += [
            f"| {name} | {share:.1f}% | {'' if per < 0 else f'{per:.2f}'} |"
            for name, share, per in table
        ]
        lines.append("")
    lines.append(machine(load, "agentgraph", "anyio", "trio"))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = section_parser(__doc__, "fewer steps; print only")
    args = parser.parse_args(argv)
    steps, runs = (101, 5) if args.quick else (1001, 20)
    publish(render(steps, runs), output=args.output, quick=args.quick)


if __name__ == "__main__":
    main()
