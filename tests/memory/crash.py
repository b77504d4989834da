"""What the crash scripts share: a memory store that dies after a put, and the run or resume.

A script builds its graph around a memory store and hands it to `crash_run`,
which reads `RUNS_DB MEMORY_DB [--resume] [--kill]` (each a SQLite file, or a
PostgreSQL URL for `PostgresStore` and `PostgresMemory`): with `--kill` the store
SIGKILLs the process the moment it has committed a put, so the checkpoint
store never records the write (nor any record the run did not flush: the
checkpoint store then writes only what a flush asks for); with `--resume` the
run is resumed once the killed runner's lease lapses. The tests run a script
through `kill_after_write` and `resume_after_kill`.
"""

import argparse
import os
import signal
import sys
import time
from pathlib import Path

import anyio

from agentgraph import GraphRunner, RunBusy
from agentgraph.checkpoint import PostgresStore, SQLiteStore
from agentgraph.memory import PostgresMemory, SQLiteMemory


class KillAfterPut(SQLiteMemory):
    """Dies, as a process does, right after a put committed."""

    async def put_many(self, *args, **kwargs):
        items = await super().put_many(*args, **kwargs)
        die()
        return items


class PostgresKillAfterPut(PostgresMemory):
    """`KillAfterPut` on PostgreSQL."""

    async def put_many(self, *args, **kwargs):
        items = await super().put_many(*args, **kwargs)
        die()
        return items


def die():
    print("written", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def lazy(store_class):
    """`store_class` writing behind as late as the protocol lets it: records wait until
    a flush asks for them (as from a writer that is slow to get to them), so a run
    that did not flush before a crash loses them, every time."""

    class Lazy(store_class):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.pending = []

        def write(self, records):
            self.pending.extend(records)

        async def flush(self, run_id=None):
            pending, self.pending = self.pending, []
            if pending:
                super().write(pending)
            await super().flush(run_id=run_id)

    return Lazy


def postgres(where):
    return where.startswith("postgresql://")


def open_memory(where, *, kill=False):
    """The memory store at `where` (a SQLite file or a PostgreSQL URL)."""
    if postgres(where):
        return (PostgresKillAfterPut if kill else PostgresMemory)(where)
    return (KillAfterPut if kill else SQLiteMemory)(where)


def crash_run(build, ctx, run_id):
    """Run `build(memory)` on `ctx` as `run_id` (or resume it), as the command line says;
    the run's output context."""
    parser = argparse.ArgumentParser()
    parser.add_argument("runs")
    parser.add_argument("memory")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--kill", action="store_true")
    parser.add_argument("--run-id", default=run_id)
    args = parser.parse_args()
    return anyio.run(_run, build, ctx, args.run_id, args)


async def _run(build, ctx, run_id, args):
    memory = open_memory(args.memory, kill=args.kill)
    graph = build(memory)
    kind = PostgresStore if postgres(args.runs) else SQLiteStore
    opened = (lazy(kind) if args.kill else kind)(args.runs, lease_term=0.3)
    async with opened as store:
        runner = GraphRunner()
        if args.resume:
            while True:  # the killed runner's lease lapses soon
                try:
                    out = await runner.resume(graph, run_id, store)
                    break
                except RunBusy as busy:
                    await anyio.sleep(max(0.01, busy.expires - time.time()))
        else:
            out = await runner.run(graph, ctx, store=store, run_id=run_id)
    memory.close()
    return out


ROOT = Path(__file__).resolve().parents[2]


async def kill_after_write(script, runs, memory, *more):
    """Run `tests.memory.<script>` with `--kill`: it must die by SIGKILL right after its write."""
    killed = await anyio.run_process(
        [*_command(script, runs, memory), "--kill", *more], cwd=ROOT, check=False
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert killed.stdout.decode().split() == ["written"]


async def resume_after_kill(script, runs, memory, *more):
    """Run `tests.memory.<script>` with `--resume`; what it printed."""
    resumed = await anyio.run_process(
        [*_command(script, runs, memory), "--resume", *more], cwd=ROOT, check=False
    )
    assert resumed.returncode == 0, resumed.stderr.decode()  # no ResumeError
    return resumed.stdout.decode()


def _command(script, runs, memory):
    return [sys.executable, "-m", f"tests.memory.{script}", str(runs), str(memory)]
