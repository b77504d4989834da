"""Durability: what checkpointing every step costs, in time and in bytes, beside LangGraph.

The workload is the engine benchmark's loop: ``llm`` <-> ``tool`` behind a router, each
step appending one pre-built message, 1,001 steps per run. Each case runs in its own
subprocess:

- agentgraph with no store, the in-memory store, and the SQLite store (WAL; ``synchronous``
  NORMAL, the default, and FULL);
- LangGraph with no checkpointer, its in-memory saver, and its SQLite saver.

Per case: µs per step (median run), and the bytes one run leaves in the store, for runs
of 501 and 1,001 steps (a store that grows linearly doubles; one that re-stores the whole
history each step quadruples).

Usage::

    python benchmarks/durability.py                  # all cases, writes its RESULTS.md section
    python benchmarks/durability.py --quick          # fewer runs, table only
    python benchmarks/durability.py --case agentgraph:sqlite   # one case, one JSON line
"""

import argparse
import asyncio
import json
import operator
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Annotated, Any, TypedDict

import orjson

from agentgraph import AgentContext, GraphBuilder, GraphRunner, Message, Node, node
from agentgraph._json import to_data
from agentgraph.checkpoint import MemoryStore, SQLiteStore

SECTION = "## Durability"

ASSISTANT = Message.assistant("calling the probe tool")
TOOL = Message.tool("call-1", "probe result", name="probe")
# LangGraph's serializer does not take attrs classes: the same fields as plain dicts.
ASSISTANT_DICT = {"role": "assistant", "content": "calling the probe tool"}
TOOL_DICT = {"role": "tool", "content": "probe result", "tool_call_id": "call-1", "name": "probe"}


@dataclass(frozen=True)
class Sizes:
    runs: int = 20
    slow_runs: int = 3  # for cases that take seconds per run
    steps: int = 1_000
    half: int = 500


FULL = Sizes()
QUICK = Sizes(runs=3, slow_runs=1)

RunOnce = Callable[[int], Coroutine[Any, Any, tuple[int, int, float]]]
"""Runs the loop until the history holds `total` messages.

Returns the messages, the bytes stored, and the seconds the run took: from the call
that starts it to its return (which, with a store, follows the store's flush), without
opening or closing the store.
"""


def _file_bytes(path: Path) -> int:
    """Bytes on disk of an SQLite database once its write-ahead log is folded in."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


# -- agentgraph ------------------------------------------------------------------------


def _agentgraph_loop(total: int) -> Any:
    @node
    async def llm(ctx: AgentContext[None]) -> AgentContext[None]:
        return ctx.append(ASSISTANT)

    @node
    async def tool(ctx: AgentContext[None]) -> AgentContext[None]:
        return ctx.append(TOOL)

    def more(ctx: AgentContext[None]) -> Node[None, None] | None:
        return tool if len(ctx.history) < total else None

    with GraphBuilder[None, None]("loop") as g:
        g.start.edge_to(llm)
        llm.edge_to(more, targets=(tool,))
        llm.edge_to(g.finish)
        tool.edge_to(llm)
    return g.build()


def _agentgraph(store: str) -> RunOnce:
    async def run_once(total: int) -> tuple[int, int, float]:
        graph = _agentgraph_loop(total)
        runner = GraphRunner(max_steps=total + 1)
        start = AgentContext(None)
        if store == "none":
            started = perf_counter()
            out = await runner.run(graph, start)
            return len(out.history), 0, perf_counter() - started
        if store == "memory":
            memory = MemoryStore()
            started = perf_counter()
            out = await runner.run(graph, start, store=memory, run_id="r")
            elapsed = perf_counter() - started
            log = await memory.load("r")
            assert log is not None
            return len(out.history), log.nbytes, elapsed
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "runs.db"
            sqlite = SQLiteStore(path, synchronous="FULL" if store == "sqlite-full" else "NORMAL")
            await sqlite.flush()  # open the file and create the tables before the clock starts
            started = perf_counter()
            out = await runner.run(graph, start, store=sqlite)
            elapsed = perf_counter() - started
            await sqlite.aclose()
            return len(out.history), _file_bytes(path), elapsed

    return run_once


# -- LangGraph --------------------------------------------------------------------------


class _Chat(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]


def _langgraph_loop(total: int, saver: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    async def llm(state: _Chat) -> dict[str, list[dict[str, str]]]:
        return {"messages": [ASSISTANT_DICT]}

    async def tool(state: _Chat) -> dict[str, list[dict[str, str]]]:
        return {"messages": [TOOL_DICT]}

    def more(state: _Chat) -> str:
        return "tool" if len(state["messages"]) < total else END

    builder = StateGraph(_Chat)
    builder.add_node("llm", llm)
    builder.add_node("tool", tool)
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", more, ["tool", END])
    builder.add_edge("tool", "llm")
    return builder.compile(checkpointer=saver)


def _memory_saver_bytes(saver: Any) -> int:
    """Serialized bytes the in-memory saver holds: checkpoints, metadata, blobs and writes."""
    total = 0
    for namespaces in saver.storage.values():
        for checkpoints in namespaces.values():
            for checkpoint, metadata, _parent in checkpoints.values():
                total += len(checkpoint[1]) + len(metadata[1])
    total += sum(len(blob[1]) for blob in saver.blobs.values())
    for writes in saver.writes.values():
        total += sum(len(write[2][1]) for write in writes.values())
    return total


def _langgraph(store: str) -> RunOnce:
    async def run_once(total: int) -> tuple[int, int, float]:
        config: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": total + 10}
        if store == "none":
            graph = _langgraph_loop(total, None)
            started = perf_counter()
            out = await graph.ainvoke({"messages": []}, config)
            return len(out["messages"]), 0, perf_counter() - started
        if store == "memory":
            from langgraph.checkpoint.memory import InMemorySaver

            saver = InMemorySaver()
            graph = _langgraph_loop(total, saver)
            started = perf_counter()
            out = await graph.ainvoke({"messages": []}, config)
            elapsed = perf_counter() - started
            return len(out["messages"]), _memory_saver_bytes(saver), elapsed
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "runs.db"
            async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
                await saver.setup()  # create the tables before the clock starts
                graph = _langgraph_loop(total, saver)
                started = perf_counter()
                out = await graph.ainvoke({"messages": []}, config)
                elapsed = perf_counter() - started
            return len(out["messages"]), _file_bytes(path), elapsed

    return run_once


CASES: dict[str, tuple[Callable[[str], RunOnce], str, bool]] = {
    "agentgraph:none": (_agentgraph, "none", False),
    "agentgraph:memory": (_agentgraph, "memory", False),
    "agentgraph:sqlite": (_agentgraph, "sqlite", False),
    "agentgraph:sqlite-full": (_agentgraph, "sqlite-full", False),
    "langgraph:none": (_langgraph, "none", False),
    "langgraph:memory": (_langgraph, "memory", True),
    "langgraph:sqlite": (_langgraph, "sqlite", True),
}


def messages_bytes(total: int) -> int:
    """The loop's messages encoded as plain JSON: the payload any store must keep."""
    pair = [len(orjson.dumps(to_data(m))) for m in (ASSISTANT, TOOL)]
    return sum(pair[i % 2] for i in range(total))


def _check(count: int, expected: int) -> None:
    if count != expected:
        raise RuntimeError(f"a run produced {count} messages, expected {expected}")


def run_case(case: str, sizes: Sizes) -> dict[str, Any]:
    """Measure one case in this process: µs per step, and bytes for both run lengths.

    A case with a store alternates its runs with runs of the same framework without
    one, so that the time a store adds is measured under the same conditions: the
    median of the per-pair differences.
    """
    if case not in CASES:
        raise ValueError(f"unknown case {case!r}; known: {', '.join(CASES)}")
    make, store, slow = CASES[case]
    run_once, bare = make(store), make("none")
    total, half = sizes.steps + 1, sizes.half + 1

    async def main() -> dict[str, Any]:
        count, half_bytes, _ = await run_once(half)  # also the warm-up runs
        _check(count, half)
        _check((await bare(half))[0], half)
        samples, added, stored = [], [], 0
        for _ in range(sizes.slow_runs if slow else sizes.runs):
            count, stored, elapsed = await run_once(total)
            _check(count, total)
            samples.append(elapsed / total)
            if store != "none":
                count, _, baseline = await bare(total)
                _check(count, total)
                added.append((elapsed - baseline) / total)
        return {
            "case": case,
            "steps": total,
            "us_per_step": statistics.median(samples) * 1e6,
            "added_us": statistics.median(added) * 1e6 if added else None,
            "bytes": stored,
            "half_steps": half,
            "half_bytes": half_bytes,
            "messages_bytes": messages_bytes(total),
        }

    return asyncio.run(main())


# -- report -----------------------------------------------------------------------------

LABELS = {
    "none": "no store",
    "memory": "in memory",
    "sqlite": "SQLite",
    "sqlite-full": "SQLite, synchronous=FULL",
}


def _added(results: dict[str, dict[str, Any]], case: str) -> float | None:
    value = results.get(case, {}).get("added_us")
    return None if value is None else float(value)


def _growth(result: dict[str, Any]) -> float | None:
    return result["bytes"] / result["half_bytes"] if result.get("half_bytes") else None


def _kib(value: int) -> str:
    return f"{value / 1024:,.1f}" if value else "-"


def _table(results: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| Framework | Store | µs/step | Added µs/step | KiB stored, 1,001 steps "
        "| KiB stored, 501 steps | Growth | Stored / messages |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for case, r in results.items():
        framework, store = case.split(":")
        if "error" in r:
            lines.append(f"| {framework} | {LABELS[store]} | not measured: {r['error']} ||||||")
            continue
        added = _added(results, case)
        growth = _growth(r)
        cells = [
            f"{r['us_per_step']:.2f}",
            "-" if store == "none" or added is None else f"{added:+.2f}",
            _kib(r["bytes"]),
            _kib(r["half_bytes"]),
            "-" if growth is None else f"{growth:.2f}x",
            "-" if not r["bytes"] else f"{r['bytes'] / r['messages_bytes']:.2f}x",
        ]
        lines.append(f"| {framework} | {LABELS[store]} | {' | '.join(cells)} |")
    return lines


def _slope(results: dict[str, dict[str, Any]]) -> str:
    r = results.get("agentgraph:sqlite", {})
    if not r.get("half_bytes"):
        return ""
    steps = r["steps"] - r["half_steps"]
    per_step = (r["bytes"] - r["half_bytes"]) / steps
    fixed = r["half_bytes"] - per_step * r["half_steps"]
    return (
        f" agentgraph's SQLite file is {fixed / 1024:,.0f} KiB of fixed pages plus "
        f"{per_step:,.0f} bytes per step."
    )


def _verdict(ok: bool, text: str) -> str:
    return f"met ({text})" if ok else f"**missed** ({text})"


def _targets(results: dict[str, dict[str, Any]]) -> list[str]:
    rows = []
    added = _added(results, "agentgraph:sqlite")
    if added is not None:
        rows.append(
            (
                "SQLite checkpointing adds ≤ 50 µs/step",
                f"{added:.2f} µs",
                _verdict(added <= 50, f"{50 - added:.1f} µs under the limit"),
            )
        )
    sqlite = results.get("agentgraph:sqlite", {})
    growth = _growth(sqlite) if "bytes" in sqlite else None
    if growth is not None:
        rows.append(
            (
                "storage linear in run length (2x the steps ≤ 2.4x the bytes)",
                f"{growth:.2f}x",
                _verdict(growth <= 2.4, "a store that re-stores the history each step gives ~4x"),
            )
        )
    memory = results.get("agentgraph:memory", {})
    if memory.get("bytes"):
        ratio = memory["bytes"] / memory["messages_bytes"]
        rows.append(
            (
                "1,001 steps store < 2x their messages' bytes + per-step overhead",
                f"{ratio:.2f}x, overhead included",
                _verdict(ratio < 2, "records and their metadata, all in"),
            )
        )
    lines = ["| Target (agentgraph) | Measured | Verdict |", "|---|--:|---|"]
    return lines + [f"| {a} | {b} | {c} |" for a, b, c in rows]


def _machine(load: tuple[float, float] | None) -> str:
    import platform
    from importlib import metadata

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    packages = ("agentgraph", "langgraph", "langgraph-checkpoint-sqlite")
    text = (
        f"Python {platform.python_version()}, "
        + ", ".join(f"{p} {version(p)}" for p in packages)
        + f", SQLite {sqlite3.sqlite_version}, {os.cpu_count()} cores"
    )
    if load is not None:
        text += f"; 1-minute load average {load[0]:.2f} before, {load[1]:.2f} after"
    return text


def render_section(
    results: list[dict[str, Any]], *, sizes: Sizes, load: tuple[float, float] | None = None
) -> str:
    """The `## Durability` section of RESULTS.md."""
    keyed = {r["case"]: r for r in results}
    lines = [
        SECTION,
        "",
        "What recording every step costs, beside LangGraph's checkpointers, on the loop "
        "workload: `llm` and `tool` nodes behind a router, each step appending one pre-built "
        f"message, {sizes.steps + 1:,} steps per run. Produced by "
        "`python benchmarks/durability.py`.",
        "",
        *_table(keyed),
        "",
        "`Added` is what the store adds per step: the median difference between runs with "
        "it and runs of the same framework without a store, taken in pairs in the same "
        "process. `Growth` is "
        f"the bytes of a {sizes.steps + 1:,}-step run over those of a {sizes.half + 1}-step "
        "run: 2x for a store that grows linearly, about 4x for one that stores the whole "
        "history again at every step, less than 2x when a fixed part (an SQLite file's "
        f"first pages) weighs in.{_slope(keyed)} `Stored / messages` compares the bytes a "
        "run leaves with its messages encoded as plain JSON.",
        "",
        "### Targets",
        "",
        *_targets(keyed),
        "",
        "### Method",
        "",
        f"- Each case runs in its own process, on asyncio. Time: the median of {sizes.runs} "
        f"runs ({sizes.slow_runs} for LangGraph's savers, which take seconds per run), after "
        "warm-up runs, over the run's steps: from the call that starts the run to its "
        "return, which with a store comes after the store's final flush. Opening and "
        "closing a store is not timed.",
        "- agentgraph: `GraphRunner.run(graph, ctx, store=...)`. Bytes: for the in-memory "
        "store, the payload of its records (`RunLog.nbytes`: encoded contexts, names and "
        "six numbers per step); for SQLite, the database file after the write-ahead log is "
        "checkpointed. The SQLite store writes from a background thread and commits what "
        "has queued up together (each step atomic); the file is created before the clock "
        "starts.",
        "- LangGraph: `StateGraph` with the history as an `Annotated[list, operator.add]` "
        "channel, compiled with `InMemorySaver` or `AsyncSqliteSaver` (tables created before "
        "the clock starts), one thread per run. Its serializer does not take attrs classes, "
        "so its messages are plain dicts with the same fields. Bytes: for the in-memory "
        "saver, the serialized checkpoints, metadata, channel blobs and writes it holds; "
        "for SQLite, the database file after a WAL checkpoint.",
        f"- Machine: {_machine(load)}.",
        "",
    ]
    return "\n".join(lines)


def write_section(path: Path, section: str) -> None:
    """Put `section` into `path` in place of its old `## Durability` section (or at the end).

    The file is read just before writing, and nothing outside the section changes.
    """
    text = path.read_text() if path.exists() else ""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == SECTION), None)
    if start is None:
        joined = text.rstrip("\n")
        path.write_text((joined + "\n\n" if joined else "") + section.rstrip("\n") + "\n")
        return
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith(("# ", "## "))),
        len(lines),
    )
    tail = "".join(lines[end:])
    new = "".join(lines[:start]) + section.rstrip("\n") + "\n" + ("\n" + tail if tail else "")
    path.write_text(new)


def _run_isolated(case: str, quick: bool) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--case", case]
    done = subprocess.run(
        [*command, "--quick"] if quick else command,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"case": case, "error": last.split(" (/")[0]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--case", choices=tuple(CASES), help="measure one case, print JSON")
    parser.add_argument("--quick", action="store_true", help="fewer runs; no file written")
    parser.add_argument(
        "--output",
        type=Path,
        help="the results file whose Durability section to write "
        "(default: RESULTS.md beside this file, unless --quick)",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.case:
        print(json.dumps(run_case(args.case, sizes)), flush=True)
        return
    before = os.getloadavg()[0]
    results = []
    for case in CASES:
        print(f"measuring {case} ...", file=sys.stderr, flush=True)
        results.append(_run_isolated(case, args.quick))
    section = render_section(results, sizes=sizes, load=(before, os.getloadavg()[0]))
    print(section)
    output = args.output or (None if args.quick else Path(__file__).with_name("RESULTS.md"))
    if output is not None:
        write_section(output, section)
        print(f"wrote the durability section of {output}", file=sys.stderr)


if __name__ == "__main__":
    main()
