"""The agent server under the `langgraph-sdk` client: throughput, first-event latency, memory.

The workload, at most 50 requests in flight:

- ``runs/s``: background runs (`client.runs.create`) spread over 50 threads, from the
  first create until every run has ended (`client.runs.join`);
- ``first event``: during that load, every 100 ms, a run streamed on an idle probe
  thread, timed from the request to its first `values`/`updates` event after
  `metadata` (p50 and p99);
- ``RSS growth``: the server's resident memory (its processes together) after
  threads each with a run waiting on an interrupt, over the idle server.

Cases: ``sqlite`` (one process), ``postgres-1`` and ``postgres-2`` (the API with no
workers of its own and one or two `agentgraph worker` processes; PostgreSQL is the one
at ``AGENTGRAPH_BENCH_POSTGRES``, or one started for the measurement), and the
reference, ``langgraph``: LangGraph's `langgraph dev` (in-memory runtime, 10 jobs)
serving the equivalent graphs of `benchmarks/langgraph_reference/` from a fresh
folder, run from the virtualenv whose `langgraph` command ``AGENTGRAPH_BENCH_LANGGRAPH``
names (`make bench-server` builds it; without it the case is left out).

Usage::

    python benchmarks/server.py                  # every case; prints its RESULTS.md table
    python benchmarks/server.py --rounds 3       # every case three times in turn, medians
    python benchmarks/server.py --quick          # small sizes
    python benchmarks/server.py --case sqlite    # one case, one JSON line
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import psutil
from langgraph_sdk import get_client

ROOT = Path(__file__).resolve().parent.parent
CASES = ("langgraph", "sqlite", "postgres-1", "postgres-2")
IN_FLIGHT = 50
REFERENCE = ROOT / "benchmarks" / "langgraph_reference"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _command(kind: str, store: str, *more: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "agentgraph",
        kind,
        "benchmarks._server_graph:agent",
        "benchmarks._server_graph:asks",
        "--store",
        store,
        "--grace",
        "1",
        *more,
    ]


@contextlib.contextmanager
def _postgres() -> Iterator[str]:
    given = os.environ.get("AGENTGRAPH_BENCH_POSTGRES")
    if given:
        yield given
        return
    sys.path.insert(0, str(ROOT))
    from tests.pg_server import PostgresServer, server_binaries

    with PostgresServer(server_binaries()) as server:
        yield server.dsn


def _wait_ready(url: str, process: subprocess.Popen[str], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"langgraph dev ended: {log.read_text()[-2000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"langgraph dev did not answer within 120 s: {log.read_text()[-2000:]}")


@contextlib.contextmanager
def _langgraph_dev(folder: Path) -> Iterator[tuple[str, list[subprocess.Popen[str]]]]:
    """`langgraph dev` in a fresh copy of the reference folder (a new `.langgraph_api/`)."""
    command = os.environ.get("AGENTGRAPH_BENCH_LANGGRAPH")
    if not command:
        raise RuntimeError("AGENTGRAPH_BENCH_LANGGRAPH names no langgraph command")
    served = folder / "reference"
    shutil.copytree(REFERENCE, served, ignore=shutil.ignore_patterns("__pycache__"))
    port = _free_port()
    log = folder / "langgraph-dev.log"
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "1",
        "PYTHONPATH": "",
    }
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                str(Path(command).resolve()),
                "dev",
                "--no-browser",
                "--no-reload",
                "--n-jobs-per-worker",
                "10",
                "--port",
                str(port),
            ],
            env=env,
            cwd=served,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(url, process, log)
            yield url, [process]
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextlib.contextmanager
def _server(case: str, folder: Path) -> Iterator[tuple[str, list[subprocess.Popen[str]]]]:
    """The case's processes: the API (first) and its workers; yields the URL too."""
    if case == "langgraph":
        with _langgraph_dev(folder) as served:
            yield served
        return
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with contextlib.ExitStack() as stack:
        if case == "sqlite":
            store, workers, api_workers = str(folder / "server.db"), 0, "1"
        else:
            store = stack.enter_context(_postgres())
            workers, api_workers = int(case.rsplit("-", 1)[1]), "0"
        schema = f"bench_{os.getpid()}_{port}"
        extra = ("--schema", schema)
        api = subprocess.Popen(
            [*_command("server", store, *extra), "--port", str(port), "--workers", api_workers],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        processes = [api]
        assert api.stdout is not None
        url = api.stdout.readline().split(" at ")[1].strip().rstrip("/")
        for _ in range(workers):
            processes.append(
                subprocess.Popen(
                    _command("worker", store, *extra), env=env, cwd=ROOT, stdout=subprocess.PIPE
                )
            )
        try:
            yield url, processes
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=60)
                if process.stdout is not None:
                    process.stdout.close()


def _family(processes: list[subprocess.Popen[str]]) -> list[psutil.Process]:
    """The case's processes and their children (a server's own workers, if any)."""
    found = []
    for p in processes:
        parent = psutil.Process(p.pid)
        found.extend([parent, *parent.children(recursive=True)])
    return found


def _rss(processes: list[subprocess.Popen[str]]) -> int:
    return sum(p.memory_info().rss for p in _family(processes))


def _cpu(processes: list[subprocess.Popen[str]]) -> float:
    """CPU seconds the case's processes have used so far."""
    return sum(sum(p.cpu_times()[:2]) for p in _family(processes))


async def _first_event(client: Any, thread_id: str) -> float:
    started = time.perf_counter()
    async for part in client.runs.stream(
        thread_id,
        "agent",
        input={"messages": [{"role": "user", "content": "probe"}]},
        stream_mode=["values", "updates"],
    ):
        if part.event in ("values", "updates"):
            return time.perf_counter() - started
    raise RuntimeError("the probe's run sent no values or updates")


async def _measure(
    url: str, processes: list[subprocess.Popen[str]], runs: int, waiting: int
) -> dict[str, Any]:
    gate = asyncio.Semaphore(IN_FLIGHT)
    async with get_client(url=url, timeout=120) as client:

        async def limited(coro: Any) -> Any:
            async with gate:
                return await coro

        threads = [
            t["thread_id"]
            for t in await asyncio.gather(*(limited(client.threads.create()) for _ in range(50)))
        ]
        probe = (await client.threads.create())["thread_id"]
        await _first_event(client, probe)  # warm
        samples: list[float] = []
        done = asyncio.Event()

        async def sample() -> None:
            while not done.is_set():
                samples.append(await _first_event(client, probe))
                await asyncio.sleep(0.1)

        prober = asyncio.create_task(sample())
        load_before = os.getloadavg()[0]
        cpu_before = _cpu(processes)
        started = time.perf_counter()
        created = await asyncio.gather(
            *(
                limited(
                    client.runs.create(
                        threads[n % 50],
                        "agent",
                        input={"messages": [{"role": "user", "content": str(n)}]},
                    )
                )
                for n in range(runs)
            )
        )
        await asyncio.gather(
            *(limited(client.runs.join(r["thread_id"], r["run_id"])) for r in created)
        )
        elapsed = time.perf_counter() - started
        server_cpu = _cpu(processes) - cpu_before
        load_after = os.getloadavg()[0]
        done.set()
        await prober
        idle = _rss(processes)
        asking = await asyncio.gather(
            *(
                limited(client.runs.wait(None, "asks", input={}, on_completion="keep"))
                for _ in range(waiting)
            )
        )
        assert all("__interrupt__" in a for a in asking)
        grown = _rss(processes) - idle
    ordered = sorted(samples)
    return {
        "runs": runs,
        "runs_per_s": runs / elapsed,
        "first_event_p50_ms": 1000 * statistics.median(ordered),
        "first_event_p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        "probes": len(ordered),
        "waiting": waiting,
        "rss_growth_mb": grown / 2**20,
        "server_cpu_ms_per_run": 1000 * server_cpu / runs,
        "load_before": load_before,
        "load_after": load_after,
    }


def run_case(case: str, runs: int, waiting: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder, _server(case, Path(folder)) as (url, procs):
        figures = asyncio.run(_measure(url, procs, runs, waiting))
    return {"case": case, **figures}


def _median_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per case: the median of each figure over the rounds, the loads' range."""
    merged = []
    for case in dict.fromkeys(r["case"] for r in rows):
        mine = [r for r in rows if r["case"] == case]
        row = {
            key: statistics.median(r[key] for r in mine)
            for key, value in mine[0].items()
            if isinstance(value, float)
        }
        row.update(
            case=case,
            waiting=mine[0]["waiting"],
            rounds=len(mine),
            runs_per_s_all=[r["runs_per_s"] for r in mine],
            load_low=min(min(r["load_before"], r["load_after"]) for r in mine),
            load_high=max(max(r["load_before"], r["load_after"]) for r in mine),
        )
        merged.append(row)
    return merged


def _table(rows: list[dict[str, Any]]) -> str:
    reference = next((r for r in rows if r["case"] == "langgraph"), None)
    lines = [
        "| case | runs/s | vs langgraph dev | first event p50 (ms) | p99 (ms) "
        "| server CPU ms/run | RSS growth, waiting threads (MB) | load average |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        name = "langgraph dev" if r["case"] == "langgraph" else f"agentgraph {r['case']}"
        ratio = f"{r['runs_per_s'] / reference['runs_per_s']:.1f}x" if reference else "-"
        each = ", ".join(f"{x:.0f}" for x in r["runs_per_s_all"])
        lines.append(
            f"| {name} | {r['runs_per_s']:.0f} ({each}) | {ratio} "
            f"| {r['first_event_p50_ms']:.0f} | {r['first_event_p99_ms']:.0f} "
            f"| {r['server_cpu_ms_per_run']:.1f} | {r['rss_growth_mb']:.1f} ({r['waiting']}) "
            f"| {r['load_low']:.1f} to {r['load_high']:.1f} |"
        )
    return "\n".join(lines)


def _machine() -> str:
    """The machine and the versions measured, as one line."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    versions = [f"Python {sys.version.split()[0]}", f"langgraph-sdk {version('langgraph-sdk')}"]
    command = os.environ.get("AGENTGRAPH_BENCH_LANGGRAPH")
    if command:
        python = Path(command).resolve().parent / "python"
        found = subprocess.run(
            [
                str(python),
                "-c",
                "from importlib.metadata import version as v; "
                "print(*(f'{n} {v(n)}' for n in "
                "('langgraph-cli', 'langgraph-api', 'langgraph-runtime-inmem', 'langgraph')), "
                "sep=', ')",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        versions.append(found.stdout.strip())
    return f"{cpu}, {os.cpu_count()} cores; " + ", ".join(versions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=CASES)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--waiting", type=int)
    parser.add_argument(
        "--rounds", type=int, default=1, help="times every case runs, in turn (medians shown)"
    )
    args = parser.parse_args()
    runs = args.runs or (100 if args.quick else 1000)
    waiting = args.waiting or (50 if args.quick else 1000)
    if args.case:
        print(json.dumps(run_case(args.case, runs, waiting)))
        return
    rows = []
    cases = CASES if os.environ.get("AGENTGRAPH_BENCH_LANGGRAPH") else CASES[1:]
    for _ in range(args.rounds):
        for case in cases:
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--case",
                    case,
                    "--runs",
                    str(runs),
                    "--waiting",
                    str(waiting),
                ],
                capture_output=True,
                text=True,
                check=True,
                cwd=ROOT,
            )
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(_table(_median_rows(rows)))
    print(f"\nMachine: {_machine()}.")


if __name__ == "__main__":
    main()
