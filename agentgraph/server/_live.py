"""A run's runtime events as the clients' `events` and `messages/partial` stream parts.

`events` follow the shape of LangChain's `astream_events` (v2): `on_chain_start`
and `on_chain_end` for the run and each top-level step, `on_chat_model_stream`
and `on_chat_model_end` for model calls, `on_tool_end` for tool calls. A
streaming model call's text also goes out as `messages/partial`: the answer so
far, under an id of its own per call (the id the finished message gets in the
thread is the one `messages/complete` carries).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from .._events import (
    Event,
    ModelResponded,
    ModelStreamed,
    NodeFinished,
    NodeStarted,
    RunFinished,
    RunStarted,
    ToolFinished,
)
from ..tracing._records import plain
from ._mapping import message_dict

__all__ = ("LiveEvents",)

Store = Callable[[list[tuple[str, Any]]], Awaitable[None]]


class LiveEvents:
    """A sink of a run's events that stores the `events` and `messages/partial` it asked for."""

    def __init__(self, run_id: str, store: Store, *, events: bool, partials: bool) -> None:
        self.run_id = run_id
        self.store = store
        self.events = events
        self.partials = partials
        self.graph = ""
        self.texts: dict[tuple[int, tuple[str, ...]], str] = {}
        """The text so far of each streaming model call going on."""
        kinds: set[type[Any]] = set()
        if events:
            kinds |= {RunStarted, RunFinished, NodeStarted, NodeFinished, ToolFinished}
            kinds |= {ModelResponded, ModelStreamed}
        if partials:
            kinds |= {ModelStreamed, ModelResponded}
        self.wants = frozenset(kinds)
        """The event classes this sink takes (the runner sends it no other)."""

    def part(self, kind: str, name: str, data: dict[str, Any], meta: dict[str, Any]) -> Any:
        return {
            "event": kind,
            "name": name,
            "run_id": self.run_id,
            "tags": [],
            "metadata": {"run_id": self.run_id, **meta},
            "data": data,
            "parent_ids": [],
        }

    def call_id(self, index: int, path: tuple[str, ...]) -> str:
        """The id of the partial messages of the model call at step `index`, `path`."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"agentgraph:{self.run_id}/{index}/{path}"))

    async def __call__(self, event: Event) -> None:
        if isinstance(event, ModelStreamed | ModelResponded):
            rows = self.model(event)
        elif self.events:
            rows = self.step(event)
        else:
            return
        if rows:
            await self.store(rows)

    def model(self, event: ModelStreamed | ModelResponded) -> list[tuple[str, Any]]:
        """A model call's streamed text, or its end."""
        key = (event.index, event.path)
        meta: dict[str, Any] = {"langgraph_node": event.path[-1] if event.path else ""}
        rows: list[tuple[str, Any]] = []
        if isinstance(event, ModelResponded):
            self.texts.pop(key, None)
            if self.events:
                output = message_dict(event.response.message, self.call_id(*key))
                end = self.part("on_chat_model_end", event.model, {"output": output}, meta)
                rows.append(("events", end))
            return rows
        text = self.texts[key] = self.texts.get(key, "") + event.text
        if self.events:
            chunk = {"type": "AIMessageChunk", "content": event.text}
            rows.append(
                ("events", self.part("on_chat_model_stream", "model", {"chunk": chunk}, meta))
            )
        if self.partials:
            rows.append(
                ("messages/partial", [{"type": "ai", "content": text, "id": self.call_id(*key)}])
            )
        return rows

    def step(self, event: Event) -> list[tuple[str, Any]]:
        """The run's and its top-level steps' starts and ends, and tool calls."""
        meta: dict[str, Any]
        if isinstance(event, RunStarted):
            self.graph = event.graph
            return [("events", self.part("on_chain_start", event.graph, {}, {}))]
        if isinstance(event, RunFinished):
            data = {} if event.error is None else {"error": type(event.error).__name__}
            return [("events", self.part("on_chain_end", self.graph, data, {}))]
        if isinstance(event, NodeStarted) and event.depth == 0:
            meta = {"langgraph_node": event.node.name, "langgraph_step": event.index}
            return [("events", self.part("on_chain_start", event.node.name, {}, meta))]
        if isinstance(event, NodeFinished) and event.step.depth == 0:
            meta = {"langgraph_node": event.node.name, "langgraph_step": event.step.index}
            return [("events", self.part("on_chain_end", event.node.name, {}, meta))]
        if isinstance(event, ToolFinished):
            data = {"input": plain(dict(event.call.arguments)), "output": event.result.content}
            return [("events", self.part("on_tool_end", event.call.name, data, {}))]
        return []
