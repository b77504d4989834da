"""Long-term memory throughput: put, get, filter and search per store, with precomputed vectors.

`python benchmarks/memory.py [--sizes 10000 100000] [--stores memory sqlite]` prints one
JSON line per store and size. Vectors are random unit vectors of 384 dimensions, looked up
by text, so the embedder costs nothing and the figures are the store's own.
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
import numpy as np

from agentgraph.memory import InMemoryMemory, SQLiteMemory

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


def make_store(kind: str, embedder: Precomputed, folder: Path) -> Any:
    if kind == "memory":
        return InMemoryMemory(embedder=embedder)
    if kind == "sqlite":
        return SQLiteMemory(folder / f"memory-{time.monotonic_ns()}.db", embedder=embedder)
    raise ValueError(f"unknown store {kind!r}")


async def run_case(
    kind: str, size: int, *, lookups: int = 200, searches: int = 20
) -> dict[str, Any]:
    matrix = vectors(size + searches)
    texts = [f"fact number {i}" for i in range(size + searches)]
    embedder = Precomputed({t: matrix[i].tolist() for i, t in enumerate(texts)})
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(kind, embedder, Path(tmp))
        started = time.perf_counter()
        for start in range(0, size, BATCH):
            batch = {
                f"k{i}": {"text": texts[i], "group": i % 10}
                for i in range(start, min(size, start + BATCH))
            }
            await store.put_many(("user", str(start % 7)), batch)
        put_s = time.perf_counter() - started
        rng = random.Random(1)
        keys = [rng.randrange(size) for _ in range(lookups)]
        started = time.perf_counter()
        for i in keys:
            await store.get(("user", str((i // BATCH * BATCH) % 7)), f"k{i}")
        get_s = time.perf_counter() - started
        started = time.perf_counter()
        for g in range(searches):
            await store.search(("user",), filter={"group": g % 10}, limit=10)
        filter_s = time.perf_counter() - started
        started = time.perf_counter()
        for q in range(searches):
            await store.search(("user",), texts[size + q], limit=10)
        search_s = time.perf_counter() - started
        if hasattr(store, "close"):
            store.close()
    return {
        "store": kind,
        "items": size,
        "put_per_s": round(size / put_s),
        "get_us": round(get_s / lookups * 1e6, 1),
        "filter_ms": round(filter_s / searches * 1e3, 2),
        "search_ms": round(search_s / searches * 1e3, 2),
    }


async def main(args: argparse.Namespace) -> None:
    for size in args.sizes:
        for kind in args.stores:
            print(json.dumps(await run_case(kind, size, searches=args.searches)), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--stores", nargs="+", default=["memory", "sqlite"])
    parser.add_argument("--searches", type=int, default=20)
    anyio.run(main, parser.parse_args())
