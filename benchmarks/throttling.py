"""Throttling: the wait for a pooled connection, and the return after a brownout.

Two measurements against the loopback fake provider (`agentgraph.testing.FakeServer`),
which runs in a process of its own:

- **Pool wait**: 1,000 requests start at once on 128 connections (the default client's
  16 pools of 8) against a server answering after 200 ms, with a 1 s pool timeout. The
  queue takes about 1.6 s to drain, so some requests cannot get a connection in time.
  httpcore's own pool (one `httpx.AsyncClient` with 128 connections) is compared with
  `SpreadTransport`: the longest wait for a connection, and how many requests waited past
  the pool timeout or failed with `httpx.PoolTimeout`.
- **Brownout**: 50 clients each send one request at a time (a 1 s answer); for 3 s
  the server answers every request 429 with a `retry-after-ms` pointing at the moment it
  recovers, as a rate limiter whose window resets does. Requests sent per 100 ms window
  are counted before the brownout and after it, with `ProviderRetry`'s default jitter on
  the server's delay and without it.

Usage::

    python benchmarks/throttling.py           # writes its section of RESULTS.md
    python benchmarks/throttling.py --quick   # smaller; prints the section only
"""

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from _common import cpu_model, load_average, publish, python, versions

from agentgraph.llm import ChatRequest, Message, OpenAIModel, ProviderRetry, SpreadTransport
from agentgraph.testing import ErrorResponse, FakeServer

HEADING = "## Throttling and pool wait"
KEY = "sk-bench"


@dataclass(frozen=True)
class Sizes:
    requests: int = 1_000
    connections: tuple[int, int] = (16, 8)
    answer_s: float = 0.2
    pool_timeout_s: float = 1.0
    clients: int = 50
    think_s: float = 1.0
    steady_s: float = 3.0
    brownout_s: float = 3.0
    after_s: float = 4.0


FULL = Sizes()
QUICK = Sizes(requests=300, connections=(4, 8), clients=30, steady_s=2.0, after_s=3.0)


# -- the fake server's process -------------------------------------------------------------


def serve(delay: float) -> None:
    """The server process: prints its URL, then obeys `brownout <s>` and `reset` on stdin."""
    with FakeServer(default="ok", delay=delay, api_key=KEY, backlog=4096) as server:
        print(json.dumps({"url": server.openai_url}), flush=True)
        for line in sys.stdin:
            command, _, argument = line.strip().partition(" ")
            if command == "brownout":
                threading.Thread(target=_limit, args=(server, float(argument))).start()
            elif command == "reset":
                server.reset()
            print(json.dumps({"ok": True}), flush=True)


def _limit(server: FakeServer, seconds: float) -> None:
    """The 429 a window-based limiter gives for `seconds`: come back when the window resets."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        server.clear_faults()
        server.inject(ErrorResponse(429, retry_after_ms=left * 1000), times=None)
        time.sleep(0.01)
    server.clear_faults()


class Server:
    """The fake server in a child process."""

    def __init__(self, delay: float) -> None:
        command = [sys.executable, str(Path(__file__).resolve()), "--serve", str(delay)]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.openai_url: str = self._read()["url"]

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("the fake server process ended unexpectedly")
        data: dict[str, Any] = json.loads(line)
        return data

    def ask(self, command: str) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()
        self._read()

    def close(self) -> None:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.close()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process.stdout.close()


# -- pool wait --------------------------------------------------------------------------


async def pool_wait(server: Server, sizes: Sizes, spread: bool) -> dict[str, Any]:
    pools, per_pool = sizes.connections
    timeout = httpx.Timeout(30.0, pool=sizes.pool_timeout_s)
    if spread:
        client = httpx.AsyncClient(
            transport=SpreadTransport(pools=pools, connections=per_pool), timeout=timeout
        )
    else:
        limits = httpx.Limits(
            max_connections=pools * per_pool, max_keepalive_connections=pools * per_pool
        )
        client = httpx.AsyncClient(limits=limits, timeout=timeout)
    url = f"{server.openai_url}/chat/completions"
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"authorization": f"Bearer {KEY}"}
    waits: list[float] = []
    failures: list[float] = []

    async def one() -> None:
        start = time.perf_counter()
        try:
            response = await client.post(url, json=body, headers=headers)
            response.raise_for_status()
            waits.append(time.perf_counter() - start - sizes.answer_s)
        except httpx.PoolTimeout:
            failures.append(time.perf_counter() - start)

    async with client:
        await one()  # one connection opened before the burst, as in a running service
        waits.clear()
        async with asyncio.TaskGroup() as group:
            for _ in range(sizes.requests):
                group.create_task(one())
    every = waits + failures
    return {
        "served": len(waits),
        "pool_timeouts": len(failures),
        "longest_wait_s": max(every),
        "median_wait_s": statistics.median(every),
        "past_timeout": sum(1 for w in every if w > sizes.pool_timeout_s * 2),
    }


# -- brownout ---------------------------------------------------------------------------


async def brownout(server: Server, sizes: Sizes, jitter: float) -> dict[str, Any]:
    sent: list[float] = []

    async def note(request: httpx.Request) -> None:
        sent.append(time.perf_counter())

    client = httpx.AsyncClient(
        transport=SpreadTransport(pools=16, connections=8), event_hooks={"request": [note]}
    )
    model = OpenAIModel(
        "fake-model",
        base_url=server.openai_url,
        api_key=KEY,
        http_client=client,
        retry=ProviderRetry(retry_after_jitter=jitter),
    )
    request = ChatRequest([Message.user("hi")])
    start = time.perf_counter()
    outage = (sizes.steady_s, sizes.steady_s + sizes.brownout_s)
    end = outage[1] + sizes.after_s
    failed = 0

    async def one(index: int) -> None:
        nonlocal failed
        await asyncio.sleep(index * sizes.think_s / sizes.clients)
        while time.perf_counter() - start < end:
            try:
                await model.request(request)
            except Exception:
                failed += 1

    async def limiter() -> None:
        await asyncio.sleep(outage[0])
        await asyncio.to_thread(server.ask, f"brownout {sizes.brownout_s}")

    async with client, asyncio.TaskGroup() as group:
        group.create_task(limiter())
        for index in range(sizes.clients):
            group.create_task(one(index))
    windows = Counter(int((t - start) * 10) for t in sent)
    before = [windows[w] for w in range(int(outage[0] * 10) // 3, int(outage[0] * 10))]
    after = [windows[w] for w in range(int(outage[1] * 10), int(end * 10) - 5)]
    return {
        "steady": statistics.mean(before),
        "peak_after": max(after),
        "failed_runs": failed,
    }


# -- report -----------------------------------------------------------------------------


def render(sizes: Sizes, pools: dict[str, dict[str, Any]], bursts: dict[str, dict]) -> str:
    total = sizes.connections[0] * sizes.connections[1]
    lines = [
        HEADING,
        "",
        f"Produced by `python benchmarks/throttling.py` against the loopback fake provider "
        f"answering after {sizes.answer_s * 1000:g} ms.",
        "",
        f"**Pool wait**: {sizes.requests:,} requests at once on {total} connections, pool "
        f"timeout {sizes.pool_timeout_s:g} s.",
        "",
        "| Client | Served | `PoolTimeout` | Longest wait s | Median wait s | Waited over twice "
        "the timeout |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for label, r in pools.items():
        lines.append(
            f"| {label} | {r['served']:,} | {r['pool_timeouts']:,} | {r['longest_wait_s']:.2f} "
            f"| {r['median_wait_s']:.2f} | {r['past_timeout']:,} |"
        )
    lines += [
        "",
        "A wait is a request's time to its answer less the server's delay (for a "
        "`PoolTimeout`, its time to the error). httpcore offers each freed connection to every "
        "waiting request and restarts the losers' timeout, so waits grow with the queue; "
        "`SpreadTransport` queues them in arrival order and ends each wait at the timeout. What "
        "its waits exceed the timeout by is the client's event loop being late with 1,000 "
        "tasks on a shared machine (load average "
        f"{load_average():.1f}), not time in line.",
        "",
        f"**Brownout**: {sizes.clients} clients, one request at a time answered after "
        f"{sizes.think_s:g} s, {sizes.brownout_s:g} s of 429s whose `retry-after-ms` points "
        "at the recovery.",
        "",
        "| Retry | Requests per 100 ms before | Busiest 100 ms after | Ratio | Failed requests |",
        "|---|--:|--:|--:|--:|",
    ]
    for label, r in bursts.items():
        lines.append(
            f"| {label} | {r['steady']:.1f} | {r['peak_after']} | "
            f"{r['peak_after'] / r['steady']:.1f}x | {r['failed_runs']} |"
        )
    lines += [
        "",
        "The same shape in simulated time is a test (`tests/llm/test_brownout.py`).",
        "",
        f"Machine: {python()}; {versions('httpx', 'httpcore', 'uvicorn')}; {cpu_model()}; "
        f"{time.strftime('%Y-%m-%d')}.",
        "",
    ]
    return "\n".join(lines)


async def measure(sizes: Sizes) -> str:
    server = Server(sizes.answer_s)
    try:
        pools = {
            "httpx client, httpcore's pool": await pool_wait(server, sizes, spread=False),
            "`SpreadTransport`": await pool_wait(server, sizes, spread=True),
        }
    finally:
        server.close()
    server = Server(sizes.think_s)  # a light load: the burst, not the server, is measured
    try:
        bursts = {}
        for label, jitter in (
            ("`ProviderRetry(retry_after_jitter=0)`", 0.0),
            ("`ProviderRetry()` (jitter 0.5)", 0.5),
        ):
            server.ask("reset")
            bursts[label] = await brownout(server, sizes, jitter)
    finally:
        server.close()
    return render(sizes, pools, bursts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller; print only")
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve(args.serve)
        return
    section = asyncio.run(measure(QUICK if args.quick else FULL))
    publish(section, output=None, quick=args.quick)


if __name__ == "__main__":
    main()
