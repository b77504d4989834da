"""CheckpointTaskStore writes a streaming task at its status changes, not on every chunk."""

from __future__ import annotations

import pytest
from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskManager
from a2a.types import a2a_pb2 as pb

from agentgraph.a2a import CheckpointTaskStore
from agentgraph.checkpoint import MemoryStore

pytestmark = pytest.mark.anyio
CALL = ServerCallContext()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Counting(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, records):
        self.writes += 1
        super().write(records)


def _status(state: int) -> pb.TaskStatusUpdateEvent:
    return pb.TaskStatusUpdateEvent(task_id="t", context_id="c", status=pb.TaskStatus(state=state))


def _chunk(i: int) -> pb.TaskArtifactUpdateEvent:
    artifact = pb.Artifact(artifact_id="stream-1", parts=[pb.Part(text=f"w{i} ")])
    return pb.TaskArtifactUpdateEvent(task_id="t", context_id="c", artifact=artifact, append=i > 0)


async def _stream(tasks: CheckpointTaskStore, chunks: int) -> TaskManager:
    manager = TaskManager(tasks, CALL, "t", "c", None)
    submitted = pb.TaskStatus(state=pb.TASK_STATE_SUBMITTED)
    await manager.process(pb.Task(id="t", context_id="c", status=submitted))
    await manager.process(_status(pb.TASK_STATE_WORKING))
    for i in range(chunks):
        await manager.process(_chunk(i))
    return manager


async def test_chunks_of_a_working_task_are_not_each_written_but_are_seen():
    store = Counting()
    tasks = CheckpointTaskStore(store)
    manager = await _stream(tasks, 200)
    assert store.writes == 2  # submitted, working: the chunks wait for the next status
    seen = await tasks.get("t", CALL)
    assert seen is not None and len(seen.artifacts[0].parts) == 200
    seen.ClearField("artifacts")  # what a caller does to its copy leaves the task alone
    listed = await tasks.list(pb.ListTasksRequest(), CALL)
    assert len(listed.tasks[0].artifacts[0].parts) == 200
    await manager.process(_status(pb.TASK_STATE_COMPLETED))
    assert store.writes == 3
    restored = await CheckpointTaskStore(store).get("t", CALL)  # a new server on the store
    assert restored is not None and restored.status.state == pb.TASK_STATE_COMPLETED
    assert "".join(p.text for p in restored.artifacts[0].parts) == "".join(
        f"w{i} " for i in range(200)
    )


async def test_a_crash_mid_stream_leaves_the_task_of_its_last_status_change():
    store = MemoryStore()
    await _stream(CheckpointTaskStore(store), 50)
    restored = await CheckpointTaskStore(store).get("t", CALL)  # the first one died unsettled
    assert restored is not None and restored.status.state == pb.TASK_STATE_WORKING
    assert list(restored.artifacts) == []  # the chunks since the working status are lost


async def test_settle_writes_what_was_kept_in_memory():
    store = MemoryStore()
    tasks = CheckpointTaskStore(store)
    await _stream(tasks, 30)
    await tasks.settle()
    restored = await CheckpointTaskStore(store).get("t", CALL)
    assert restored is not None and len(restored.artifacts[0].parts) == 30


@pytest.fixture
def bench():
    from tests.helpers import load_benchmark

    yield from load_benchmark("a2a_tasks")


@pytest.mark.parametrize("kind", ["SQLiteStore", "MemoryStore", "SDK InMemoryTaskStore"])
async def test_the_task_store_benchmark_feeds_whole_tasks(bench, kind, tmp_path):
    us, size = await bench._one(kind, 10, 1, tmp_path)
    assert us > 0 and (size > 0) == (kind == "SQLiteStore")
