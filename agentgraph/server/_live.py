"""A run's runtime events as the clients' `events`, `messages`, `messages-tuple` and `custom`
stream parts.

`events` follow the shape of LangChain's `astream_events` (v2): `on_chain_start`
and `on_chain_end` for the run and each top-level step, `on_chat_model_stream`
and `on_chat_model_end` for model calls, `on_tool_end` for tool calls and
`on_custom_event` for a node's `Runtime.emit_custom`. A streaming model
call's text also goes out as `messages/partial` (the answer so far) and as
`messages-tuple` chunks (each piece, concatenated by the client), all under
the id of the call, which the finished message keeps in the thread
(`MessageIds`). `custom` is the data a node sent, as it sent it.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson

from .._core._events import (
    CustomEvent,
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
from ._mapping import MessageIds, message_dict

__all__ = ("LiveEvents",)

Store = Callable[[list[tuple[str, Any]]], Awaitable[None]]


class LiveEvents:
    """A sink of a run's events that stores the stream parts its stream modes ask for."""

    def __init__(
        self,
        run_id: str,
        store: Store,
        *,
        modes: frozenset[str],
        ids: MessageIds,
        meta: Mapping[str, Any],
    ) -> None:
        self.run_id = run_id
        self.store = store
        self.events = "events" in modes
        self.partials = "messages" in modes
        self.chunks = "messages-tuple" in modes
        self.custom = "custom" in modes
        self.ids = ids
        self.meta = dict(meta)
        """What every part's metadata says of the run (its run, thread, assistant, graph)."""
        self.graph = ""
        self.texts: dict[tuple[int, tuple[str, ...]], str] = {}
        """The text so far of each streaming model call going on."""
        self.streamed: set[str] = set()
        """The ids of the messages sent as `messages-tuple` chunks."""
        kinds: set[type[Any]] = set()
        if self.events:
            kinds |= {RunStarted, RunFinished, NodeStarted, NodeFinished, ToolFinished}
            kinds |= {ModelResponded, ModelStreamed, CustomEvent}
        if self.partials or self.chunks:
            kinds |= {ModelStreamed, ModelResponded}
        if self.custom:
            kinds.add(CustomEvent)
        self.wants = frozenset(kinds)
        """The event classes this sink takes (the runner sends it no other)."""

    def part(self, kind: str, name: str, data: dict[str, Any], meta: dict[str, Any]) -> Any:
        return {
            "event": kind,
            "name": name,
            "run_id": self.run_id,
            "tags": [],
            "metadata": {**self.meta, **meta},
            "data": data,
            "parent_ids": [],
        }

    def call_id(self, index: int, path: tuple[str, ...]) -> str:
        """The id of the message the model call at step `index`, `path` answers with."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"agentgraph:{self.run_id}/{index}/{path}"))

    def node_meta(self, index: int, path: tuple[str, ...]) -> dict[str, Any]:
        """The metadata of a part sent from the step at `index`, `path`."""
        name = path[-1] if path else ""
        return {"tags": [], **self.meta, "langgraph_node": name, "langgraph_step": index}

    async def __call__(self, event: Event) -> None:
        if isinstance(event, ModelStreamed | ModelResponded):
            rows = self.model(event)
        elif isinstance(event, CustomEvent):
            rows = self.sent(event)
        elif self.events:
            rows = self.step(event)
        else:
            return
        if rows:
            await self.store(rows)

    def sent(self, event: CustomEvent) -> list[tuple[str, Any]]:
        """A node's own data: as sent (`custom`), and as `on_custom_event` (`events`)."""
        data = plain(event.data)
        rows: list[tuple[str, Any]] = []
        if self.custom:
            rows.append(("custom", data))
        if self.events:
            meta = self.node_meta(event.index, event.path)
            rows.append(("events", self.part("on_custom_event", event.name, data, meta)))
        return rows

    def model(self, event: ModelStreamed | ModelResponded) -> list[tuple[str, Any]]:
        """A model call's streamed text, or its end."""
        key = (event.index, event.path)
        call_id = self.call_id(*key)
        meta = self.node_meta(event.index, event.path)
        rows: list[tuple[str, Any]] = []
        if isinstance(event, ModelResponded):
            self.texts.pop(key, None)
            message = event.response.message
            self.ids.answered(message, call_id)
            if self.events:
                output = message_dict(message, call_id)
                end = self.part("on_chat_model_end", event.model, {"output": output}, meta)
                rows.append(("events", end))
            if self.chunks and call_id in self.streamed:
                rows.append(("messages", [_last_chunk(message_dict(message, call_id)), meta]))
            return rows
        text = self.texts[key] = self.texts.get(key, "") + event.text
        if self.events:
            chunk = {"type": "AIMessageChunk", "content": event.text, "id": call_id}
            rows.append(
                ("events", self.part("on_chat_model_stream", "model", {"chunk": chunk}, meta))
            )
        if self.partials:
            rows.append(("messages/partial", [{"type": "ai", "content": text, "id": call_id}]))
        if self.chunks:
            self.streamed.add(call_id)
            rows.append(("messages", [_chunk(call_id, event.text), meta]))
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


def _chunk(call_id: str, text: str) -> dict[str, Any]:
    """A piece of a streamed answer, as LangChain's `AIMessageChunk` serializes."""
    return {
        "type": "AIMessageChunk",
        "content": text,
        "id": call_id,
        "name": None,
        "additional_kwargs": {},
        "response_metadata": {},
        "tool_calls": [],
        "invalid_tool_calls": [],
        "tool_call_chunks": [],
        "usage_metadata": None,
    }


def _last_chunk(message: dict[str, Any]) -> dict[str, Any]:
    """The end of a streamed answer: no more text, its tool calls and usage."""
    chunk = _chunk(message["id"], "")
    chunk["usage_metadata"] = message["usage_metadata"]
    chunk["tool_call_chunks"] = [
        {
            "id": call["id"],
            "name": call["name"],
            "args": orjson.dumps(call["args"]).decode(),
            "index": n,
            "type": "tool_call_chunk",
        }
        for n, call in enumerate(message["tool_calls"])
    ]
    chunk["tool_calls"] = message["tool_calls"]
    return chunk
