"""Many runs waiting on a person: 100,000 interrupted runs in one PostgreSQL store.

One run of a two-node graph (a step, then a node that asks a question) is recorded
and interrupted; its records are then copied under new run ids until the store holds
`count` waiting runs (written through `PostgresStore.write`, as runs write them).
Reported: the store's size per waiting run (every table and index of its schema), the
process's resident memory before and after (nothing is held in process per waiting
run), the records read to resume one, and the time to find one (its log, by id) and to
resume it with an answer, median of `resumes` runs picked at random.

Usage::

    python benchmarks/waiting_runs.py            # writes its RESULTS.md section
    python benchmarks/waiting_runs.py --quick    # small sizes, table only
"""

import asyncio
import random
import statistics
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import attrs
from _common import load_average, machine, peak_rss_mib, postgres_server, publish

from agentgraph import AgentContext, Graph, GraphBuilder, GraphRunner, Interrupted, Message, node
from agentgraph.checkpoint import PostgresStore

HEADING = "## Runs waiting on an interrupt"


@dataclass(frozen=True)
class Sizes:
    count: int = 100_000
    batch: int = 2_000
    resumes: int = 20


FULL = Sizes()
QUICK = Sizes(count=200, batch=100, resumes=3)


def approval() -> Graph[str, str]:
    @node(name="draft")
    async def draft(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx.append(Message.assistant(f"a draft about {ctx.input}"))

    @node(name="approve")
    async def approve(ctx: AgentContext[str], rt: Any) -> AgentContext[str]:
        answer = await rt.interrupt("send it?")
        return ctx.append(Message.user(str(answer))).with_input(str(answer))

    with GraphBuilder[str, str]("approval") as g:
        g.start.edge_to(draft)
        draft.edge_to(approve)
        approve.edge_to(g.finish)
    return g.build()


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def fill(store: PostgresStore, count: int, batch: int) -> list[str]:
    """`count` waiting runs: one recorded, the rest its records under new ids."""
    graph, runner = approval(), GraphRunner()
    try:
        await runner.run(graph, AgentContext("the quarterly report"), store=store)
    except Interrupted as stopped:
        first = stopped.run_id
    log = await store.load(first)
    assert log is not None
    ids = [first]
    while len(ids) < count:
        for _ in range(min(batch, count - len(ids))):
            rid = uuid.uuid4().hex
            ids.append(rid)
            store.write([attrs.evolve(r, run_id=rid) for r in log.records()])
        await store.flush()
    return ids


def _size(dsn: str, schema: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'm', 't')",
            (schema,),
        ).fetchone()
    return int(row[0]) if row else 0


async def measure(dsn: str, sizes: Sizes) -> dict[str, Any]:
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    store = PostgresStore(dsn, schema=schema)
    await store.flush()
    rss_before = _rss_mib()
    started = time.perf_counter()
    ids = await fill(store, sizes.count, sizes.batch)
    filled = time.perf_counter() - started
    rss_after = _rss_mib()
    size = _size(dsn, schema)
    graph, runner = approval(), GraphRunner()
    finds, resumes, records = [], [], []
    for rid in random.Random(7).sample(ids, sizes.resumes):
        started = time.perf_counter()
        log = await store.load(rid)
        finds.append(time.perf_counter() - started)
        assert log is not None and any(e.kind == "interrupt" for e in log.effects)
        records.append(len(log.records()))
        started = time.perf_counter()
        out = await runner.resume(graph, rid, store, answer="yes")
        resumes.append(time.perf_counter() - started)
        assert out.input == "yes"
    await store.aclose()
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    return {
        "count": sizes.count,
        "fill_s": filled,
        "bytes_per_run": size / sizes.count,
        "rss_before": rss_before,
        "rss_after": rss_after,
        "peak_rss": peak_rss_mib(),
        "records": statistics.median(records),
        "find_ms": statistics.median(finds) * 1e3,
        "resume_ms": statistics.median(resumes) * 1e3,
        "resume_max_ms": max(resumes) * 1e3,
    }


def render(r: dict[str, Any], load: float) -> str:
    grew = r["rss_after"] - r["rss_before"]
    lines = [
        HEADING,
        "",
        f"{r['count']:,} runs waiting on an interrupt in one PostgreSQL store (written in "
        f"{r['fill_s']:.1f} s); resume: median of the runs picked.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| store size per waiting run | {r['bytes_per_run']:,.0f} B |",
        f"| process memory before / after filling | {r['rss_before']:.0f} / "
        f"{r['rss_after']:.0f} MiB ({grew * 1024 * 1024 / r['count']:.1f} B per run) |",
        f"| records read to resume one | {r['records']:.0f} |",
        f"| find one (its log, by id) | {r['find_ms']:.2f} ms |",
        f"| resume one with its answer | {r['resume_ms']:.2f} ms (max {r['resume_max_ms']:.1f}) |",
        "",
        "### Targets",
        "",
        "| target | measured | verdict |",
        "|---|---|---|",
        f"| find and resume one < 20 ms | {r['find_ms'] + r['resume_ms']:.1f} ms | "
        f"{'met' if r['find_ms'] + r['resume_ms'] < 20 else 'missed'} |",
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
        results = asyncio.run(measure(dsn, sizes))
    publish(render(results, load), output=args.output, quick=args.quick)


if __name__ == "__main__":
    main()
