"""Long-term memory throughput: put, get, filter and search per store, with precomputed vectors.

`python benchmarks/memory.py [--sizes 10000 100000] [--stores memory sqlite postgres
langgraph-memory langgraph-postgres]` prints one JSON line per store and size. Vectors are
random unit vectors of 384 dimensions, looked up by text, so the embedder costs nothing and
the figures are the store's own. The PostgreSQL stores get a server of their own (started as
the tests start theirs). LangGraph's `PostgresStore` has no semantic search without the
pgvector extension, so its search figure is left out; its `InMemoryStore` searches the same
vectors through its own index.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import numpy as np

from agentgraph.memory import InMemoryMemory, PostgresMemory, SQLiteMemory

DIMENSIONS = 384
BATCH = 1000


class Precomputed:
    """An embedder that answers from a table of vectors made beforehand."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    async def embed(self, texts):
        return [self.table[t] for t in texts]


def vectors(count: int, seed: int = 7) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((count, DIMENSIONS)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def make_store(kind: str, embedder: Precomputed, folder: Path, dsn: str | None = None) -> Any:
    if kind == "memory":
        return InMemoryMemory(embedder=embedder)
    if kind == "sqlite":
        return SQLiteMemory(folder / f"memory-{time.monotonic_ns()}.db", embedder=embedder)
    if kind == "postgres":
        assert dsn is not None, "the postgres store needs a server"
        return PostgresMemory(dsn, schema=f"bench_{time.monotonic_ns()}", embedder=embedder)
    raise ValueError(f"unknown store {kind!r}")


def group_of(i: int) -> tuple[str, str]:
    return ("user", str((i // BATCH * BATCH) % 7))


async def run_case(
    kind: str,
    size: int,
    *,
    lookups: int = 200,
    searches: int = 20,
    dsn: str | None = None,
) -> dict[str, Any]:
    if kind.startswith("langgraph-"):
        return await anyio.to_thread.run_sync(
            lambda: run_langgraph(kind, size, lookups=lookups, searches=searches, dsn=dsn)
        )
    matrix = vectors(size + searches)
    texts = [f"fact number {i}" for i in range(size + searches)]
    embedder = Precomputed({t: matrix[i].tolist() for i, t in enumerate(texts)})
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(kind, embedder, Path(tmp), dsn)
        started = time.perf_counter()
        for start in range(0, size, BATCH):
            batch = {
                f"k{i}": {"text": texts[i], "group": i % 10}
                for i in range(start, min(size, start + BATCH))
            }
            await store.put_many(group_of(start), batch)
        put_s = time.perf_counter() - started
        rng = random.Random(1)
        keys = [rng.randrange(size) for _ in range(lookups)]
        started = time.perf_counter()
        for i in keys:
            await store.get(group_of(i), f"k{i}")
        get_s = time.perf_counter() - started
        started = time.perf_counter()
        for g in range(searches):
            await store.search(("user",), filter={"group": g % 10}, limit=10)
        filter_s = time.perf_counter() - started
        # The first search loads the vectors (SQL stores keep them until the next write).
        started = time.perf_counter()
        await store.search(("user",), texts[size], limit=10)
        first_s = time.perf_counter() - started
        started = time.perf_counter()
        for q in range(searches):
            await store.search(("user",), texts[size + q], limit=10)
        search_s = time.perf_counter() - started
        if hasattr(store, "close"):
            store.close()
    return figures(kind, size, put_s, get_s / lookups, filter_s / searches, search_s / searches) | {
        "first_search_ms": round(first_s * 1e3, 2)
    }


def figures(
    kind: str, size: int, put_s: float, get_s: float, filter_s: float, search_s: float | None
) -> dict[str, Any]:
    return {
        "store": kind,
        "items": size,
        "put_per_s": round(size / put_s),
        "get_us": round(get_s * 1e6, 1),
        "filter_ms": round(filter_s * 1e3, 2),
        "search_ms": None if search_s is None else round(search_s * 1e3, 2),
    }


def run_langgraph(
    kind: str, size: int, *, lookups: int, searches: int, dsn: str | None
) -> dict[str, Any]:
    """The same work against LangGraph's stores (their synchronous API, batched puts)."""
    from langgraph.store.base import PutOp

    matrix = vectors(size + searches)
    texts = [f"fact number {i}" for i in range(size + searches)]
    table = {t: matrix[i].tolist() for i, t in enumerate(texts)}
    if kind == "langgraph-memory":
        from langgraph.store.memory import InMemoryStore

        index = {"dims": DIMENSIONS, "embed": lambda batch: [table[t] for t in batch]}
        store: Any = InMemoryStore(index={**index, "fields": ["text"]})
        context: Any = None
    elif kind == "langgraph-postgres":
        from langgraph.store.postgres import PostgresStore

        assert dsn is not None, "the postgres store needs a server"
        context = PostgresStore.from_conn_string(dsn)
        store = context.__enter__()
        store.setup()
    else:
        raise ValueError(f"unknown store {kind!r}")
    try:
        started = time.perf_counter()
        for start in range(0, size, BATCH):
            store.batch(
                [
                    PutOp(group_of(start), f"k{i}", {"text": texts[i], "group": i % 10})
                    for i in range(start, min(size, start + BATCH))
                ]
            )
        put_s = time.perf_counter() - started
        rng = random.Random(1)
        keys = [rng.randrange(size) for _ in range(lookups)]
        started = time.perf_counter()
        for i in keys:
            store.get(group_of(i), f"k{i}")
        get_s = time.perf_counter() - started
        started = time.perf_counter()
        for g in range(searches):
            store.search(("user",), filter={"group": g % 10}, limit=10)
        filter_s = time.perf_counter() - started
        search_s = None
        if kind == "langgraph-memory":
            started = time.perf_counter()
            for q in range(searches):
                store.search(("user",), query=texts[size + q], limit=10)
            search_s = (time.perf_counter() - started) / searches
    finally:
        if context is not None:
            context.__exit__(None, None, None)
    return figures(kind, size, put_s, get_s / lookups, filter_s / searches, search_s)


async def main(args: argparse.Namespace) -> None:
    if any("postgres" in kind for kind in args.stores):
        from tests.pg_server import PostgresServer, bindir

        found = bindir()
        if found is None:
            raise SystemExit("the postgres stores need PostgreSQL's server binaries")
        with PostgresServer(found, durable=True) as server:
            await cases(args, server.dsn)
    else:
        await cases(args, None)


async def cases(args: argparse.Namespace, dsn: str | None) -> None:
    for size in args.sizes:
        for kind in args.stores:
            result = await run_case(kind, size, searches=args.searches, dsn=dsn)
            print(json.dumps(result), flush=True)


STORES = ["memory", "sqlite", "postgres", "langgraph-memory", "langgraph-postgres"]

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--stores", nargs="+", default=STORES)
    parser.add_argument("--searches", type=int, default=20)
    anyio.run(main, parser.parse_args())
