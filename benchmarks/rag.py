"""RAG: exact top-10 search in `NumpyStore` beside FAISS's exact index, and local embedding speed.

- search: 100,000 random 384-dimension vectors (a fixed seed); build time, then the
  latency of single top-10 queries (median, p95) through `await store.search(...)`,
  and the same with FAISS `IndexFlatIP` over the normalized vectors (exact cosine).
  Every query's ten ids are compared between the two.
- persistence: writing the 100,000-vector store to its file, and opening it again.
- embedding: texts per second of `LocalEmbedder` (all-MiniLM-L6-v2 on the CPU), for
  short sentences and for 1,000-character chunks, after the model has loaded.

Usage::

    python benchmarks/rag.py          # full run; writes its section of RESULTS.md
    python benchmarks/rag.py --quick  # small run; prints the section only

Only the ``## RAG`` section of RESULTS.md is replaced; the rest of the file is left as it is.
"""

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from _common import cpu_model, load_average, os_name, publish, python, run_child, version
from _common import replace_section as replace_section  # re-exported: the section writer

from agentgraph.rag import LocalEmbedder, NumpyStore, Record

HEADING = "## RAG"
WORDS = ("graph", "node", "edge", "runner", "retry", "context", "history", "message", "tool")
WORDS += ("model", "store", "vector", "chunk", "source", "query", "answer", "stream", "event")
WORDS += ("trace", "budget", "summary", "window", "token", "file", "crash", "write")


@dataclass(frozen=True)
class Sizes:
    vectors: int = 100_000
    dimensions: int = 384
    queries: int = 200
    k: int = 10
    short_texts: int = 512
    long_texts: int = 128
    embed: bool = True


QUICK = Sizes(vectors=5_000, queries=20, short_texts=32, long_texts=8)


def data(sizes: Sizes) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20261121)
    vectors = rng.standard_normal((sizes.vectors, sizes.dimensions), dtype=np.float32)
    queries = rng.standard_normal((sizes.queries, sizes.dimensions), dtype=np.float32)
    return vectors, queries


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def measure_store(vectors: np.ndarray, queries: np.ndarray, k: int) -> dict[str, Any]:
    started = time.perf_counter()
    records = [Record(str(i), row) for i, row in enumerate(vectors)]
    store = NumpyStore()
    await store.add(records)
    build = time.perf_counter() - started
    for query in queries[:5]:
        await store.search(query, k=k)  # warm-up
    latencies, ids = [], []
    for query in queries:
        begin = time.perf_counter()
        hits = await store.search(query, k=k)
        latencies.append(time.perf_counter() - begin)
        ids.append([int(h.id) for h in hits])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.vectors"
        filed = await NumpyStore.open(path)
        begin = time.perf_counter()
        await filed.add(records)
        write = time.perf_counter() - begin
        begin = time.perf_counter()
        reopened = await NumpyStore.open(path)
        reopen = time.perf_counter() - begin
        size = path.stat().st_size
        same = [int(h.id) for h in await reopened.search(queries[0], k=k)] == ids[0]
    return {
        "build": build,
        "latencies": latencies,
        "ids": ids,
        "write": write,
        "reopen": reopen,
        "file_mib": size / 2**20,
        "reopen_same": same,
    }


def measure_faiss(vectors: np.ndarray, queries: np.ndarray, k: int) -> dict[str, Any] | None:
    try:
        import faiss
    except ImportError:
        return None
    started = time.perf_counter()
    matrix = vectors.copy()
    faiss.normalize_L2(matrix)
    index = faiss.IndexFlatIP(matrix.shape[1])
    index.add(matrix)
    build = time.perf_counter() - started
    unit = queries.copy()
    faiss.normalize_L2(unit)
    threads = faiss.omp_get_max_threads()
    runs = {}
    for count in sorted({threads, 1}, reverse=True):
        faiss.omp_set_num_threads(count)
        for query in unit[:5]:
            index.search(query[None, :], k)
        latencies, ids = [], []
        for query in unit:
            begin = time.perf_counter()
            _, found = index.search(query[None, :], k)
            latencies.append(time.perf_counter() - begin)
            ids.append(found[0].tolist())
        runs[count] = (latencies, ids)
    faiss.omp_set_num_threads(threads)
    # The comparison is with FAISS at its best: whichever thread count was faster.
    best = min(runs, key=lambda count: statistics.median(runs[count][0]))
    return {
        "build": build,
        "latencies": runs[best][0],
        "ids": runs[best][1],
        "threads": best,
        "runs": {count: statistics.median(run[0]) for count, run in runs.items()},
        "version": faiss.__version__,
    }


def _texts(count: int, words: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "." for _ in range(count)
    ]


async def measure_embedder(sizes: Sizes) -> dict[str, Any] | None:
    try:
        embedder = LocalEmbedder()
    except ImportError:
        return None
    begin = time.perf_counter()
    await embedder.load()
    load = time.perf_counter() - begin
    await embedder.embed(_texts(16, 12, 1))  # warm-up
    rates = {}
    for name, count, words in (("short", sizes.short_texts, 12), ("long", sizes.long_texts, 170)):
        texts = _texts(count, words, 2)
        begin = time.perf_counter()
        await embedder.embed(texts)
        rates[name] = count / (time.perf_counter() - begin)
        rates[f"{name}_chars"] = statistics.mean(len(t) for t in texts)
    return {"load": load, **rates}


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def search_table(sizes: Sizes, ours: dict[str, Any], peer: dict[str, Any] | None) -> list[str]:
    med, p95 = statistics.median(ours["latencies"]), percentile(ours["latencies"], 0.95)
    lines = [
        "| Index | Build s | Query median ms | Query p95 ms | x FAISS (median) |",
        "|---|--:|--:|--:|--:|",
    ]
    if peer is None:
        return [
            *lines,
            f"| agentgraph `NumpyStore` | {ours['build']:.2f} | {_ms(med)} | {_ms(p95)} | - |",
            "| FAISS `IndexFlatIP` | not measured: faiss-cpu is not installed | | | |",
        ]
    peer_med = statistics.median(peer["latencies"])
    peer_p95 = percentile(peer["latencies"], 0.95)
    others = ", ".join(
        f"{_ms(m)} ms with {n} thread{'s' if n > 1 else ''}" for n, m in peer["runs"].items()
    )
    return [
        *lines,
        f"| agentgraph `NumpyStore` | {ours['build']:.2f} | {_ms(med)} | {_ms(p95)} "
        f"| {med / peer_med:.2f}x |",
        f"| FAISS `IndexFlatIP` ({peer['threads']} thread(s)) | {peer['build']:.2f} "
        f"| {_ms(peer_med)} | {_ms(peer_p95)} | 1x |",
        "",
        f"FAISS medians by thread count: {others}; the faster one is the reference.",
    ]


def agreement(sizes: Sizes, ours: dict[str, Any], peer: dict[str, Any] | None) -> int | None:
    if peer is None:
        return None
    return sum(a == b for a, b in zip(ours["ids"], peer["ids"], strict=True))


def embed_lines(emb: dict[str, Any] | None) -> list[str]:
    if emb is None:
        return ["Local embedder: not measured (the `rag-local` extra is not installed).", ""]
    return [
        "| Local embedder (all-MiniLM-L6-v2, CPU) | Texts/s |",
        "|---|--:|",
        f"| short sentences (~{emb['short_chars']:.0f} chars) | {emb['short']:.1f} |",
        f"| chunks (~{emb['long_chars']:.0f} chars) | {emb['long']:.1f} |",
        "",
        f"The model loaded in {emb['load']:.1f} s (not counted).",
        "",
    ]


def target_lines(sizes: Sizes, ours: dict[str, Any], peer: dict[str, Any] | None) -> list[str]:
    lines = ["### Targets", "", "| Target | Measured | Verdict |", "|---|--:|---|"]
    same = agreement(sizes, ours, peer)
    if peer is None or same is None:
        return [*lines, "| median query within 2x of FAISS flat | - | not measured |", ""]
    ratio = statistics.median(ours["latencies"]) / statistics.median(peer["latencies"])
    return [
        *lines,
        f"| median query within 2x of FAISS flat | {ratio:.2f}x "
        f"| {'met' if ratio <= 2 else 'missed'} |",
        f"| identical top-{sizes.k} results | {same}/{sizes.queries} queries "
        f"| {'met' if same == sizes.queries else 'missed'} |",
        "",
    ]


METHOD = [
    "### Method",
    "",
    "- Vectors and queries: standard normal float32 from a fixed seed.",
    "- agentgraph: a `Record(id, row)` per vector and one `await store.add(records)` into an",
    "  in-memory `NumpyStore` (build time covers both; the store normalizes the rows), then one",
    "  `await store.search(query, k)` per query on asyncio. Above 262,144 stored floats a search",
    "  runs in a worker thread, so the figures include that hop.",
    "- FAISS: `normalize_L2` and `IndexFlatIP.add` (build), then one",
    "  `index.search(query[None], k)` per normalized query, with OpenMP's default threads and",
    "  with one thread.",
    "- Five warm-up queries each; latencies are wall time per query; ids are compared in order.",
    "- Persistence: a store opened on a file in a temporary folder, one `add` of every record",
    "  (the whole file written and renamed into place), then `NumpyStore.open` of that file.",
    "- Embedding: one `embed(texts)` call per kind (batches of 64), after a warm-up call.",
    "",
]


def render(
    sizes: Sizes, ours: dict[str, Any], peer: dict[str, Any] | None, emb: dict[str, Any] | None
) -> str:
    same = agreement(sizes, ours, peer)
    compared = (
        "FAISS not installed: results not compared."
        if same is None
        else f"Top-{sizes.k} ids, in order, match FAISS's for {same} of {sizes.queries} queries."
    )
    lines = [
        HEADING,
        "",
        f"Exact top-{sizes.k} cosine search over {sizes.vectors:,} random "
        f"{sizes.dimensions}-dimension vectors, {sizes.queries} single queries. Produced by "
        "`make bench-rag` (`python benchmarks/rag.py`); lower is better.",
        "",
        *search_table(sizes, ours, peer),
        "",
        compared,
        "",
        f"Persistence: writing the store to its file took {ours['write']:.2f} s "
        f"({ours['file_mib']:.0f} MiB); opening it again took {ours['reopen']:.2f} s, and the "
        f"reopened store {'returns the same hits' if ours['reopen_same'] else 'DIFFERS'}.",
        "",
        *embed_lines(emb),
        *target_lines(sizes, ours, peer),
        *METHOD,
        "### Machine",
        "",
        f"- {python()}; numpy {np.__version__}; "
        f"faiss-cpu {peer['version'] if peer else 'not installed'}; "
        f"sentence-transformers {version('sentence-transformers')}; torch {version('torch')}",
        f"- CPU: {cpu_model()}, {os.cpu_count()} cores; {os_name()}",
        f"- Date: {time.strftime('%Y-%m-%d')}; 1-minute load average "
        f"{load_average():.2f} at the end (other work was running on the machine)",
        "",
    ]
    return "\n".join(lines)


def embedder_in_child(quick: bool) -> dict[str, Any] | None:
    """The embedding figures, measured in a process of their own.

    torch and FAISS each keep OpenMP threads that spin after their work; in one
    process they slow each other down, which would measure the mix, not the model.
    """
    args = ["--embedder-only", *(["--quick"] if quick else [])]
    result: dict[str, Any] | None = run_child(__file__, *args, timeout=900)
    return result


async def run(sizes: Sizes, *, quick: bool) -> str:
    vectors, queries = data(sizes)
    ours = await measure_store(vectors, queries, sizes.k)
    peer = measure_faiss(vectors, queries, sizes.k)
    emb = embedder_in_child(quick) if sizes.embed else None
    return render(sizes, ours, peer, emb)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes; print, do not write")
    parser.add_argument("--embedder-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else Sizes()
    if args.embedder_only:
        print(json.dumps(anyio.run(measure_embedder, sizes)))
        return
    section = anyio.run(partial(run, sizes, quick=args.quick))
    publish(section, output=None, quick=args.quick)


if __name__ == "__main__":
    main()
