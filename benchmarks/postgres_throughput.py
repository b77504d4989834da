"""Durable throughput on PostgreSQL: `PostgresStore` beside LangGraph's `AsyncPostgresSaver`.

The workload: a chain of 10 nodes, each appending one pre-built message, every step
committed. Two shapes:

- ``many``: 100 runs at once in one process (100 workers, each starting its next run when
  the last one ended), committed steps per second;
- ``one``: one run at a time, milliseconds per step (a run's time ends after its last
  step is durable).

Per case, besides the rate: the client process's CPU per committed step (all its
threads; the event loop's thread apart) and the server's (the postmaster and every
backend, those that ended included), so that what the database costs is told apart
from what the client adds. The server is PostgreSQL with its default settings
(``synchronous_commit=on``, fsync on), started for the measurement, or the one at
``AGENTGRAPH_BENCH_POSTGRES``. Each case runs in a fresh interpreter; agentgraph and
LangGraph take turns. LangGraph: `AsyncPostgresSaver` on a psycopg pool (20
connections), default durability, one thread per run.

``--before REV`` also measures agentgraph's cases against an earlier revision of the
package (a temporary git worktree), the trees taking turns.

Usage::

    python benchmarks/postgres_throughput.py                 # writes its RESULTS.md section
    python benchmarks/postgres_throughput.py --quick         # small sizes, table only
    python benchmarks/postgres_throughput.py --before main   # with a before/after table
    python benchmarks/postgres_throughput.py --case agentgraph:many   # one JSON line
"""

import asyncio
import contextlib
import json
import operator
import os
import resource
import statistics
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Annotated, Any, TypedDict

from _common import (
    ChildFailed,
    clean_error,
    load_average,
    postgres_server,
    publish,
    run_child,
    section_parser,
    versions,
)
from _engine_overhead_frameworks import ASSISTANT

from agentgraph import AgentContext, Graph, GraphBuilder, GraphRunner, Node, node

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HEADING = "## Durable throughput on PostgreSQL"
CASES = ("agentgraph:many", "langgraph:many", "agentgraph:one", "langgraph:one")
LENGTH = 10
"""Nodes in the chain: steps per run."""
MESSAGE = {"role": "assistant", "content": "calling the probe tool"}
"""The message LangGraph's nodes append (its serializer takes no attrs classes)."""


@dataclass(frozen=True)
class Sizes:
    concurrent: int = 100
    runs_each: int = 30  # agentgraph: runs per worker in the `many` shape
    peer_runs_each: int = 1  # LangGraph: slower by an order of magnitude
    one_runs: int = 300
    peer_one_runs: int = 30
    rounds: int = 3


FULL = Sizes()
QUICK = Sizes(concurrent=10, runs_each=2, peer_runs_each=1, one_runs=5, peer_one_runs=3, rounds=1)


# -- CPU accounting -------------------------------------------------------------------------


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _loop_cpu() -> float:
    """CPU seconds of the calling thread (the event loop's)."""
    return float(__import__("time").thread_time())


class ServerCPU:
    """CPU seconds the PostgreSQL server has used: the postmaster, its live children and
    the children it reaped (backends of closed connections)."""

    def __init__(self, dsn: str) -> None:
        import psutil
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            postmaster = psutil.Process(int(row[0])).parent()  # while the backend lives
        assert postmaster is not None
        self._postmaster = postmaster

    def seconds(self) -> float:
        import psutil

        total = 0.0
        times = self._postmaster.cpu_times()
        total += times.user + times.system + times.children_user + times.children_system
        for child in self._postmaster.children():
            with contextlib.suppress(psutil.NoSuchProcess):
                t = child.cpu_times()
                total += t.user + t.system
        return total


# -- the workload -----------------------------------------------------------------------------


def agentgraph_chain() -> Graph[None, None]:
    def make(i: int) -> Node[None, None]:
        @node(name=f"n{i}")
        async def step(ctx: AgentContext[None]) -> AgentContext[None]:
            return ctx.append(ASSISTANT)

        return step

    with GraphBuilder[None, None]("chain") as g:
        last: Node[Any, Any] = g.start
        for i in range(LENGTH):
            last = last.edge_to(make(i))
        last.edge_to(g.finish)
    return g.build()


class _Chat(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]


def langgraph_chain(saver: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    async def step(state: _Chat) -> dict[str, list[dict[str, str]]]:
        return {"messages": [MESSAGE]}

    builder: Any = StateGraph(_Chat)
    names = [f"n{i}" for i in range(LENGTH)]
    for name in names:
        builder.add_node(name, step)
    for source, target in zip([START, *names], [*names, END], strict=True):
        builder.add_edge(source, target)
    return builder.compile(checkpointer=saver)


RunOne = Callable[[], Awaitable[None]]


@contextlib.asynccontextmanager
async def _agentgraph(dsn: str) -> Any:
    from agentgraph.checkpoint import PostgresStore

    store = PostgresStore(dsn, schema=f"bench_{uuid.uuid4().hex[:12]}")
    await store.flush()  # connected, tables made, before the clock starts
    graph, runner, start = agentgraph_chain(), GraphRunner(), AgentContext(None)

    async def run_one() -> None:
        out = await runner.run(graph, start, store=store)
        assert len(out.history) == LENGTH

    try:
        yield run_one
    finally:
        await store.aclose()
        _drop(dsn, store.schema)


@contextlib.asynccontextmanager
async def _langgraph(dsn: str) -> Any:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(dsn, max_size=20, kwargs=kwargs, open=False) as pool:
        await pool.open(wait=True)
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        await saver.setup()
        graph = langgraph_chain(saver)

        async def run_one() -> None:
            config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
            out = await graph.ainvoke({"messages": []}, config)
            assert len(out["messages"]) == LENGTH

        yield run_one
    # LangGraph's tables live in `public` of the benchmark's server; they are left there.


def _drop(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def _measure(run_one: RunOne, workers: int, runs_each: int, server: ServerCPU) -> Any:
    async def worker() -> None:
        for _ in range(runs_each):
            await run_one()

    await asyncio.gather(*(worker() for _ in range(min(workers, 10))))  # warm-up
    cpu, loop, db = _own_cpu(), _loop_cpu(), server.seconds()
    started = perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    elapsed = perf_counter() - started
    cpu, loop, db = _own_cpu() - cpu, _loop_cpu() - loop, server.seconds() - db
    steps = workers * runs_each * LENGTH
    return {
        "steps": steps,
        "seconds": elapsed,
        "steps_per_s": steps / elapsed,
        "ms_per_step": elapsed / steps * 1e3 * (workers if workers == 1 else 1),
        "client_us": cpu / steps * 1e6,
        "loop_us": loop / steps * 1e6,
        "server_us": db / steps * 1e6,
    }


def run_case(case: str, sizes: Sizes, dsn: str) -> dict[str, Any]:
    """Measure one case in this process against the server at `dsn`."""
    if case not in CASES:
        raise ValueError(f"unknown case {case!r}; known: {', '.join(CASES)}")
    framework, shape = case.split(":")
    peer = framework == "langgraph"
    if shape == "many":
        workers, runs_each = sizes.concurrent, sizes.peer_runs_each if peer else sizes.runs_each
    else:
        workers, runs_each = 1, sizes.peer_one_runs if peer else sizes.one_runs
    opened = _langgraph if peer else _agentgraph

    async def main() -> dict[str, Any]:
        server = ServerCPU(dsn)
        async with opened(dsn) as run_one:
            result = await _measure(run_one, workers, runs_each, server)
        return {"case": case, **result}

    return asyncio.run(main())


# -- the parent: server, turns, report ------------------------------------------------------


def child(case: str, dsn: str, *, quick: bool, tree: Path = ROOT) -> dict[str, Any]:
    """One case in a fresh interpreter that imports agentgraph from `tree`."""
    args = ["--case", case, "--dsn", dsn, *(["--quick"] if quick else [])]
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree)
    try:
        result: dict[str, Any] = run_child(HERE / "postgres_throughput.py", *args, timeout=1800)
    except ChildFailed as exc:
        return {"case": case, "error": clean_error(exc.line)}
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
    return result


def median_of(samples: list[dict[str, Any]]) -> dict[str, Any]:
    good = [s for s in samples if "error" not in s]
    if not good:
        return samples[-1]
    keys = [k for k, v in good[0].items() if isinstance(v, float)]
    return {**good[0], **{k: statistics.median(s[k] for s in good) for k in keys}}


def measure_all(dsn: str, sizes: Sizes, quick: bool, before: Path | None) -> dict[str, Any]:
    trees = {"after": ROOT, **({"before": before} if before is not None else {})}
    samples: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _ in range(sizes.rounds):
        for case in CASES:
            for label, tree in trees.items():
                if label == "before" and not case.startswith("agentgraph"):
                    continue
                print(f"measuring {case} ({label}) ...", file=sys.stderr, flush=True)
                samples.setdefault((label, case), []).append(
                    child(case, dsn, quick=quick, tree=tree)
                )
    return {f"{label}|{case}": median_of(s) for (label, case), s in samples.items()}


HEAD = (
    "| Case | committed steps/s | ms/step | client CPU µs/step | of it, event loop "
    "| server CPU µs/step |"
)


def _row(label: str, r: dict[str, Any]) -> str:
    if "error" in r:
        return f"| {label} | not measured: {r['error']} |||||"
    return (
        f"| {label} | {r['steps_per_s']:,.0f} | {r['ms_per_step']:.3f} | {r['client_us']:.1f} "
        f"| {r['loop_us']:.1f} | {r['server_us']:.1f} |"
    )


def _verdict(value: float, limit: float, unit: str, *, at_least: bool = False) -> str:
    ok = value >= limit if at_least else value <= limit
    shown = f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"
    return f"{shown}: {'met' if ok else '**missed**'}"


def _targets(results: dict[str, Any]) -> list[str]:
    many, one = results["after|agentgraph:many"], results["after|agentgraph:one"]
    if "error" in many or "error" in one:
        return []
    return [
        "| Target | Measured |",
        "|---|---|",
        f"| ≥ 15,000 committed steps/s, 100 runs at once | "
        f"{_verdict(many['steps_per_s'], 15_000, 'steps/s', at_least=True)} |",
        f"| client CPU ≤ 30 µs per committed step | {_verdict(many['client_us'], 30, 'µs')} |",
        f"| one run alone ≤ 0.5 ms per step | {_verdict(one['ms_per_step'], 0.5, 'ms')} |",
    ]


def render(
    results: dict[str, Any], sizes: Sizes, load: tuple[float, float], rev: str | None
) -> str:
    ours, peer = results["after|agentgraph:many"], results["after|langgraph:many"]
    ratio = (
        f"{ours['steps_per_s'] / peer['steps_per_s']:.1f}x"
        if "error" not in ours and "error" not in peer
        else "not measured"
    )
    targets = _targets(results)
    missed = any("**missed**" in line for line in targets)
    lines = [
        HEADING,
        "",
        f"A chain of {LENGTH} nodes, each appending one message, every step committed, on "
        "PostgreSQL with its default settings (`synchronous_commit=on`) on this machine. "
        f"`many`: {sizes.concurrent} runs at once; `one`: one run at a time. Produced by "
        "`python benchmarks/postgres_throughput.py` (`make bench-postgres`).",
        "",
        HEAD,
        "|---|--:|--:|--:|--:|--:|",
        *(_row(case, results[f"after|{case}"]) for case in CASES),
        "",
        f"agentgraph over LangGraph, committed steps per second at {sizes.concurrent} runs at "
        f"once: {ratio}.",
        "",
        *targets,
        "",
        "Where the time goes. Per committed step at 100 runs the client and the server "
        "together use about 40 µs of CPU (the server's share is what the database costs: "
        "its own floor), so 2 cores could carry far more than the rate measured: the rate "
        "is bound by latency, not CPU. Each run waits for three commits in a row (its lease "
        "take, its run record, its last steps with the release), each an fsync of the WAL "
        "and two exchanges with the server on the store's one connection, with the writer "
        "thread waiting for the interpreter lock after each exchange while the event loop is "
        f"busy. {'What meeting the misses would cost' if missed else 'What more would cost'}: "
        "answering the lease take from the "
        "transaction that also writes the run record (two commits per run instead of "
        "three: a change to how a run opens), and a second connection so that one commit's "
        "fsync overlaps the next one's statements (lease rows locked in one order keep two "
        "connections from deadlocking). A run alone is bound the same way: three fsyncs "
        "plus six exchanges per ten steps. The rates follow the machine's load (other work "
        "on the same 2 cores): compare runs made at like load averages (see Method).",
        "",
    ]
    if rev is not None:
        lines += [f"### Before and after (`{rev}`)", "", HEAD, "|---|--:|--:|--:|--:|--:|"]
        for case in CASES:
            if case.startswith("agentgraph"):
                lines.append(_row(f"{case}, before", results[f"before|{case}"]))
                lines.append(_row(f"{case}, after", results[f"after|{case}"]))
        lines.append("")
    lines += [
        "### Method",
        "",
        f"- Each case in a fresh interpreter on asyncio, the frameworks taking turns, medians "
        f"of {sizes.rounds} turns. `many`: {sizes.concurrent} workers each running "
        f"{sizes.runs_each} runs back to back ({sizes.peer_runs_each} for LangGraph), after a "
        f"warm-up; `one`: {sizes.one_runs} runs in a row ({sizes.peer_one_runs} for "
        "LangGraph). A run counts once `GraphRunner.run` (or `ainvoke`) returned: every "
        "step durable.",
        "- Client CPU: the process's user and system time (every thread: the event loop, the "
        "store's writer) over the steps committed; `event loop` is the loop thread's share. "
        "Server CPU: the postmaster's time, its live children's and its reaped children's "
        "(psutil), over the same steps: what the database costs.",
        "- agentgraph: `PostgresStore`, one schema per case. LangGraph: `AsyncPostgresSaver` "
        "on a `psycopg_pool.AsyncConnectionPool` of 20 connections, default durability, a "
        "thread id per run.",
        f"- Machine: Python {sys.version.split()[0]}, "
        + versions("psycopg", "langgraph", "langgraph-checkpoint-postgres", "psycopg-pool")
        + f", {os.cpu_count()} cores shared with the server; 1-minute load average "
        f"{load[0]:.2f} before, {load[1]:.2f} after.",
        "",
    ]
    return "\n".join(lines)


@contextlib.contextmanager
def maybe_checkout(rev: str | None) -> Iterator[Path | None]:
    if rev is None:
        yield None
        return
    from before_after import checkout

    with checkout(rev) as tree:
        yield tree


def main(argv: list[str] | None = None) -> None:
    parser = section_parser(__doc__ or "", "small sizes, table only")
    parser.add_argument("--case", choices=CASES, help="measure one case, print one JSON line")
    parser.add_argument("--dsn", help="the server (with --case)")
    parser.add_argument("--before", help="an earlier revision to measure agentgraph against")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.case:
        if not args.dsn:
            parser.error("--case needs --dsn")
        print(json.dumps(run_case(args.case, sizes, args.dsn)), flush=True)
        return
    load = load_average()
    with postgres_server() as dsn, maybe_checkout(args.before) as before:
        results = measure_all(dsn, sizes, args.quick, before)
    section = render(results, sizes, (load, load_average()), args.before)
    publish(section, output=args.output, quick=args.quick)


if __name__ == "__main__":
    main()
