"""Where a server run starts in its agentgraph thread: the checkpoint it goes on from.

A run goes on from its thread's newest checkpoint, or from the one it names
(`checkpoint_id`). Before it runs, a worker makes the agentgraph thread's head
hold that checkpoint's values when it does not already (`go_on_from`):

- a checkpoint a run wrote names the turn whose final context it is; when the
  thread's head is another run (a run from an earlier checkpoint, a rolled
  back run that had finished, a copied thread), a new head of no steps
  holding that context is made;
- a checkpoint `update_state` wrote, or an interrupt (whose values hold what the
  interrupted turn did before it asked), becomes such a head the first time a
  run starts from it: its base turn's context with its messages and state.

A resume answers the run waiting at the checkpoint's interrupt
(`waiting_run`): that run itself while it is as it was when it asked, else
(it went on since, or belongs to the thread copied from) a copy of it as it
was then, a turn of this thread. An `update_state` on a checkpoint with an
interrupt keeps the interrupt: the resume answers a copy whose context at the
question is the updated values.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread
import attrs

from .._core._context import AgentContext
from .._core._errors import CheckpointError
from .._core._json import Types
from .._core._runner import new_run_id
from ..checkpoint._bases import final_context
from ..checkpoint._codec import full_context
from ..checkpoint._resume import decode_contexts, log_blobs, start_of
from ..checkpoint._threads import reset_thread
from ..llm._messages import Message
from ..llm._transcript import NOT_COMPLETED
from ..tracing._records import plain
from ._history import StoredCheckpoint, checkpoint_id_for, history_of
from ._mapping import message_dict, message_from, message_id
from ._queue import QueuedRun, RunQueue

__all__ = ("Turns", "closed_calls", "context_with", "run_checkpoint")


def context_with(
    base: AgentContext[Any], values: dict[str, Any], thread_id: str
) -> AgentContext[Any]:
    """`base` with the messages and state of `values` (the clients' form).

    A message equal to the one at its place in `base` keeps `base`'s (with its
    usage and everything else the clients do not see); a state key whose value
    is unchanged keeps `base`'s value as it was (typed).
    """
    history = list(base.history)
    messages = []
    for n, item in enumerate(values.get("messages") or ()):
        if n < len(history) and _same(message_dict(history[n], message_id(thread_id, n)), item):
            messages.append(history[n])
        else:
            messages.append(message_from(item))
    state = {
        key: base.state[key] if key in base.state and plain(base.state[key]) == value else value
        for key, value in values.items()
        if key != "messages"
    }
    return base.evolve(history=tuple(messages), state=state)


def closed_calls(ctx: AgentContext[Any]) -> AgentContext[Any]:
    """`ctx` with an error result for each tool call of its last assistant message that
    has none (a run stopped between a model's calls and their results), as
    `repair_transcript` records one: a conversation a model takes again."""
    history = tuple(ctx.history)
    last = max((i for i, m in enumerate(history) if m.role == "assistant"), default=None)
    if last is None or not history[last].tool_calls:
        return ctx
    answered = {m.tool_call_id for m in history[last + 1 :] if m.role == "tool"}
    missing = [
        Message.tool(call.id, NOT_COMPLETED, name=call.name, is_error=True)
        for call in history[last].tool_calls
        if call.id not in answered
    ]
    return ctx.append(*missing) if missing else ctx


def run_checkpoint(
    run: QueuedRun,
    start: StoredCheckpoint | None,
    values: dict[str, Any],
    *,
    node: str | None,
    head: str | None,
    waiting: dict[str, Any] | None = None,
    interrupts: list[Any] | None = None,
) -> dict[str, Any]:
    """The checkpoint `run` writes as it ends or asks (`interrupts`), after `start`: the
    arguments of `History.add`. `node` is its last top-level step's, `head` the turn
    its values are the final context of."""
    before = 0 if start is None else len(start.values.get("messages") or ())
    writes = (
        None if interrupts else {node or run.graph_id: {"messages": values["messages"][before:]}}
    )
    metadata = {
        **run.metadata,
        "source": "loop",
        "run_id": run.run_id,
        "thread_id": run.thread_id,
        "graph_id": run.graph_id,
        "assistant_id": run.assistant_id,
        "writes": writes,
        "parents": {},
    }
    return {
        "parent": start,
        "values": values,
        "checkpoint_id": checkpoint_id_for(run.run_id),
        "run_id": run.run_id,
        "metadata": metadata,
        "head": head,
        "waiting": waiting,
        "interrupts": interrupts or [],
        "next_nodes": ["interrupt"] if interrupts else [],
    }


def _same(ours: dict[str, Any], theirs: Any) -> bool:
    if not isinstance(theirs, dict):
        return False
    return {k: v for k, v in ours.items() if k != "id"} == {
        k: v for k, v in theirs.items() if k != "id"
    }


class Turns:
    """A worker's view of a thread's checkpoints, against its checkpoint store."""

    def __init__(self, queue: RunQueue, store: Any, types: Types) -> None:
        self.history = history_of(queue)
        self.store = store
        self.types = types

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args)

    async def start_of(self, run: QueuedRun) -> StoredCheckpoint | None:
        """The checkpoint `run` goes on from: the one it names, else its thread's newest."""
        wanted = run.kwargs.get("checkpoint_id")
        if wanted:
            found: StoredCheckpoint | None = await self._call(
                self.history.get, run.thread_id, wanted
            )
            if found is not None:
                return found
        latest: StoredCheckpoint | None = await self._call(self.history.latest, run.thread_id)
        return latest

    async def _head(self, thread_id: str) -> str | None:
        found = await self.store.load_thread(thread_id)
        return None if found is None else found.head

    async def _context(self, run_id: str | None) -> AgentContext[Any]:
        if run_id is None:
            return AgentContext("")
        return (await final_context(self.store, run_id, self.types))[0]

    async def go_on_from(self, thread_id: str, checkpoint: StoredCheckpoint | None) -> None:
        """Make the agentgraph thread's head hold `checkpoint`'s values (None: no values)."""
        head = await self._head(thread_id)
        if checkpoint is not None and checkpoint.head is None:
            base = await self._base(thread_id, checkpoint)
            ctx = context_with(await self._context(base), checkpoint.values, thread_id)
            made = await reset_thread(self.store, thread_id, ctx, expect_head=head)
            await self._call(self.history.set_head, thread_id, checkpoint.checkpoint_id, made)
            return
        await self._go_to(thread_id, None if checkpoint is None else checkpoint.head, head)

    async def _go_to(self, thread_id: str, target: str | None, head: str | None) -> None:
        """Make the thread's head hold turn `target`'s final context (None: no context)."""
        if target != head:
            ctx = await self._context(target)
            await reset_thread(self.store, thread_id, ctx, expect_head=head)

    async def answering(self, thread_id: str, checkpoint: StoredCheckpoint) -> str:
        """The agentgraph run a resume from `checkpoint`'s interrupt answers, the thread's
        head made the turn it went on from (see `waiting_run`)."""
        assert checkpoint.waiting is not None
        await self._go_to(thread_id, checkpoint.waiting["base"], await self._head(thread_id))
        return await self.waiting_run(thread_id, checkpoint)

    async def _base(self, thread_id: str, checkpoint: StoredCheckpoint) -> str | None:
        """The turn `checkpoint`'s values go on from: its interrupted run's base, else the
        nearest turn before it on its branch (None: there is none)."""
        if checkpoint.waiting is not None:
            base: str | None = checkpoint.waiting["base"]
            return base
        at: StoredCheckpoint | None = checkpoint
        while at is not None and at.head is None:
            if at.parent_id is None:
                return None
            at = await self._call(self.history.get, thread_id, at.parent_id)
        return None if at is None else at.head

    async def waiting_run(self, thread_id: str, checkpoint: StoredCheckpoint) -> str:
        """The agentgraph run waiting at `checkpoint`'s interrupt, as it was when it asked."""
        assert checkpoint.waiting is not None
        waiting = checkpoint.waiting
        log = await self.store.load(waiting["run"])
        head = await self._head(thread_id)
        if log is None:
            raise CheckpointError(
                f"the run waiting at checkpoint {checkpoint.checkpoint_id!r} is not in the store"
            )
        edited = bool(waiting.get("edited"))
        if (
            not edited
            and log.run.thread == thread_id
            and log.run.base == head
            and len(log.steps) == waiting["steps"]
            and len(log.effects) == waiting["effects"]
        ):
            return str(waiting["run"])
        fresh = new_run_id()
        record = attrs.evolve(
            log.run, run_id=fresh, created=time.time(), thread=thread_id, base=head
        )
        steps = [attrs.evolve(s, run_id=fresh) for s in log.steps[: waiting["steps"]]]
        effects = [attrs.evolve(e, run_id=fresh) for e in log.effects[: waiting["effects"]]]
        if edited:
            # The values an update_state set replace the context the question was asked on.
            then = attrs.evolve(log, steps=log.steps[: waiting["steps"]])
            blobs = await log_blobs(self.store, then)
            start = await start_of(self.store, then, self.types)
            asked = decode_contexts(then, types=self.types, blobs=blobs, start=start)[-1]
            ctx = context_with(asked, checkpoint.values, thread_id)
            data = full_context(ctx, self.store.put_blob)
            if steps:
                steps[-1] = attrs.evolve(steps[-1], context=data)
            else:
                record = attrs.evolve(record, context=data)
        self.store.write((record, *steps, *effects))
        await self.store.flush(run_id=fresh)
        return fresh

    async def waiting_now(self, run_id: str) -> dict[str, Any]:
        """What a checkpoint keeps of the run `run_id` that just asked a question."""
        log = await self.store.load(run_id)
        assert log is not None
        return {
            "run": run_id,
            "steps": len(log.steps),
            "effects": len(log.effects),
            "base": log.run.base,
        }
