"""`CheckpointTaskStore`: the A2A SDK's task store, kept in an agentgraph checkpoint store.

A task is recorded as a run of its own in the store (`a2a.task:<task id>`,
never a graph's run), whose one effect is the task as protobuf JSON; each
write rewrites it. So the tasks live in the same file or database as the
runs they drive, and a server that restarts over that store finds them
again, with no database layer of the SDK's (SQLAlchemy and its drivers).

The SDK saves the whole task on every event, so a task streaming N chunks
of text would cost O(N²) to store. A save that only adds artifacts to a
working task (its status and history as last written) is therefore kept in
memory, where `get` and `list` see it, and written with the next save that
changes the status, or by `settle`. A crash loses those artifact chunks and
nothing else: the stored task is the one of the last status change, still
working, and a restarted server resumes its run to the end (`_recovery`);
chunks of model calls the run's journal already holds are not sent again.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

import orjson
from a2a.server.context import ServerCallContext
from a2a.server.owner_resolver import OwnerResolver, resolve_user_scope
from a2a.server.tasks import TaskStore
from a2a.types import a2a_pb2
from google.protobuf import json_format

from ..checkpoint._records import Effect, RunRecord
from ..checkpoint._store import CheckpointStore

__all__ = ("OWNER_KEY", "TASK_PREFIX", "CheckpointTaskStore")

TASK_PREFIX = "a2a.task:"
"""What the store's run id of a task record starts with."""

OWNER_KEY = "agentgraph.a2a.owner"
"""A call context's state key naming the owner outright: the server's own calls
(taking up a task after a restart) act for the task's owner, whoever resolves
owners. Clients cannot set it: the SDK fills a request's state itself."""

_WORKING = a2a_pb2.TaskState.TASK_STATE_WORKING
RUNNING = (a2a_pb2.TaskState.TASK_STATE_SUBMITTED, _WORKING)
"""The states of a task that is still being worked on (not finished, not waiting on input)."""

_KEY, _KIND, _GONE = "task", "a2a.task", "a2a.deleted"
_PAGE = 50


class CheckpointTaskStore(TaskStore):
    """A2A tasks in a checkpoint store (`MemoryStore`, `SQLiteStore`, `PostgresStore`).

    Tasks are kept per owner, as the SDK's own stores keep them: a task saved
    for one user is not found for another.
    """

    def __init__(
        self, store: CheckpointStore, *, owner_resolver: OwnerResolver = resolve_user_scope
    ) -> None:
        self.store = store
        self._owner = owner_resolver
        self._known: set[str] = set()
        # Per working task: its status and history length as last written, and
        # the save not yet written (the SDK's own task object, changed in place).
        self._written: dict[str, tuple[bytes, int]] = {}
        self._pending: dict[str, tuple[str, a2a_pb2.Task]] = {}

    def _owner_of(self, context: ServerCallContext) -> str:
        named = context.state.get(OWNER_KEY)
        return named if isinstance(named, str) else self._owner(context)

    async def save(self, task: a2a_pb2.Task, context: ServerCallContext) -> None:
        """Store `task`, durably, unless it only added artifacts to a working task."""
        rid, owner = TASK_PREFIX + task.id, self._owner_of(context)
        shape = (task.status.SerializeToString(deterministic=True), len(task.history))
        if task.status.state == _WORKING and self._written.get(rid) == shape:
            self._pending[rid] = (owner, task)
            return
        await self._write(rid, owner, task)
        self._pending.pop(rid, None)
        if task.status.state == _WORKING:
            self._written[rid] = shape
        else:
            self._written.pop(rid, None)

    async def settle(self) -> None:
        """Write every save kept in memory (a server stopping calls this)."""
        for rid, (owner, task) in list(self._pending.items()):
            await self._write(rid, owner, task)
            if self._pending.get(rid, (owner, None))[1] is task:
                del self._pending[rid]

    async def _write(self, rid: str, owner: str, task: a2a_pb2.Task) -> None:
        body = {"owner": owner, "task": json_format.MessageToDict(task)}
        records: list[Any] = []
        if rid not in self._known and await self.store.load(rid) is None:
            records.append(RunRecord(rid, _KIND, b"", b"", time.time()))
        records.append(Effect(rid, _KEY, _KIND, orjson.dumps(body)))
        self.store.write(records)
        await self.store.flush(run_id=rid)
        self._known.add(rid)

    async def get(self, task_id: str, context: ServerCallContext) -> a2a_pb2.Task | None:
        """The task, or None when there is none of that id for the caller."""
        found = await self._read(TASK_PREFIX + task_id)
        if found is None or found[0] != self._owner_of(context):
            return None
        return found[1]

    async def _read(self, rid: str) -> tuple[str, a2a_pb2.Task] | None:
        pending = self._pending.get(rid)
        if pending is not None:  # a copy: callers change what they get (list clears artifacts)
            copy = a2a_pb2.Task()
            copy.CopyFrom(pending[1])
            return pending[0], copy
        log = await self.store.load(rid)
        if log is None:
            return None
        self._known.add(rid)
        latest = [e for e in log.effects if e.key == _KEY]
        if not latest or latest[-1].kind != _KIND:
            return None  # never saved, or deleted since
        body = orjson.loads(latest[-1].value)
        task = json_format.ParseDict(body["task"], a2a_pb2.Task(), ignore_unknown_fields=True)
        return str(body["owner"]), task

    async def list(
        self, params: a2a_pb2.ListTasksRequest, context: ServerCallContext
    ) -> a2a_pb2.ListTasksResponse:
        """The caller's tasks, newest first, filtered and paged as the request asks."""
        owner = self._owner_of(context)
        tasks: list[a2a_pb2.Task] = []
        for rid in await self._task_ids():
            found = await self._read(rid)
            if found is None or found[0] != owner:
                continue
            task = found[1]
            if params.context_id and task.context_id != params.context_id:
                continue
            if params.status and task.status.state != params.status:
                continue
            tasks.append(task)
        tasks.sort(key=lambda t: (t.status.timestamp.ToNanoseconds(), t.id), reverse=True)
        start = int(params.page_token) if params.page_token.isdigit() else 0
        size = params.page_size or _PAGE
        end = start + size
        return a2a_pb2.ListTasksResponse(
            tasks=tasks[start:end],
            next_page_token=str(end) if end < len(tasks) else "",
            total_size=len(tasks),
            page_size=size,
        )

    async def unfinished(self) -> tuple[tuple[a2a_pb2.Task, str], ...]:
        """Every owner's tasks still submitted or working, with their owner.

        After a restart these are tasks whose run no server is driving any more
        (or that another server sharing the store still drives).
        """
        found = [await self._read(rid) for rid in await self._task_ids()]
        return tuple(
            (task, owner) for owner, task in filter(None, found) if task.status.state in RUNNING
        )

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Forget the task: its record says it was deleted (the store keeps no holes)."""
        rid = TASK_PREFIX + task_id
        found = await self._read(rid)
        if found is None or found[0] != self._owner_of(context):
            return
        self._pending.pop(rid, None)
        self._written.pop(rid, None)
        self.store.write((Effect(rid, _KEY, _GONE, b"{}"),))
        await self.store.flush(run_id=rid)

    async def _task_ids(self) -> tuple[str, ...]:
        lister = getattr(self.store, "run_ids", None)
        if lister is None:
            return tuple(self._known)
        ids = lister() if callable(lister) else lister
        if inspect.isawaitable(ids):
            ids = await ids
        return tuple(i for i in ids if i.startswith(TASK_PREFIX))
