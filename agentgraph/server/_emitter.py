"""A run's steps as its stored stream parts: `values`, `updates` and finished messages.

The parts the runtime's own events make (`events`, partial messages, message
chunks, `custom`) come from `LiveEvents`, a sink added only when the run's
stream modes ask for them. Both name a message by the same `MessageIds`.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio.to_thread
import orjson

from .._core._context import AgentContext
from .._core._events import StepInfo
from .._core._node import Node
from ._live import LiveEvents
from ._mapping import MessageIds, message_id, values_of
from ._queue import QueuedRun, RunQueue, StoredThread

__all__ = ("RunEmitter",)


class RunEmitter:
    """Turns one run's steps into its stored events."""

    def __init__(
        self, queue: RunQueue, run: QueuedRun, thread: StoredThread | None, *, typed: bool
    ) -> None:
        self.queue = queue
        self.run = run
        self.typed = typed
        """The graph takes something other than text: `values` shows its value."""
        before = dict(thread.state) if thread is not None else {}
        shown = before.get("messages") or []
        self.ids = MessageIds(run.thread_id, _known_ids(run.thread_id, shown))
        self.shown = len(shown)
        """How many of the thread's messages the clients have seen already."""
        given = run.kwargs.get("input")
        if isinstance(given, dict) and not typed:
            before.update(given)  # the input's keys are the state's before the first step
        self.before = before
        """The values of the last step, to tell what the next one changed."""
        self.node: str | None = None
        """The last top-level step's node."""
        self.sent = False
        """Whether this run had sent `values` before (it was claimed again)."""
        self.stepped = False
        """Whether a step of this run (at any depth) has finished here."""
        self.modes = frozenset(run.kwargs.get("stream_mode") or ())
        self.subgraphs = bool(run.kwargs.get("stream_subgraphs"))
        """Steps of nested graphs are sent too, under their namespace (`stream_subgraphs`)."""
        self._nested_shown: dict[str, int] = {}
        """By namespace, how many messages its last step's `values` held."""
        self.meta = {
            "run_id": run.run_id,
            "thread_id": run.thread_id,
            "assistant_id": run.assistant_id,
            "graph_id": run.graph_id,
        }
        self.live = LiveEvents(
            run.run_id, self.emit, modes=self.modes, ids=self.ids, meta=self.meta
        )
        """The runtime's events the run's stream modes ask for, as a sink."""
        self._writing = anyio.Lock()

    @classmethod
    async def open(
        cls, queue: RunQueue, run: QueuedRun, thread: StoredThread | None, *, typed: bool
    ) -> RunEmitter:
        """The emitter of `run`; a run claimed again goes on from what it already sent.

        Its last `values` event names the messages the clients have seen, by the
        ids they saw: the new worker neither renames nor sends them again.
        """
        emitter = cls(queue, run, thread, typed=typed)
        if run.graph_run is not None:
            rows = await anyio.to_thread.run_sync(queue.events, run.run_id, 0)
            sent = [data for _, name, data in rows if name == "values"]
            if sent:
                values = orjson.loads(sent[-1])
                messages = values.get("messages") or []
                known = emitter.ids.ids
                known[len(known) :] = _known_ids(run.thread_id, messages)[len(known) :]
                emitter.shown = max(emitter.shown, len(messages))
                emitter.before = values
                emitter.sent = True
        return emitter

    def start_from(self, values: dict[str, Any]) -> None:
        """Go on from `values` (an earlier checkpoint's) rather than the thread's latest.

        A run claimed again keeps what its last `values` event named instead.
        """
        if self.sent:
            return
        shown = values.get("messages") or []
        self.ids.ids[:] = _known_ids(self.run.thread_id, shown)
        self.shown = len(shown)
        before = dict(values)
        given = self.run.kwargs.get("input")
        if isinstance(given, dict) and not self.typed:
            before.update(given)
        self.before = before

    def values(self, ctx: AgentContext[Any]) -> dict[str, Any]:
        """The clients' `values` of a context of this run."""
        return values_of(ctx, self.run.thread_id, ids=self.ids, typed=self.typed)

    def messages(self, fresh: list[Any], meta: dict[str, Any]) -> list[tuple[str, Any]]:
        """`fresh` messages as `messages` (tuple) events, and framed when `messages` is asked.

        A message already sent in chunks is not sent again as a tuple: the
        client would add it to its chunks.
        """
        events: list[tuple[str, Any]] = [
            ("messages", [message, meta])
            for message in fresh
            if message["id"] not in self.live.streamed
        ]
        if "messages" in self.modes:
            for message in fresh:
                events.append(("messages/metadata", {message["id"]: {"metadata": meta}}))
                events.append(("messages/complete", [message]))
        return events

    def fresh(self, values: dict[str, Any]) -> list[Any]:
        """The messages of `values` the clients have not seen yet."""
        fresh: list[Any] = values["messages"][self.shown :]
        self.shown = len(values["messages"])
        return fresh

    def changed(self, values: dict[str, Any]) -> dict[str, Any]:
        """The keys of `values` (but `messages`) that differ from the last step's."""
        changed = {
            key: value
            for key, value in values.items()
            if key != "messages" and self.before.get(key, _MISSING) != value
        }
        self.before = values
        return changed

    async def emit(self, events: list[tuple[str, Any]]) -> None:
        # One write at a time: a run's events are numbered on from the last one stored.
        async with self._writing:
            await anyio.to_thread.run_sync(self.queue.add_events, self.run.run_id, events)

    async def step(self, step: StepInfo, node: Node[Any, Any], ctx: AgentContext[Any]) -> None:
        self.stepped = True
        if step.depth != 0:
            if self.subgraphs:
                await self.emit(self._nested(step, node, ctx))
            return
        self.node = node.name
        values = self.values(ctx)
        fresh = self.fresh(values)
        meta = {
            "tags": [],
            **self.meta,
            "langgraph_node": node.name,
            "langgraph_step": step.index,
        }
        events: list[tuple[str, Any]] = [
            ("values", values),
            ("updates", {node.name: {"messages": fresh, **self.changed(values)}}),
        ]
        events.extend(self.messages(fresh, meta))
        await self.emit(events)

    def _nested(
        self, step: StepInfo, node: Node[Any, Any], ctx: AgentContext[Any]
    ) -> list[tuple[str, Any]]:
        """A nested graph's step as `values|<ns>` and `updates|<ns>`, the namespace naming
        each graph node it runs in as LangGraph's does (`<node>:<task id>`, outermost
        first); the ids are stable within the run."""
        ns = namespace(self.run.run_id, step.path)
        values = self.values(ctx)
        before = self._nested_shown.get(ns, self.shown)
        self._nested_shown[ns] = len(values["messages"])
        added = values["messages"][before:]
        return [(f"values|{ns}", values), (f"updates|{ns}", {node.name: {"messages": added}})]


def namespace(run_id: str, path: tuple[str, ...]) -> str:
    """The namespace of a step at `path` (the root graph first, the step's node last)."""
    parts = []
    for depth in range(1, len(path) - 1):
        task = uuid.uuid5(uuid.NAMESPACE_URL, f"agentgraph:{run_id}/{'/'.join(path[: depth + 1])}")
        parts.append(f"{path[depth]}:{task}")
    return "|".join(parts)


_MISSING = object()


def _known_ids(thread_id: str, shown: list[Any]) -> list[str]:
    """The ids of the messages a thread's values hold; by place for one written without."""
    return [
        str(m["id"]) if isinstance(m, dict) and m.get("id") else message_id(thread_id, n)
        for n, m in enumerate(shown)
    ]
