"""Durability: what checkpointing every step costs, in time and in bytes, beside LangGraph.

The workload is the engine benchmark's loop (built by ``_engine_overhead_frameworks.py``):
``llm`` <-> ``tool`` behind a router, each step appending one pre-built message, 1,001
steps per run. Each case runs in its own
subprocess:

- agentgraph with no store, the in-memory store, the SQLite store (WAL; ``synchronous``
  NORMAL, the default, and FULL), and the Postgres store (a server started for the case
  with PostgreSQL's defaults, fsync on; and with ``synchronous_commit=off``, or the server
  at ``AGENTGRAPH_BENCH_POSTGRES``);
- LangGraph with no checkpointer, its in-memory saver, and its SQLite saver.

Per case: µs per step (median run), and the bytes one run leaves in the store, for runs
of 501 and 1,001 steps (a store that grows linearly doubles; one that re-stores the whole
history each step quadruples).

The section is rendered in ``_durability_report.py``.

Usage::

    python benchmarks/durability.py                  # all cases, writes its RESULTS.md section
    python benchmarks/durability.py --quick          # fewer runs, table only
    python benchmarks/durability.py --case agentgraph:sqlite   # one case, one JSON line
"""

import asyncio
import contextlib
import json
import operator
import sqlite3
import statistics
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Annotated, Any, TypedDict

import orjson
from _common import case_parser, measure_in_children, postgres_server, publish
from _common import write_section as write_section  # re-exported: the section writer
from _durability_report import render_section
from _engine_overhead_frameworks import ASSISTANT, TOOL, agentgraph_loop, langgraph_loop

from agentgraph import AgentContext, Graph, GraphRunner, node
from agentgraph.checkpoint import MemoryStore, PostgresStore, SQLiteStore

try:
    from agentgraph._core._json import to_data
except ImportError:  # an earlier revision (before_after.py), before the package was grouped
    from agentgraph._json import to_data  # type: ignore[no-redef]

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


def _postgres_bytes(dsn: str, schema: str) -> int:
    """Bytes of the schema's tables, their indexes and TOAST, after a VACUUM."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM")
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'r'",
            (schema,),
        ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


@contextlib.asynccontextmanager
async def _postgres_store(dsn: str) -> AsyncIterator[tuple[PostgresStore, str]]:
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    store = PostgresStore(dsn, schema=schema)
    await store.flush()  # connect and create the tables before the clock starts
    try:
        yield store, schema
    finally:
        await store.aclose()


# -- agentgraph ------------------------------------------------------------------------


def _agentgraph_loop(total: int) -> Graph[None, None]:
    @node
    async def llm(ctx: AgentContext[None]) -> AgentContext[None]:
        return ctx.append(ASSISTANT)

    @node
    async def tool(ctx: AgentContext[None]) -> AgentContext[None]:
        return ctx.append(TOOL)

    return agentgraph_loop(llm, tool, total)


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
        if store.startswith("postgres"):
            assert _DSN, "the case opened its server"
            async with _postgres_store(_DSN[0]) as (postgres, schema):
                started = perf_counter()
                out = await runner.run(graph, start, store=postgres)
                elapsed = perf_counter() - started
            return len(out.history), _postgres_bytes(_DSN[0], schema), elapsed
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
    async def llm(state: _Chat) -> dict[str, list[dict[str, str]]]:
        return {"messages": [ASSISTANT_DICT]}

    async def tool(state: _Chat) -> dict[str, list[dict[str, str]]]:
        return {"messages": [TOOL_DICT]}

    return langgraph_loop(_Chat, llm, tool, total, saver)


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
    "agentgraph:postgres": (_agentgraph, "postgres", False),
    "agentgraph:postgres-async": (_agentgraph, "postgres-async", False),
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

    if not store.startswith("postgres"):
        return asyncio.run(main())
    with postgres_server(synchronous_commit=store != "postgres-async") as dsn:
        _DSN[:] = [dsn]
        return asyncio.run(main())


_DSN: list[str] = []
"""The Postgres server of the case being measured."""


# -- command line ----------------------------------------------------------------------


def _failed(case: str, error: str) -> dict[str, Any]:
    return {"case": case, "error": error}


def main(argv: list[str] | None = None) -> None:
    args = case_parser((__doc__ or "").splitlines()[0], CASES).parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.case:
        print(json.dumps(run_case(args.case, sizes)), flush=True)
        return
    script = Path(__file__).resolve()
    results, load = measure_in_children(
        script, tuple(CASES), quick=args.quick, timeout=1800, failed=_failed
    )
    section = render_section(results, sizes=sizes, load=load)
    publish(section, output=args.output, quick=args.quick)


if __name__ == "__main__":
    main()
