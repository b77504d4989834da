"""`GraphExecutor`: the A2A SDK's agent executor, running a graph as the task's run.

The task id is the run id and the context id the thread, so a task's run is
recorded in the checkpoint store under the id a client knows, and the turns
of one A2A context are the turns of one thread. The task's states follow the
run: working while it runs, input-required when a node asks a question (the
client's next message on the task answers it and resumes the run), completed
with the output as an artifact, canceled with the last completed context,
failed with the masked error. Streamed model text goes out as artifact chunks
as it arrives, a word behind so that a secret arriving in pieces is masked whole.

A task still submitted or working when it reaches `execute` is one whose
server stopped mid-run (see `_recovery`): its run goes on from its journal,
or starts afresh from the task's first message when it never recorded one.
"""

from __future__ import annotations

import re
import time
from typing import Any

import anyio
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import a2a_pb2
from a2a.utils.errors import UnsupportedOperationError
from google.protobuf import json_format

from .._core._context import AgentContext
from .._core._errors import GraphCancelled, Interrupted, RunBusy
from .._core._errors_threads import ThreadBusy
from .._core._events import ModelResponded, ModelStreamed
from .._core._graph import Graph
from .._core._journal import JournalSource
from .._core._runner import NO_ANSWER, GraphRunner, RunHandle
from .._util._redact import Redactor
from ..checkpoint._resume import decode_contexts, log_blobs
from ..checkpoint._store import CheckpointStore
from ..checkpoint._threads import ThreadStore
from ..tracing._records import plain
from ._contexts import Contexts, busy_text
from ._parts import (
    PARTIAL,
    QUESTION_KEY,
    answer_of,
    data_part,
    graph_input,
    output_metadata,
    output_parts,
    question_parts,
)
from ._tasks import RUNNING

__all__ = ("GraphExecutor",)

_SPACE = re.compile(r"\s")
_INTERRUPTED = a2a_pb2.TaskState.TASK_STATE_INPUT_REQUIRED
_WORKING = a2a_pb2.TaskState.TASK_STATE_WORKING


class _Stream:
    """One run's streamed model text, as chunks of one artifact per model call."""

    def __init__(self, updater: TaskUpdater, redactor: Redactor) -> None:
        self._updater = updater
        self._redactor = redactor
        self._texts: dict[int, tuple[str, str]] = {}  # step -> (received, sent)

    async def __call__(self, event: Any) -> None:
        if isinstance(event, ModelStreamed):
            received, sent = self._texts.get(event.index, ("", ""))
            received += event.text
            masked = self._redactor.text(received, "text")
            cut = max((m.start() for m in _SPACE.finditer(masked)), default=-1)
            ready = masked[: cut + 1]
            if len(ready) > len(sent) and ready.startswith(sent):
                await self._send(event.index, ready[len(sent) :], sent != "", last=False)
                sent = ready
            self._texts[event.index] = (received, sent)
        elif isinstance(event, ModelResponded) and event.index in self._texts:
            received, sent = self._texts.pop(event.index)
            masked = self._redactor.text(event.response.message.content or received, "text")
            rest = masked[len(sent) :] if masked.startswith(sent) else ""
            await self._send(event.index, rest, sent != "", last=True)

    async def _send(self, index: int, text: str, append: bool, *, last: bool) -> None:
        await self._updater.add_artifact(
            [a2a_pb2.Part(text=text)],
            artifact_id=f"stream-{index}",
            name="streamed text",
            metadata={PARTIAL: True},
            append=append,
            last_chunk=last,
        )


class GraphExecutor(AgentExecutor):
    """Runs `graph` for the A2A tasks of one server (see the module's docstring)."""

    def __init__(
        self,
        graph: Graph[Any, Any],
        *,
        runner: GraphRunner,
        store: JournalSource | None,
        redactor: Redactor,
        contexts: Contexts | None = None,
    ) -> None:
        self.graph = graph
        self.runner = runner
        self.store = store
        self.redactor = redactor
        self.contexts = contexts
        self._described = output_metadata(graph.output_type)
        self._live: dict[str, tuple[RunHandle, anyio.Event]] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Start, resume or answer the task's run and follow it to where it stops."""
        current = context.current_task
        # A task's events name its own context, whatever the message named.
        context_id = current.context_id if current is not None else str(context.context_id)
        updater = TaskUpdater(event_queue, str(context.task_id), context_id)
        message = context.message or a2a_pb2.Message()
        contexts = self.contexts
        try:
            hold = None if contexts is None else contexts.hold(context_id, updater.task_id)
        except UnsupportedOperationError:  # lost a race with another request of the context
            if current is None:
                await _submitted(updater, message)
            await self._busy(updater, current)
            return
        try:
            await self._execute(context, updater, message)
        finally:
            if contexts is not None and hold is not None:
                contexts.release(hold)

    async def _busy(self, updater: TaskUpdater, current: a2a_pb2.Task | None) -> None:
        """Refuse to work while another task of the context works: nothing ran."""
        said = [a2a_pb2.Part(text=busy_text(updater.context_id))]
        if current is None:
            await updater.reject(updater.new_agent_message(said))
        else:  # an answer: the task keeps waiting for it
            kind = _question_kind(current)
            await updater.requires_input(
                updater.new_agent_message(said, metadata={QUESTION_KEY: kind})
            )

    async def _execute(
        self, context: RequestContext, updater: TaskUpdater, message: a2a_pb2.Message
    ) -> None:
        task_id = updater.task_id
        current = context.current_task
        if current is None:
            await _submitted(updater, message)
        answer: Any = NO_ANSWER
        if current is not None and current.status.state == _INTERRUPTED:
            kind = _question_kind(current)
            try:
                answer = answer_of(kind, message)
            except ValueError as exc:
                # Not an answer: the task keeps waiting, and says why.
                text = self.redactor.text(f"{exc}; the question stands", "error")
                parts = [a2a_pb2.Part(text=text)]
                await updater.requires_input(
                    updater.new_agent_message(parts, metadata={QUESTION_KEY: kind})
                )
                return
        if current is None or current.status.state != _WORKING:
            await updater.start_work()
        handle, done = RunHandle(), anyio.Event()
        self._live[task_id] = (handle, done)
        runner = self.runner.evolve(sinks=(*self.runner.sinks, _Stream(updater, self.redactor)))
        try:
            await self._drive(runner, updater, current, message, answer, handle)
        finally:
            del self._live[task_id]
            done.set()

    async def _drive(
        self,
        runner: GraphRunner,
        updater: TaskUpdater,
        current: a2a_pb2.Task | None,
        message: a2a_pb2.Message,
        answer: Any,
        handle: RunHandle,
    ) -> None:
        task_id = updater.task_id
        taken_up = current is not None and current.status.state in RUNNING
        try:
            if current is None:
                out = await self._start(runner, updater, message, handle)
            elif taken_up:
                out = await self._take_up(runner, updater, current, handle)
            else:
                if self.store is None:
                    raise RuntimeError("this server has no checkpoint store to resume a task from")
                out = await runner.resume(
                    self.graph, task_id, self.store, answer=answer, handle=handle
                )
        except Interrupted as asked:
            parts, kind = question_parts(asked.question, self.redactor)
            await updater.requires_input(
                updater.new_agent_message(parts, metadata={QUESTION_KEY: kind})
            )
        except GraphCancelled as cancelled:
            await updater.cancel(updater.new_agent_message(self._last(cancelled)))
        except ThreadBusy:
            # Another task of the context works (on another server sharing the store):
            # nothing ran, and the lease's owner is no business of the client's.
            await self._busy(updater, current)
        except Exception as error:
            said = f"{type(error).__name__}: {error}"
            if taken_up:  # the run id is the task id: whoever fixes the cause can resume it
                stopped = f"run {task_id!r} was working when the server stopped"
                said = f"{stopped}; resuming it failed: {said}"
            text = self.redactor.text(said, "error")
            await updater.failed(updater.new_agent_message([a2a_pb2.Part(text=text)]))
        else:
            await updater.add_artifact(
                output_parts(out.input, self.redactor),
                artifact_id="output",
                name="output",
                metadata=None if isinstance(out.input, str) else self._described,
            )
            await updater.complete()

    async def _start(
        self, runner: GraphRunner, updater: TaskUpdater, message: a2a_pb2.Message, handle: RunHandle
    ) -> AgentContext[Any]:
        ctx = AgentContext(graph_input(self.graph.input_type, message))
        thread = updater.context_id if isinstance(self.store, ThreadStore) else None
        return await runner.run(
            self.graph, ctx, handle=handle, store=self.store, run_id=updater.task_id,
            thread_id=thread,
        )  # fmt: skip

    async def _take_up(
        self, runner: GraphRunner, updater: TaskUpdater, task: a2a_pb2.Task, handle: RunHandle
    ) -> AgentContext[Any]:
        """Go on with the run of a task whose server stopped while it worked."""
        store = self.store
        if not isinstance(store, CheckpointStore):
            raise RuntimeError("this server has no checkpoint store to resume the task's run from")
        while True:
            try:
                if await store.load(task.id) is None:
                    # Stopped before the run's start was stored: nothing ran yet.
                    first = task.history[0] if task.history else a2a_pb2.Message()
                    return await self._start(runner, updater, first, handle)
                return await runner.resume(self.graph, task.id, store, handle=handle)
            except RunBusy as busy:
                # The stopped server's lease lapses at `expires` unless it is alive after all.
                await anyio.sleep(max(0.05, busy.expires - time.time()))

    def _last(self, cancelled: GraphCancelled) -> list[a2a_pb2.Part]:
        return self._cancelled(cancelled.step, cancelled.context)

    def _cancelled(self, step: int, ctx: AgentContext[Any]) -> list[a2a_pb2.Part]:
        """The canceled status: the step the run reached and its last completed context."""
        shown = self.redactor.record({"input": plain(ctx.input), "state": plain(dict(ctx.state))})
        text = f"cancelled after step {step}"
        data = {"step": step, "input": shown["input"], "state": shown["state"]}
        return [a2a_pb2.Part(text=text), data_part(data)]

    async def _stopped(self, run_id: str) -> list[a2a_pb2.Part]:
        """The canceled status of a run stopped at a question, from its record."""
        store = self.store
        log = await store.load(run_id) if isinstance(store, CheckpointStore) else None
        if log is None or not isinstance(store, CheckpointStore):
            return [a2a_pb2.Part(text="cancelled before its run started")]
        types = self.runner.types.with_types(*self.graph.data_types())
        contexts = decode_contexts(log, types=types, blobs=await log_blobs(store, log))
        return self._cancelled(log.steps[-1].step if log.steps else 0, contexts[-1])

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task's run through its handle, and wait until it said so.

        A task waiting for input has no run going: it ends canceled at once,
        its status saying the step its run reached (not the question).
        """
        live = self._live.get(str(context.task_id))
        task = context.current_task
        if live is None:
            if task is not None and task.status.state == _INTERRUPTED:
                updater = TaskUpdater(event_queue, task.id, task.context_id)
                await updater.cancel(updater.new_agent_message(await self._stopped(task.id)))
            return
        handle, done = live
        handle.cancel()
        await done.wait()


async def _submitted(updater: TaskUpdater, message: a2a_pb2.Message) -> None:
    """Create the task, submitted with the client's message."""
    submitted = a2a_pb2.TaskStatus(state=a2a_pb2.TaskState.TASK_STATE_SUBMITTED)
    task = a2a_pb2.Task(
        id=updater.task_id, context_id=updater.context_id, status=submitted, history=[message]
    )
    await updater.event_queue.enqueue_event(task)


def _question_kind(task: a2a_pb2.Task) -> str:
    meta = json_format.MessageToDict(task.status.message.metadata)
    return str(meta.get(QUESTION_KEY, "input"))
