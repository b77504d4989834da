"""Reads beside writes: status reads, thread reads and `score_runs` while runs commit.

Two measures per store:

- ``score_runs``: runs per second of `score_runs` over recorded runs of the calculator
  agent (the workload of `evals_recorded.py`), the store otherwise idle; SQLite's rate
  is compared with the memory store's.
- reads under load: 100 runs at once commit steps (a chain of 10 nodes, every step
  committed, each worker starting its next run when its last ended) while one reader
  reads, one after the other, the log of a finished run (a server's status read),
  a thread (`read_thread`) and the list of threads (`list_threads`); the latency of
  each read, p50 and p99, and the commits per second meanwhile.

PostgreSQL is started by the benchmark unless ``AGENTGRAPH_BENCH_POSTGRES`` names one.

Usage::

    python benchmarks/reads_under_writes.py            # writes its RESULTS.md section
    python benchmarks/reads_under_writes.py --quick    # small sizes, table only
"""

import asyncio
import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import load_average, machine, postgres_server, publish
from evals_recorded import EVALUATORS, record

from agentgraph import AgentContext, Graph, GraphBuilder, GraphRunner, Message, Node, node
from agentgraph.checkpoint import list_threads, read_thread
from agentgraph.evals import score_runs

HEADING = "## Reads beside writes"
LENGTH = 10


@dataclass(frozen=True)
class Sizes:
    scored: int = 300
    writers: int = 100
    seconds: float = 5.0


FULL = Sizes()
QUICK = Sizes(scored=10, writers=4, seconds=0.3)


def chain() -> Graph[None, None]:
    def make(i: int) -> Node[None, None]:
        @node(name=f"n{i}")
        async def step(ctx: AgentContext[None]) -> AgentContext[None]:
            return ctx.append(Message.assistant("step"))

        return step

    with GraphBuilder[None, None]("chain") as g:
        last: Node[None, Any] = g.start
        for i in range(LENGTH):
            last = last.edge_to(make(i))
        last.edge_to(g.finish)
    return g.build()


def open_store(kind: str, folder: str, dsn: str | None) -> Any:
    from agentgraph.checkpoint import MemoryStore, PostgresStore, SQLiteStore

    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLiteStore(Path(folder) / f"{uuid.uuid4().hex}.db")
    assert dsn is not None
    return PostgresStore(dsn, schema=f"bench_{uuid.uuid4().hex[:12]}")


async def scoring(kind: str, count: int, dsn: str | None) -> float:
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(kind, folder, dsn)
        runs = await record(store, count)
        best = 0.0
        for _ in range(3):
            started = time.perf_counter()
            report = await score_runs(store, EVALUATORS, runs=runs)
            best = max(best, count / (time.perf_counter() - started))
            assert report.pass_at(1) == 1.0
        await store.aclose()
    return best


def _pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1e3


async def under_load(kind: str, sizes: Sizes, dsn: str | None) -> dict[str, Any]:
    graph, runner = chain(), GraphRunner()
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(kind, folder, dsn)
        done = await runner.run(graph, AgentContext(None), store=store, run_id="finished")
        assert len(done.history) == LENGTH
        for turn in range(3):
            sent = AgentContext(None, [Message.user(f"turn {turn}")])
            await runner.run(graph, sent, store=store, thread_id="thread")
        stop = asyncio.Event()
        commits = [0]

        async def writer() -> None:
            while not stop.is_set():
                await runner.run(graph, AgentContext(None), store=store)
                commits[0] += LENGTH

        reads: dict[str, list[float]] = {"status": [], "thread": [], "threads": []}

        async def reader() -> None:
            while not stop.is_set():
                for what, read in (
                    ("status", lambda: store.load("finished")),
                    ("thread", lambda: read_thread(store, "thread")),
                    ("threads", lambda: list_threads(store)),
                ):
                    started = time.perf_counter()
                    await read()
                    reads[what].append(time.perf_counter() - started)

        tasks = [asyncio.create_task(writer()) for _ in range(sizes.writers)]
        await asyncio.sleep(0.2)  # the writers are going
        before = commits[0]
        started = time.perf_counter()
        read_task = asyncio.create_task(reader())
        await asyncio.sleep(sizes.seconds)
        stop.set()
        rate = (commits[0] - before) / (time.perf_counter() - started)
        await asyncio.gather(*tasks, read_task)
        await store.aclose()
        if kind == "postgres":
            _drop(dsn, store.schema)
    out: dict[str, Any] = {"store": kind, "commits_per_s": rate}
    for what, values in reads.items():
        out[what] = {"n": len(values), "p50": _pct(values, 0.5), "p99": _pct(values, 0.99)}
    return out


def _drop(dsn: str | None, schema: str) -> None:
    import psycopg

    assert dsn is not None
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def measure(sizes: Sizes, dsn: str) -> dict[str, Any]:
    rates = {}
    for kind in ("memory", "sqlite", "postgres"):
        print(f"scoring on {kind} ...", file=sys.stderr, flush=True)
        rates[kind] = asyncio.run(scoring(kind, sizes.scored, dsn))
    loads = []
    for kind in ("sqlite", "postgres"):
        print(f"reads under load on {kind} ...", file=sys.stderr, flush=True)
        loads.append(asyncio.run(under_load(kind, sizes, dsn)))
    return {"rates": rates, "loads": loads}


def render(results: dict[str, Any], sizes: Sizes, load: float) -> str:
    rates = results["rates"]
    lines = [
        HEADING,
        "",
        f"`score_runs` over {sizes.scored} recorded runs (best of 3), runs per second:",
        "",
        "| store | runs/s | / memory |",
        "|---|---|---|",
    ]
    for kind, rate in rates.items():
        lines.append(f"| {kind} | {rate:,.0f} | {rate / rates['memory']:.2f} |")
    lines += [
        "",
        f"Reads while {sizes.writers} runs commit (a chain of {LENGTH}, every step committed), "
        f"{sizes.seconds:g} s; latency in ms:",
        "",
        "| store | commits/s | status p50 | status p99 | read_thread p50 | read_thread p99 "
        "| list_threads p50 | list_threads p99 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results["loads"]:
        cells = " | ".join(
            f"{r[what]['p50']:.2f} | {r[what]['p99']:.2f}"
            for what in ("status", "thread", "threads")
        )
        lines.append(f"| {r['store']} | {r['commits_per_s']:,.0f} | {cells} |")
    ratio = rates["memory"] / rates["sqlite"]
    pg = next(r for r in results["loads"] if r["store"] == "postgres")
    lines += [
        "",
        "### Targets",
        "",
        "| target | measured | verdict |",
        "|---|---|---|",
        f"| score_runs on SQLite within 1.5x of memory | {ratio:.2f}x | "
        f"{'met' if ratio <= 1.5 else 'missed'} |",
        f"| status read p99 under write load on PostgreSQL < 10 ms | {pg['status']['p99']:.2f} ms "
        f"| {'met' if pg['status']['p99'] < 10 else 'missed'} |",
        "",
        "### Machine",
        "",
        machine(load),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, table only")
    parser.add_argument("--output", type=Path, help="write the section here")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    load = load_average()
    with postgres_server() as dsn:
        os.environ.setdefault("AGENTGRAPH_BENCH_POSTGRES", dsn)
        results = measure(sizes, dsn)
    publish(render(results, sizes, load), output=args.output, quick=args.quick)


if __name__ == "__main__":
    main()
