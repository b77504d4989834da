"""A turn on a long thread: agentgraph's stores beside LangGraph's checkpointers.

The workload: a thread built by 100 turns of 100 messages each (99 sent, one appended
by the graph's single node), then turns that send one message and append one (two
messages per turn) on that thread of 10,000 messages and on a thread of 10 messages,
through the public thread API (`GraphRunner.run(..., thread_id=...)`), in a process
that has run the thread before. Per store: the turn's wall time (median of the
measured turns), and for agentgraph the bytes the turn wrote to its store and read from
it (the payload of the records: `Record.nbytes`, `RunLog.nbytes`). LangGraph runs the
same turns with `InMemorySaver`, `SqliteSaver` and `AsyncPostgresSaver`: a graph of
one node whose state is a list of messages reduced by `operator.add`.

A cold turn: the first turn of a fresh process on the long thread (nothing cached),
its node reading the thread's last 20 messages, on SQLite and PostgreSQL.

PostgreSQL is started by the benchmark (the tests' throwaway server) unless
``AGENTGRAPH_BENCH_POSTGRES`` names one.

Usage::

    python benchmarks/long_threads.py            # writes its RESULTS.md section
    python benchmarks/long_threads.py --quick    # small sizes, table only
"""

import asyncio
import contextlib
import json
import operator
import os
import statistics
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Annotated, Any, TypedDict

from _common import ChildFailed, load_average, machine, postgres_server, publish, run_child

from agentgraph import AgentContext, Graph, GraphBuilder, GraphRunner, node
from agentgraph.llm import Message

HERE = Path(__file__).resolve().parent
HEADING = "## Long threads"
STORES = ("memory", "sqlite", "postgres")


@dataclass(frozen=True)
class Sizes:
    turns: int = 100  # turns that build the long thread
    per_turn: int = 100  # messages each of those turns adds
    short: int = 10  # messages of the short thread
    measured: int = 15  # turns measured on each thread
    peer_measured: int = 7


FULL = Sizes()
QUICK = Sizes(turns=4, per_turn=10, short=4, measured=2, peer_measured=2)


# -- agentgraph ------------------------------------------------------------------------


def agentgraph_turn(probe: int = 0) -> Graph[None, None]:
    """One node appending one message (reading the last `probe` messages first)."""

    @node
    async def reply(ctx: AgentContext[None]) -> AgentContext[None]:
        if probe:
            seen = ctx.history[len(ctx.history) - probe :]
            assert len(seen) == probe
        return ctx.append(Message("assistant", "noted"))

    with GraphBuilder("turn") as g:
        g.start.edge_to(reply)
        reply.edge_to(g.finish)
    return g.build()


class Counted:
    """Counts the payload bytes a store is given and gives back."""

    def __init__(self, store: Any) -> None:
        self.written = 0
        self.read = 0
        write, load = store.write, store.load

        def counted_write(records: Any) -> None:
            self.written += sum(r.nbytes for r in records)
            write(records)

        async def counted_load(run_id: str) -> Any:
            log = await load(run_id)
            if log is not None:
                self.read += log.nbytes
            return log

        store.write = counted_write
        store.load = counted_load


@contextlib.asynccontextmanager
async def agentgraph_store(kind: str, where: str, dsn: str | None) -> AsyncIterator[Any]:
    from agentgraph.checkpoint import MemoryStore, PostgresStore, SQLiteStore

    store: Any
    if kind == "memory":
        store = MemoryStore()
    elif kind == "sqlite":
        store = SQLiteStore(os.path.join(where, "threads.db"))
    else:
        assert dsn is not None
        store = PostgresStore(dsn, schema=where)
    try:
        # Opened before the clock, as LangGraph's savers are: a read of nothing connects,
        # makes the tables and starts the store's threads.
        await store.load("no such run")
        yield store
    finally:
        await store.aclose()


def _messages(n: int, turn: int) -> list[Message]:
    return [Message("user", f"turn {turn} message {i}: " + "x" * 40) for i in range(n)]


async def _build(run: Callable[[str, list[Message]], Awaitable[None]], thread: str, sizes: Sizes):
    for turn in range(sizes.turns):
        await run(thread, _messages(sizes.per_turn - 1, turn))


async def _build_short(run: Callable[[str, list[Message]], Awaitable[None]], thread: str, n: int):
    for turn in range(n // 2):
        await run(thread, _messages(1, turn))


async def measure_agentgraph(kind: str, sizes: Sizes, dsn: str | None) -> dict[str, Any]:
    graph, runner = agentgraph_turn(), GraphRunner()
    with tempfile.TemporaryDirectory() as tmp:
        where = tmp if kind != "postgres" else f"bench_{uuid.uuid4().hex[:12]}"
        async with agentgraph_store(kind, where, dsn) as store:
            counted = Counted(store)

            async def run(thread: str, messages: list[Message]) -> None:
                await runner.run(graph, AgentContext(None, messages), store=store, thread_id=thread)

            await _build(run, "long", sizes)
            await _build_short(run, "short", sizes.short)
            out: dict[str, Any] = {"store": kind, "framework": "agentgraph"}
            for thread in ("long", "short"):
                times, written, read = [], [], []
                for turn in range(sizes.measured):
                    counted.written = counted.read = 0
                    start = perf_counter()
                    await run(thread, _messages(1, 1000 + turn))
                    times.append(perf_counter() - start)
                    written.append(counted.written)
                    read.append(counted.read)
                out[thread] = {
                    "ms": statistics.median(times) * 1e3,
                    "written": statistics.median(written),
                    "read": statistics.median(read),
                }
            if kind == "postgres":
                _drop(dsn, where)
    return out


def _drop(dsn: str | None, schema: str) -> None:
    import psycopg

    assert dsn is not None
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


# -- LangGraph -------------------------------------------------------------------------


class _Chat(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]


def langgraph_turn(saver: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    async def reply(state: _Chat) -> dict[str, list[dict[str, str]]]:
        return {"messages": [{"role": "assistant", "content": "noted"}]}

    builder: Any = StateGraph(_Chat)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


@contextlib.asynccontextmanager
async def langgraph_saver(kind: str, where: str, dsn: str | None) -> AsyncIterator[Any]:
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
    elif kind == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(os.path.join(where, "lg.db")) as saver:
            yield saver
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        async with AsyncConnectionPool(dsn, max_size=4, kwargs=kwargs, open=False) as pool:
            await pool.open(wait=True)
            saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
            await saver.setup()
            yield saver


async def measure_langgraph(kind: str, sizes: Sizes, dsn: str | None) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory() as tmp:
        async with langgraph_saver(kind, tmp, dsn) as saver:
            graph = langgraph_turn(saver)

            async def run(thread: str, messages: list[Message]) -> None:
                sent = [{"role": m.role, "content": m.content} for m in messages]
                config: Any = {"configurable": {"thread_id": f"{thread}-{tag}"}}
                await graph.ainvoke({"messages": sent}, config)

            await _build(run, "long", sizes)
            await _build_short(run, "short", sizes.short)
            out: dict[str, Any] = {"store": kind, "framework": "langgraph"}
            for thread in ("long", "short"):
                times = []
                for turn in range(sizes.peer_measured):
                    start = perf_counter()
                    await run(thread, _messages(1, 1000 + turn))
                    times.append(perf_counter() - start)
                out[thread] = {"ms": statistics.median(times) * 1e3}
    return out


# -- a cold turn: the first of a fresh process ---------------------------------------------


async def cold_build(kind: str, framework: str, where: str, dsn: str | None, sizes: Sizes) -> None:
    """Build the long thread in `where` (a file's folder, or a schema), for a cold turn."""
    if framework == "agentgraph":
        graph, runner = agentgraph_turn(), GraphRunner()
        async with agentgraph_store(kind, where, dsn) as store:

            async def run(thread: str, messages: list[Message]) -> None:
                await runner.run(graph, AgentContext(None, messages), store=store, thread_id=thread)

            await _build(run, "long", sizes)
        return
    async with langgraph_saver(kind, where, dsn) as saver:
        lg = langgraph_turn(saver)

        async def lg_run(thread: str, messages: list[Message]) -> None:
            sent = [{"role": m.role, "content": m.content} for m in messages]
            await lg.ainvoke({"messages": sent}, {"configurable": {"thread_id": thread}})

        await _build(lg_run, "long", sizes)


async def cold_turn(kind: str, framework: str, where: str, dsn: str | None) -> float:
    """Milliseconds of one turn on the long thread, this process's first."""
    if framework == "agentgraph":
        graph, runner = agentgraph_turn(probe=20), GraphRunner()
        async with agentgraph_store(kind, where, dsn) as store:
            start = perf_counter()
            ctx = AgentContext(None, _messages(1, 5000))
            await runner.run(graph, ctx, store=store, thread_id="long")
            return (perf_counter() - start) * 1e3
    async with langgraph_saver(kind, where, dsn) as saver:
        from langgraph.graph import END, START, StateGraph

        async def reply(state: _Chat) -> dict[str, list[dict[str, str]]]:
            assert len(state["messages"][-20:]) == 20
            return {"messages": [{"role": "assistant", "content": "noted"}]}

        builder: Any = StateGraph(_Chat)
        builder.add_node("reply", reply)
        builder.add_edge(START, "reply")
        builder.add_edge("reply", END)
        lg = builder.compile(checkpointer=saver)
        start = perf_counter()
        sent = {"messages": [{"role": "user", "content": "one more"}]}
        await lg.ainvoke(sent, {"configurable": {"thread_id": "long"}})
        return (perf_counter() - start) * 1e3


def measure_cold(kind: str, framework: str, sizes: Sizes, dsn: str | None, quick: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        where = tmp if kind == "sqlite" else f"cold_{uuid.uuid4().hex[:12]}"
        if kind == "postgres" and framework == "langgraph":
            where = "public"
        asyncio.run(cold_build(kind, framework, where, dsn, sizes))
        args = ["--cold", f"{kind}:{framework}:{where}", *(["--quick"] if quick else [])]
        env_dsn = {"AGENTGRAPH_BENCH_POSTGRES": dsn} if dsn else {}
        os.environ.update(env_dsn)
        result = run_child(__file__, *args, timeout=600)
        if kind == "postgres" and framework == "agentgraph":
            _drop(dsn, where)
        return float(result["ms"])


# -- report ----------------------------------------------------------------------------


def measure_all(sizes: Sizes, dsn: str | None, quick: bool) -> dict[str, Any]:
    rows = []
    for kind in STORES:
        for measure in (measure_agentgraph, measure_langgraph):
            print(f"measuring {measure.__name__} on {kind} ...", file=sys.stderr, flush=True)
            rows.append(asyncio.run(measure(kind, sizes, dsn if kind == "postgres" else None)))
    cold = {}
    for kind in ("sqlite", "postgres"):
        for framework in ("agentgraph", "langgraph"):
            print(f"measuring a cold turn of {framework} on {kind} ...", file=sys.stderr)
            try:
                cold[f"{kind}:{framework}"] = measure_cold(
                    kind, framework, sizes, dsn if kind == "postgres" else None, quick
                )
            except ChildFailed as exc:
                cold[f"{kind}:{framework}"] = f"failed: {exc.line}"
    return {"rows": rows, "cold": cold}


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def render(results: dict[str, Any], sizes: Sizes, load: tuple[float, float]) -> str:
    long_n = sizes.turns * sizes.per_turn
    lines = [
        HEADING,
        "",
        f"A turn that sends one message and appends one, on a thread of {long_n} messages "
        f"({sizes.turns} turns of {sizes.per_turn}) and on one of {sizes.short}; median of "
        f"{sizes.measured} turns (LangGraph: {sizes.peer_measured}), one process that ran the "
        "thread before. Bytes: record payload written to / read from the store per turn.",
        "",
        "| store | framework | long ms | short ms | long/short | written long/short (B) "
        "| read long/short (B) |",
        "|---|---|---|---|---|---|---|",
    ]
    by = {(r["store"], r["framework"]): r for r in results["rows"]}
    for (kind, framework), r in by.items():
        lo, sh = r["long"], r["short"]
        written = f"{lo['written']:.0f} / {sh['written']:.0f}" if "written" in lo else "-"
        read = f"{lo['read']:.0f} / {sh['read']:.0f}" if "read" in lo else "-"
        lines.append(
            f"| {kind} | {framework} | {lo['ms']:.2f} | {sh['ms']:.2f} | "
            f"{_ratio(lo['ms'], sh['ms'])} | {written} | {read} |"
        )
    lines += ["", "### Targets", "", "| target | measured | verdict |", "|---|---|---|"]
    for kind in STORES:
        ag, lg = by.get((kind, "agentgraph")), by.get((kind, "langgraph"))
        if ag is None:
            continue
        for what, key in (
            ("wall time", "ms"),
            ("bytes written", "written"),
            ("bytes read", "read"),
        ):
            long_v, short_v = ag["long"][key], ag["short"][key]
            ratio = long_v / short_v if short_v else (1.0 if not long_v else float("inf"))
            verdict = "met" if ratio <= 1.5 else "missed"
            lines.append(f"| {kind}: {what} long ≤ 1.5x short | {ratio:.2f}x | {verdict} |")
        if lg is not None:
            faster = lg["long"]["ms"] / ag["long"]["ms"]
            verdict = "met" if faster >= 3 else "missed"
            lines.append(
                f"| {kind}: ≥ 3x faster than LangGraph, long | {faster:.1f}x | {verdict} |"
            )
    for kind in ("sqlite", "postgres"):
        ag, lg = results["cold"].get(f"{kind}:agentgraph"), results["cold"].get(f"{kind}:langgraph")
        if isinstance(ag, float) and isinstance(lg, float):
            verdict = "met" if ag <= lg else "missed"
            lines.append(
                f"| {kind}: a cold turn no slower than LangGraph's | "
                f"{ag:.1f} ms vs {lg:.1f} ms | {verdict} |"
            )
        else:
            lines.append(f"| {kind}: a cold turn | {ag} / {lg} | not measured |")
    lines += ["", "### Machine", "", machine(load[0], "langgraph", "langgraph-checkpoint")]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, table only")
    parser.add_argument("--output", type=Path, help="write the section here")
    parser.add_argument("--cold", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.cold:
        kind, framework, where = args.cold.split(":", 2)
        dsn = os.environ.get("AGENTGRAPH_BENCH_POSTGRES")
        print(json.dumps({"ms": asyncio.run(cold_turn(kind, framework, where, dsn))}))
        return
    before = load_average()
    with postgres_server() as dsn:
        results = measure_all(sizes, dsn, args.quick)
    publish(render(results, sizes, (before, load_average())), output=args.output, quick=args.quick)


if __name__ == "__main__":
    main()
