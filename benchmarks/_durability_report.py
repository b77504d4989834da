"""The durability benchmark's section of RESULTS.md: table, targets, method, machine."""

import os
import platform
import sqlite3
from typing import TYPE_CHECKING, Any

from _common import versions

if TYPE_CHECKING:
    from durability import Sizes

HEADING = "## Durability"

LABELS = {
    "none": "no store",
    "memory": "in memory",
    "sqlite": "SQLite",
    "sqlite-full": "SQLite, synchronous=FULL",
    "postgres": "Postgres",
    "postgres-async": "Postgres, synchronous_commit=off",
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


def _slope(results: dict[str, dict[str, Any]], case: str = "agentgraph:sqlite") -> str:
    r = results.get(case, {})
    if not r.get("half_bytes"):
        return ""
    steps = r["steps"] - r["half_steps"]
    per_step = (r["bytes"] - r["half_bytes"]) / steps
    fixed = r["half_bytes"] - per_step * r["half_steps"]
    if case == "agentgraph:postgres":
        return (
            f" Its Postgres tables are {fixed / 1024:,.0f} KiB of fixed pages (each table "
            f"and index starts with its own) plus {per_step:,.0f} bytes per step."
        )
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
    text = (
        f"Python {platform.python_version()}, "
        + versions("agentgraph", "langgraph", "langgraph-checkpoint-sqlite")
        + f", SQLite {sqlite3.sqlite_version}, {os.cpu_count()} cores"
    )
    if load is not None:
        text += f"; 1-minute load average {load[0]:.2f} before, {load[1]:.2f} after"
    return text


def render_section(
    results: list[dict[str, Any]], *, sizes: "Sizes", load: tuple[float, float] | None = None
) -> str:
    """The `## Durability` section of RESULTS.md."""
    keyed = {r["case"]: r for r in results}
    lines = [
        HEADING,
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
        f"first pages) weighs in.{_slope(keyed)}{_slope(keyed, 'agentgraph:postgres')} "
        "`Stored / messages` compares the bytes a "
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
        "- Postgres: `PostgresStore` (sync psycopg on a writer thread, group commit, the "
        "same records as SQLite), on a PostgreSQL server on this machine started for the "
        "case: its defaults (fsync on, `synchronous_commit=on`: a commit waits for the WAL "
        "to reach the disk), and with `synchronous_commit=off` (a crash of the server may "
        "lose the last moments of commits, never consistency), each run in a fresh schema "
        "created before the clock starts. Bytes: `pg_total_relation_size` of the schema's "
        "tables (with indexes and TOAST) after a VACUUM.",
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
