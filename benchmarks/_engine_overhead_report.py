"""The engine overhead benchmark's section of RESULTS.md: table, targets, method, machine."""

import datetime
import os
from typing import TYPE_CHECKING, Any

from _common import cpu_model, os_name, python, versions

if TYPE_CHECKING:
    from engine_overhead import Sizes

HEADING = "## Engine overhead"
"""This benchmark's section of RESULTS.md; other benchmarks write their own sections."""


Results = dict[tuple[str, str], dict[str, Any]]


FLOOR_TARGET = 1.5
"""The engine's time per step at most this many times the design floor's."""


def _ratio(
    results: Results, scenario: str, framework: str, base: str = "agentgraph"
) -> float | None:
    """`framework`'s time per step over `base`'s in the same scenario."""
    own = results.get((scenario, framework), {}).get("us_per_step")
    under = results.get((scenario, base), {}).get("us_per_step")
    return None if own is None or not under else own / under


def _cell(value: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def _table(results: Results) -> list[str]:
    lines = [
        "| Scenario | Framework | µs/step | x agentgraph | x design floor "
        "| Steps 1-100 µs/step | Last 100 µs/step | Last / first | Peak RSS MiB "
        "| RSS growth MiB |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for (scenario, framework), r in results.items():
        if "error" in r:
            lines.append(f"| {scenario} | {framework} | not measured: {r['error']} ||||||||")
            continue
        cells = [
            _cell(r["us_per_step"]),
            _cell(_ratio(results, scenario, framework), ".3g", "x"),
            _cell(_ratio(results, scenario, framework, "design-floor"), ".3g", "x"),
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
    for scenario in ("linear", "loop", "concurrent"):
        over = _ratio(results, scenario, "agentgraph", "design-floor")
        rows.append(
            (f"{scenario}: ≤ {FLOOR_TARGET}x the design floor", *_at_most(over, FLOOR_TARGET, "x"))
        )
    late = agentgraph("loop", "late_over_early")
    rows.append(("loop: last 100 steps ≤ 1.2x steps 1-100", *_at_most(late, 1.2, "x")))
    lines = ["| Target (agentgraph) | Measured | Verdict |", "|---|--:|---|"]
    lines += [f"| {target} | {shown} | {verdict} |" for target, shown, verdict in rows]
    return [*lines, "", *_floor_budget(results)]


def _floor_budget(results: Results) -> list[str]:
    """What the design floor target leaves the engine per step, beside what it takes."""
    parts = []
    for scenario in ("linear", "loop", "concurrent"):
        ours = results.get((scenario, "agentgraph"), {}).get("us_per_step")
        floor = results.get((scenario, "design-floor"), {}).get("us_per_step")
        if ours is None or floor is None:
            continue
        parts.append(
            f"{scenario} {(FLOOR_TARGET - 1) * float(floor):.2f} µs "
            f"(it takes {float(ours) - float(floor):.2f})"
        )
    if not parts:
        return []
    bare = results.get(("linear", "bare-loop"), {}).get("us_per_step")
    awaited = (
        ""
        if bare is None
        else f" (the bare loop, which only awaits one plain function per step, takes "
        f"{float(bare):.2f} µs)"
    )
    return [
        f"Within {FLOOR_TARGET}x of the design floor, the engine's own work per step would "
        "have to fit in "
        + ", ".join(parts)
        + ". With the no-op `on_step` installed, that work is counting the step against the "
        "limit, looking for cancellation, calling the node, pointing the handle at the new "
        "context, building the `StepInfo` and calling the callback, plus a share of starting "
        "and ending the run (a tenth of it on the 10-node chain); `## Step profile` measures "
        "each of those parts with nodes that do no data work. The budget holds a few "
        f"function calls{awaited}: the target is out of reach for an engine that keeps the "
        "callback, the step limit and cancellation. What is left is spread thin: on the "
        "chain about 0.5 µs a step is the step itself (the step's coroutine, counting, the "
        "limit, the cancellation check, the node's path, the handle), 0.45 µs the no-op "
        "callback (two clock reads, the `StepInfo`, the call) and 0.15 µs a tenth of "
        "starting and ending the run; no one part is worth more than a fifth of the gap. "
        "Meeting it would take a compiled step loop (mypyc or Cython: a build step and "
        "binary wheels for a pure-Python package) or dropping guarantees a step gives today "
        "(its `StepInfo` and duration, the handle's last context, the cancellation check)."
    ]


def _environment(load: tuple[float, float] | None) -> list[str]:
    lines = [
        f"- {python()}",
        "- " + versions("agentgraph", "langgraph", "pydantic-graph", "anyio"),
        f"- CPU: {cpu_model()}, {os.cpu_count()} cores",
        f"- OS: {os_name()}",
        f"- Date: {datetime.datetime.now(datetime.UTC).date().isoformat()}",
    ]
    if load is not None:
        # Other work on the machine inflates every figure; this says how much there was.
        lines.append(
            f"- 1-minute load average: {load[0]:.2f} before the run, {load[1]:.2f} after "
            "(the benchmark itself keeps one core busy)"
        )
    return lines


def _method(sizes: "Sizes", chain: int) -> list[str]:
    return [
        f"- **linear**: a {chain}-node chain, each node adds one to a counter; "
        f"{sizes.linear_runs:,} sequential runs after {sizes.warmup_runs} warm-up runs, "
        "each timed alone; the median run over its steps.",
        f"- **loop**: `llm` and `tool` nodes; a router after `llm` goes back to `tool` until "
        f"the history holds {sizes.loop_steps + 1:,} messages, so a run is "
        f"{sizes.loop_steps + 1:,} steps, each appending one pre-built message. Every node "
        "records `perf_counter()` on entry; a segment's cost is the time from the entry into "
        "its first step to the entry into the step after it, over its length. Median of "
        f"{sizes.loop_runs} runs (after 2 warm-up runs).",
        f"- **concurrent**: {sizes.concurrent_runs:,} runs of a {chain}-node chain started "
        "together in one `asyncio.TaskGroup`; each node yields once with `asyncio.sleep(0)`, "
        "the same node body in every framework. Wall time over "
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
        "- **design-floor**: agentgraph's own data work with no engine: the same "
        "`AgentContext` values built the same way (`with_input`, `append` of the same "
        "messages), each node an `async def` looked up in a dict, the loop's router a plain "
        "function call. What an engine adds on top of this is its own cost (`x design floor`).",
        "- **bare-loop**: plain `async def` functions over plain values (an int, a list) "
        "awaited one after another; the loop's router is the returned next function. A "
        "lower bound for any Python engine, not a target.",
    ]


def render(
    results: list[dict[str, Any]],
    *,
    sizes: "Sizes",
    chain: int,
    load: tuple[float, float] | None = None,
) -> str:
    """The section: results table, targets, method and machine; `chain` nodes per chain."""
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
        *_method(sizes, chain),
        "",
        "### Machine",
        "",
        *_environment(load),
    ]
    return "\n".join(lines) + "\n"
