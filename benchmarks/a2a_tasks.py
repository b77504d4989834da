"""What keeping an A2A task in a checkpoint store costs per streamed event.

A served graph's task gets one event per chunk of streamed model text; the A2A
SDK saves the task on every event. This feeds the SDK's own `TaskManager` (the
piece that applies events and saves) a task as a served run makes it: submitted,
working, N chunks of about 40 characters appended to one artifact, the output
artifact, completed; over `CheckpointTaskStore` on an SQLite file and on the
in-memory store, and over the SDK's `InMemoryTaskStore` (no serialization at
all) as the floor. Reported: µs per event, and the bytes the SQLite file holds.

Usage::

    python benchmarks/a2a_tasks.py           # writes its section of RESULTS.md
    python benchmarks/a2a_tasks.py --quick   # fewer repeats, prints only
"""

import asyncio
import os
import statistics
import tempfile
from pathlib import Path
from time import perf_counter
from typing import Any

from _common import load_average, machine, publish, section_parser
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore, TaskManager
from a2a.types import a2a_pb2 as pb

from agentgraph.a2a import CheckpointTaskStore
from agentgraph.checkpoint import MemoryStore, SQLiteStore

HEADING = "## A2A task store: cost per streamed event"
SIZES = (10, 100, 1000)
STORES = ("SQLiteStore", "MemoryStore", "SDK InMemoryTaskStore")
CHUNK = "some streamed words of model text, more "


def _events(task_id: str, chunks: int) -> list[Any]:
    ctx, working = "ctx", pb.TaskStatus(state=pb.TASK_STATE_WORKING)
    first = pb.Message(message_id="m", role=pb.ROLE_USER, parts=[pb.Part(text="hi")])
    events: list[Any] = [
        pb.Task(
            id=task_id,
            context_id=ctx,
            status=pb.TaskStatus(state=pb.TASK_STATE_SUBMITTED),
            history=[first],
        ),
        pb.TaskStatusUpdateEvent(task_id=task_id, context_id=ctx, status=working),
    ]
    for i in range(chunks):
        artifact = pb.Artifact(artifact_id="stream-1", parts=[pb.Part(text=CHUNK)])
        events.append(
            pb.TaskArtifactUpdateEvent(
                task_id=task_id, context_id=ctx, artifact=artifact, append=i > 0
            )
        )
    output = pb.Artifact(artifact_id="output", parts=[pb.Part(text=CHUNK * 3)])
    events.append(pb.TaskArtifactUpdateEvent(task_id=task_id, context_id=ctx, artifact=output))
    done = pb.TaskStatus(state=pb.TASK_STATE_COMPLETED)
    events.append(pb.TaskStatusUpdateEvent(task_id=task_id, context_id=ctx, status=done))
    return events


async def _one(kind: str, chunks: int, repeats: int, where: Path) -> tuple[float, int]:
    """Median µs per event over `repeats` tasks, and the SQLite file's size after them."""
    call = ServerCallContext()
    db = where / f"{kind}-{chunks}.db"
    store: Any = SQLiteStore(db) if kind == "SQLiteStore" else MemoryStore()
    tasks: Any = InMemoryTaskStore() if kind.startswith("SDK") else CheckpointTaskStore(store)
    samples = []
    try:
        for r in range(repeats):
            events = _events(f"t{r}", chunks)
            manager = TaskManager(tasks, call, f"t{r}", "ctx", None)
            started = perf_counter()
            for event in events:
                await manager.process(event)
            samples.append((perf_counter() - started) / len(events) * 1e6)
            got = await tasks.get(f"t{r}", call)
            assert len(got.artifacts[0].parts) == chunks and got.status.state == 3
    finally:
        await store.aclose()
    size = sum(f.stat().st_size for f in where.glob(f"{db.name}*")) if kind == "SQLiteStore" else 0
    return statistics.median(samples), size


def render(repeats: int) -> str:
    load = load_average()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in STORES:
            for chunks in SIZES:
                us, size = asyncio.run(_one(kind, chunks, repeats, Path(tmp)))
                shown = f"{size / repeats / 1024:,.0f}" if size else "-"
                rows.append(f"| {kind} | {chunks:,} | {us:,.1f} | {shown} |")
    lines = [
        HEADING,
        "",
        "A task of N streamed chunks (about 40 characters each) fed through the A2A SDK's",
        "`TaskManager`, which applies each event to the task and saves it; µs per event",
        f"(median of {repeats} tasks), and the SQLite file's size per task.",
        "",
        "| task store | chunks | µs per event | KiB on disk per task |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        machine(load, "agentgraph", "a2a-sdk", "protobuf") + f" CPUs: {os.cpu_count()}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = section_parser(__doc__, "one repeat; print only").parse_args(argv)
    publish(render(1 if args.quick else 5), output=args.output, quick=args.quick)


if __name__ == "__main__":
    main()
