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

Peers are imported inside their own functions, so agentgraph and the floor run without them.
"""

import argparse
import asyncio
import datetime
import json
import operator
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from importlib import metadata
from itertools import pairwise
from pathlib import Path
from time import perf_counter
from typing import Annotated, Any, NamedTuple, TypedDict

from agentgraph import AgentContext, GraphBuilder, GraphRunner, Message, Node, node

RunOnce = Callable[[], Coroutine[Any, Any, int]]
Stamp = Callable[[float], None]

CHAIN = 10
"""Nodes in the linear and concurrent chains."""

HEADING = "## Engine overhead"
"""This benchmark's section of RESULTS.md; other benchmarks write their own sections."""

# Built once: the figures measure the engines, not message construction.
ASSISTANT = Message.assistant("calling the probe tool")
TOOL = Message.tool("call-1", "probe result", name="probe")


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


class Framework(NamedTuple):
    """How one framework builds the two graph shapes; each returns a coroutine factory."""

    chain: Callable[[int, bool], RunOnce]
    loop: Callable[[int, Stamp], RunOnce]


# -- agentgraph ------------------------------------------------------------------------


def _on_step_noop(step: object, node: object, ctx: object) -> None:
    return None


def _agentgraph_chain(length: int, yielding: bool) -> RunOnce:
    import anyio

    def make(i: int) -> Node[int, int]:
        if yielding:

            @node(name=f"n{i}")
            async def step(ctx: AgentContext[int]) -> AgentContext[int]:
                await anyio.sleep(0)
                return ctx.with_input(ctx.input + 1)

        else:

            @node(name=f"n{i}")
            async def step(ctx: AgentContext[int]) -> AgentContext[int]:
                return ctx.with_input(ctx.input + 1)

        return step

    with GraphBuilder[int, int]("chain") as g:
        last: Node[Any, int] = g.start
        for i in range(length):
            last = last.edge_to(make(i))
        last.edge_to(g.finish)
    graph = g.build()
    runner = GraphRunner(on_step=_on_step_noop)
    start = AgentContext(0)

    async def run_once() -> int:
        return (await runner.run(graph, start)).input

    return run_once


def _agentgraph_loop(total: int, stamp: Stamp) -> RunOnce:
    @node
    async def llm(ctx: AgentContext[None]) -> AgentContext[None]:
        stamp(perf_counter())
        return ctx.append(ASSISTANT)

    @node
    async def tool(ctx: AgentContext[None]) -> AgentContext[None]:
        stamp(perf_counter())
        return ctx.append(TOOL)

    def more(ctx: AgentContext[None]) -> Node[None, None] | None:
        return tool if len(ctx.history) < total else None

    with GraphBuilder[None, None]("loop") as g:
        g.start.edge_to(llm)
        llm.edge_to(more, targets=(tool,))
        llm.edge_to(g.finish)
        tool.edge_to(llm)
    graph = g.build()
    runner = GraphRunner(max_steps=total + 1, on_step=_on_step_noop)
    start = AgentContext(None)

    async def run_once() -> int:
        return len((await runner.run(graph, start)).history)

    return run_once


# -- LangGraph --------------------------------------------------------------------------


class _Counter(TypedDict):
    count: int


class _Chat(TypedDict):
    messages: Annotated[list[Message], operator.add]


def _langgraph_chain(length: int, yielding: bool) -> RunOnce:
    from langgraph.graph import END, START, StateGraph

    async def add(state: _Counter) -> dict[str, int]:
        return {"count": state["count"] + 1}

    async def add_yielding(state: _Counter) -> dict[str, int]:
        await asyncio.sleep(0)
        return {"count": state["count"] + 1}

    builder = StateGraph(_Counter)
    names = [f"n{i}" for i in range(length)]
    for name in names:
        builder.add_node(name, add_yielding if yielding else add)
    for source, target in pairwise([START, *names, END]):
        builder.add_edge(source, target)
    graph = builder.compile()

    async def run_once() -> int:
        return int((await graph.ainvoke({"count": 0}))["count"])

    return run_once


def _langgraph_loop(total: int, stamp: Stamp) -> RunOnce:
    from langgraph.graph import END, START, StateGraph

    async def llm(state: _Chat) -> dict[str, list[Message]]:
        stamp(perf_counter())
        return {"messages": [ASSISTANT]}

    async def tool(state: _Chat) -> dict[str, list[Message]]:
        stamp(perf_counter())
        return {"messages": [TOOL]}

    def more(state: _Chat) -> str:
        return "tool" if len(state["messages"]) < total else END

    builder = StateGraph(_Chat)
    builder.add_node("llm", llm)
    builder.add_node("tool", tool)
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", more, ["tool", END])
    builder.add_edge("tool", "llm")
    graph = builder.compile()
    # One superstep per node here, so the limit only has to exceed the step count.
    config: Any = {"recursion_limit": total + 10}

    async def run_once() -> int:
        return len((await graph.ainvoke({"messages": []}, config))["messages"])

    return run_once


# -- pydantic-graph ---------------------------------------------------------------------


@dataclass
class _ChatState:
    messages: list[Message] = field(default_factory=list)


def _pydantic_graph_chain(length: int, yielding: bool) -> RunOnce:
    from pydantic_graph import GraphBuilder as PydanticGraphBuilder
    from pydantic_graph import StepContext

    g = PydanticGraphBuilder(name="chain", input_type=int, output_type=int)

    async def add(ctx: StepContext[None, None, int]) -> int:
        return ctx.inputs + 1

    async def add_yielding(ctx: StepContext[None, None, int]) -> int:
        await asyncio.sleep(0)
        return ctx.inputs + 1

    steps = [g.step(add_yielding if yielding else add, node_id=f"n{i}") for i in range(length)]
    g.add(
        g.edge_from(g.start_node).to(steps[0]),
        *(g.edge_from(source).to(target) for source, target in pairwise(steps)),
        g.edge_from(steps[-1]).to(g.end_node),
    )
    graph = g.build()

    async def run_once() -> int:
        return await graph.run(inputs=0)

    return run_once


def _pydantic_graph_loop(total: int, stamp: Stamp) -> RunOnce:
    from pydantic_graph import GraphBuilder as PydanticGraphBuilder
    from pydantic_graph import StepContext

    g = PydanticGraphBuilder(name="loop", state_type=_ChatState, output_type=int)

    @g.step
    async def llm(ctx: StepContext[_ChatState, None, None]) -> int:
        stamp(perf_counter())
        ctx.state.messages.append(ASSISTANT)
        return len(ctx.state.messages)

    @g.step
    async def tool(ctx: StepContext[_ChatState, None, int]) -> None:
        stamp(perf_counter())
        ctx.state.messages.append(TOOL)

    route = (
        g.decision()
        .branch(g.match(int, matches=lambda count: count < total).to(tool))
        .branch(g.match(int).to(g.end_node))
    )
    g.add(
        g.edge_from(g.start_node).to(llm),
        g.edge_from(llm).to(route),
        g.edge_from(tool).to(llm),
    )
    graph = g.build()

    async def run_once() -> int:
        return await graph.run(state=_ChatState())

    return run_once


# -- the floor: a hand-written asyncio loop ---------------------------------------------


def _floor_chain(length: int, yielding: bool) -> RunOnce:
    async def add(value: int) -> int:
        return value + 1

    async def add_yielding(value: int) -> int:
        await asyncio.sleep(0)
        return value + 1

    steps = [add_yielding if yielding else add] * length

    async def run_once() -> int:
        value = 0
        for step in steps:
            value = await step(value)
        return value

    return run_once


Handler = Callable[[list[Message]], Awaitable[Any]]


def _floor_loop(total: int, stamp: Stamp) -> RunOnce:
    async def llm(history: list[Message]) -> Handler | None:
        stamp(perf_counter())
        history.append(ASSISTANT)
        return tool if len(history) < total else None

    async def tool(history: list[Message]) -> Handler:
        stamp(perf_counter())
        history.append(TOOL)
        return llm

    async def run_once() -> int:
        history: list[Message] = []
        step: Handler | None = llm
        while step is not None:
            step = await step(history)
        return len(history)

    return run_once


FRAMEWORKS = {
    "agentgraph": Framework(_agentgraph_chain, _agentgraph_loop),
    "langgraph": Framework(_langgraph_chain, _langgraph_loop),
    "pydantic-graph": Framework(_pydantic_graph_chain, _pydantic_graph_loop),
    "floor": Framework(_floor_chain, _floor_loop),
}


# -- scenarios --------------------------------------------------------------------------


def _check(got: int, expected: int) -> None:
    if got != expected:
        raise RuntimeError(f"a run produced {got}, expected {expected}")


def _peak_rss_mib() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes vs KiB


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

    baseline = _peak_rss_mib()
    us_per_step = statistics.median(asyncio.run(main())) * 1e6
    peak = _peak_rss_mib()
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


# -- report -----------------------------------------------------------------------------

Results = dict[tuple[str, str], dict[str, Any]]


def _ratio(results: Results, scenario: str, framework: str) -> float | None:
    """`framework`'s time per step over agentgraph's in the same scenario."""
    own = results.get((scenario, framework), {}).get("us_per_step")
    base = results.get((scenario, "agentgraph"), {}).get("us_per_step")
    return None if own is None or not base else own / base


def _cell(value: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def _table(results: Results) -> list[str]:
    lines = [
        "| Scenario | Framework | µs/step | x agentgraph | Steps 1-100 µs/step "
        "| Last 100 µs/step | Last / first | Peak RSS MiB | RSS growth MiB |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for (scenario, framework), r in results.items():
        if "error" in r:
            lines.append(f"| {scenario} | {framework} | not measured: {r['error']} |||||||")
            continue
        cells = [
            _cell(r["us_per_step"]),
            _cell(_ratio(results, scenario, framework), ".3g", "x"),
            _cell(r.get("early_us")),
            _cell(r.get("late_us")),
            _cell(r.get("late_over_early"), ".2f", "x"),
            _cell(r.get("peak_rss_mib"), ".0f"),
            _cell(r.get("rss_growth_mib"), ".0f"),
        ]
        lines.append(f"| {scenario} | {framework} | {' | '.join(cells)} |")
    return lines


def _at_most(measured: float | None, limit: float, unit: str) -> tuple[str, str]:
    if measured is None:
        return "-", "not measured"
    shown = f"{measured:.2f}{unit}"
    gap = abs(measured - limit) / limit * 100
    if measured <= limit:
        return shown, f"met ({gap:.0f}% under the limit)"
    return shown, f"**missed** by {measured - limit:.2f}{unit} ({gap:.0f}% over)"


def _at_least(measured: float | None, factor: float) -> tuple[str, str]:
    if measured is None:
        return "-", "not measured"
    shown = f"{measured:.1f}x faster"
    if measured >= factor:
        return shown, f"met ({measured / factor:.1f}x the required margin)"
    return shown, f"**missed**: {factor - measured:.1f}x short ({measured / factor:.0%} of it)"


def _targets(results: Results) -> list[str]:
    def agentgraph(scenario: str, key: str = "us_per_step") -> float | None:
        value = results.get((scenario, "agentgraph"), {}).get(key)
        return None if value is None else float(value)

    rows = []
    for scenario in ("linear", "loop"):
        rows.append((f"{scenario}: ≤ 10 µs/step", *_at_most(agentgraph(scenario), 10, " µs")))
        for peer, factor in (("langgraph", 20), ("pydantic-graph", 7)):
            rows.append(
                (
                    f"{scenario}: ≥ {factor}x faster than {peer}",
                    *_at_least(_ratio(results, scenario, peer), factor),
                )
            )
    rows.append(("concurrent: ≤ 15 µs/step", *_at_most(agentgraph("concurrent"), 15, " µs")))
    late = agentgraph("loop", "late_over_early")
    rows.append(("loop: last 100 steps ≤ 1.2x steps 1-100", *_at_most(late, 1.2, "x")))
    lines = ["| Target (agentgraph) | Measured | Verdict |", "|---|--:|---|"]
    return lines + [f"| {target} | {shown} | {verdict} |" for target, shown, verdict in rows]


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _os_name() -> str:
    kernel = f"{platform.system()} {platform.release()}"
    try:
        with open("/etc/os-release") as release:
            for line in release:
                if line.startswith("PRETTY_NAME="):
                    return f"{line.partition('=')[2].strip().strip(chr(34))}, {kernel}"
    except OSError:
        pass
    return kernel


def _environment(load: tuple[float, float] | None) -> list[str]:
    packages = ("agentgraph", "langgraph", "pydantic-graph", "anyio")
    lines = [
        f"- Python {platform.python_version()} ({platform.python_implementation()})",
        "- " + ", ".join(f"{package} {_version(package)}" for package in packages),
        f"- CPU: {_cpu_model()}, {os.cpu_count()} cores",
        f"- OS: {_os_name()}",
        f"- Date: {datetime.datetime.now(datetime.UTC).date().isoformat()}",
    ]
    if load is not None:
        # Other work on the machine inflates every figure; this says how much there was.
        lines.append(
            f"- 1-minute load average: {load[0]:.2f} before the run, {load[1]:.2f} after "
            "(the benchmark itself keeps one core busy)"
        )
    return lines


def _method(sizes: Sizes) -> list[str]:
    return [
        f"- **linear**: a {CHAIN}-node chain, each node adds one to a counter; "
        f"{sizes.linear_runs:,} sequential runs after {sizes.warmup_runs} warm-up runs, "
        "each timed alone; the median run over its steps.",
        f"- **loop**: `llm` and `tool` nodes; a router after `llm` goes back to `tool` until "
        f"the history holds {sizes.loop_steps + 1:,} messages, so a run is "
        f"{sizes.loop_steps + 1:,} steps, each appending one pre-built message. Every node "
        "records `perf_counter()` on entry; a segment's cost is the time from the entry into "
        "its first step to the entry into the step after it, over its length. Median of "
        f"{sizes.loop_runs} runs (after 2 warm-up runs).",
        f"- **concurrent**: {sizes.concurrent_runs:,} runs of a {CHAIN}-node chain started "
        "together in one `asyncio.TaskGroup`; each node yields once (`anyio.sleep(0)` in "
        "agentgraph, `asyncio.sleep(0)` elsewhere, the same call on asyncio). Wall time over "
        f"all steps, median of at least {sizes.concurrent_repeats} batches (more, up to 50, "
        f"while they take under {sizes.concurrent_seconds:g} s in all) after a warm-up batch. Peak "
        "RSS is the process's `ru_maxrss`; growth is the peak minus the peak before the "
        "scenario began (after imports and graph building).",
        "- Every case runs in its own process, on asyncio, with nodes written as `async def`.",
        "- **agentgraph**: `GraphBuilder` with `edge_to` and a router with declared targets; "
        "`GraphRunner(on_step=<no-op>)`; history grows with `ctx.append(message)`.",
        "- **LangGraph**: `StateGraph` over a `TypedDict`, `add_conditional_edges` for the "
        "router, `ainvoke` without a checkpointer; the history is a state key with the "
        "`Annotated[list, operator.add]` reducer, each node returning a one-message list; "
        "`recursion_limit` set above the step count.",
        "- **pydantic-graph**: `GraphBuilder` steps wired with `edge_from(...).to(...)`, the "
        "router a `decision()` with `match(int, matches=...)` branches; the history a list "
        "in the run state, mutated in place (`ctx.state.messages.append`); `Graph.run`.",
        "- **floor**: plain `async def` functions awaited one after another in a loop; the "
        "loop's router is the returned next function; the history a list.",
    ]


def render_results(
    results: list[dict[str, Any]], *, sizes: Sizes, load: tuple[float, float] | None = None
) -> str:
    """This benchmark's section of RESULTS.md: results table, targets, method and machine."""
    keyed = {(r["scenario"], r["framework"]): r for r in results}
    lines = [
        HEADING,
        "",
        "What the engine costs per step, with nodes that do nearly nothing. "
        "Produced by `make bench` (`python benchmarks/engine_overhead.py`); "
        "lower is better.",
        "",
        *_table(keyed),
        "",
        "`x agentgraph` is the framework's time per step over agentgraph's in the same "
        "scenario. The loop's last two columns compare steps 1-100 with the last 100 steps "
        f"({sizes.loop_steps - 99:,}-{sizes.loop_steps:,}).",
        "",
        "### Targets",
        "",
        *_targets(keyed),
        "",
        "### Method",
        "",
        *_method(sizes),
        "",
        "### Machine",
        "",
        *_environment(load),
    ]
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str) -> None:
    """Put `section` into `path` in place of its old `## Engine overhead` section.

    Other benchmarks keep their own `## ` sections in the same file; a section ends at the
    next `#` or `##` heading, and nothing outside this one changes. A file without the
    section gets it before its first `## ` section (after any title), or at its end.
    """
    lines = path.read_text().splitlines(keepends=True) if path.exists() else []
    new = section.rstrip("\n").splitlines(keepends=True)
    new[-1] += "\n"
    start = next((i for i, line in enumerate(lines) if line.rstrip() == HEADING), None)
    if start is None:
        start = end = next(
            (i for i, line in enumerate(lines) if line.startswith("## ")), len(lines)
        )
    else:
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith(("# ", "## "))),
            len(lines),
        )
    before, after = lines[:start], lines[end:]
    if before and before[-1].strip():
        before.append("\n")
    if after:
        new.append("\n")
    path.write_text("".join([*before, *new, *after]))


def clean_error(line: str) -> str:
    """An error line fit for the report: the file paths it names are dropped."""
    return re.sub(r"\s*\(?(?<![\w.])(/[^\s/()]+)+/?\)?", "", line).rstrip(" :")


def _run_isolated(case: str, quick: bool) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--case", case]
    done = subprocess.run(
        [*command, "--quick"] if quick else command,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    name, _, scenario = case.partition(":")
    if done.returncode != 0:
        last_line = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"framework": name, "scenario": scenario, "error": clean_error(last_line)}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=CASES, help="measure one case, print one JSON line")
    parser.add_argument("--quick", action="store_true", help="fewer runs, for a smoke run")
    parser.add_argument(
        "--output",
        type=Path,
        help="the Markdown file whose section to write (default: RESULTS.md beside this "
        "file, unless --quick)",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.case:
        print(json.dumps(run_case(args.case, sizes)), flush=True)
        return
    load_before = os.getloadavg()[0]
    results = []
    for case in CASES:
        print(f"measuring {case} ...", file=sys.stderr, flush=True)
        results.append(_run_isolated(case, args.quick))
    report = render_results(results, sizes=sizes, load=(load_before, os.getloadavg()[0]))
    print(report)
    output = args.output or (None if args.quick else Path(__file__).with_name("RESULTS.md"))
    if output is not None:
        write_section(output, report)
        print(f"wrote the engine overhead section of {output}", file=sys.stderr)


if __name__ == "__main__":
    main()
