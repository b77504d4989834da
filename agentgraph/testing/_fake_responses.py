"""The fake server's OpenAI Responses API (`POST /v1/responses`).

Refuses what the service refuses (`_fake_responses_checks`); answers with
response objects and the typed stream events (`event:` name and
`sequence_number` on each). Reasoning items carry an `encrypted_content` the
checks verify when it comes back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ..llm._content import Image
from ..llm._messages import Message, ToolCall, ToolSpec
from ..llm._model import ChatRequest, ChatResponse, OutputSchema
from ..llm._replies import ids, split_text
from ._fake_common import unix_now
from ._fake_media import responses_part
from ._fake_openai import OpenAIDialect
from ._fake_responses_checks import REASONING_MODEL, check_body, sealed
from ._faults import ErrorResponse, StreamError

__all__ = ("ResponsesDialect",)


class ResponsesDialect(OpenAIDialect):
    """OpenAI `/v1/responses`; authentication and errors as OpenAI's other endpoints."""

    name = "openai-responses"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._response_id = ids("resp_fake")
        self._item_id = ids("fake")
        self._reasoned: dict[str, str] = {}  # item id -> the reasoning item it came with

    def validate(self, body: Mapping[str, Any]) -> ErrorResponse | None:
        return check_body(body) or self._check_pairs(body.get("input"))

    def _check_pairs(self, items: Any) -> ErrorResponse | None:
        """An item of a reasoning model's answer, sent back by id, needs its reasoning before it."""
        seen: set[str] = set()
        for item in items if isinstance(items, list) else ():
            item_id = item.get("id")
            reasoning = self._reasoned.get(item_id) if isinstance(item_id, str) else None
            if item.get("type") == "reasoning":
                seen.add(str(item_id))
            elif reasoning is not None and reasoning not in seen:
                return ErrorResponse(
                    400,
                    message=f"Item '{item_id}' of type '{item['type']}' was provided without "
                    f"its required 'reasoning' item: '{reasoning}'.",
                    param="input",
                )
        return None

    # -- reading -----------------------------------------------------------------------

    def decode(self, body: Mapping[str, Any]) -> ChatRequest:
        messages: list[Message] = []
        if body.get("instructions"):
            messages.append(Message.system(body["instructions"]))
        raw = body.get("input")
        for item in [{"role": "user", "content": raw}] if isinstance(raw, str) else raw or ():
            _decode_item(item, messages)
        tools = tuple(
            ToolSpec(t["name"], t.get("description") or "", t.get("parameters") or {})
            for t in body.get("tools") or ()
        )
        choice = body.get("tool_choice")
        if isinstance(choice, dict):
            choice = choice.get("name")
        output = None
        fmt = (body.get("text") or {}).get("format") or {}
        if fmt.get("type") == "json_schema":
            output = OutputSchema(
                fmt["name"], fmt["schema"], fmt.get("description") or "", bool(fmt.get("strict"))
            )
        effort = (body.get("reasoning") or {}).get("effort")
        return ChatRequest(
            messages,
            tools,
            tool_choice=choice,
            temperature=body.get("temperature"),
            max_output=body.get("max_output_tokens"),
            think=effort if effort in ("low", "medium", "high") else None,
            output=output,
            model=body.get("model"),
        )

    # -- answering ---------------------------------------------------------------------

    def _items(self, response: ChatResponse, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        message = response.message
        items: list[dict[str, Any]] = []
        reasoned = None
        if REASONING_MODEL.match(str(body.get("model") or "")):
            item_id = f"rs_{self._item_id()}"
            summary = message.reasoning if (body.get("reasoning") or {}).get("summary") else None
            reasoning: dict[str, Any] = {
                "id": item_id,
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": summary}] if summary else [],
            }
            if "reasoning.encrypted_content" in (body.get("include") or ()):
                reasoning["encrypted_content"] = sealed(item_id)
            items.append(reasoning)
            reasoned = item_id
        if message.content or not message.tool_calls:
            text = {"type": "output_text", "text": message.content, "annotations": []}
            items.append(
                {
                    "id": f"msg_{self._item_id()}",
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{**text, "logprobs": []}],
                }
            )
        items.extend(
            {
                "id": f"fc_{self._item_id()}",
                "type": "function_call",
                "status": "completed",
                "call_id": call.id,
                "name": call.name,
                "arguments": orjson.dumps(dict(call.arguments)).decode(),
            }
            for call in message.tool_calls
        )
        if reasoned is not None:
            self._reasoned.update((item["id"], reasoned) for item in items[1:])
        return items

    def _response(
        self, response: ChatResponse, body: Mapping[str, Any], items: list[dict[str, Any]]
    ) -> dict[str, Any]:
        reason = {"length": "max_output_tokens", "content_filter": "content_filter"}.get(
            str(response.finish_reason)
        )
        usage = response.usage
        reasoning = body.get("reasoning") or {}
        return {
            "id": response.id or self._response_id(),
            "object": "response",
            "created_at": unix_now(),
            "status": "incomplete" if reason else "completed",
            "error": None,
            "incomplete_details": {"reason": reason} if reason else None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "model": response.model or body.get("model", ""),
            "output": items,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": None,
            "reasoning": {
                "effort": reasoning.get("effort"),
                "summary": reasoning.get("summary"),
            },
            "store": body.get("store", True),
            "temperature": body.get("temperature", 1.0),
            "text": body.get("text") or {"format": {"type": "text"}},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": {
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {
                    "cached_tokens": usage.cache_read_tokens,
                    "cache_write_tokens": usage.cache_write_tokens,
                },
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
                "total_tokens": usage.total_tokens,
            },
            "user": None,
            "metadata": {},
        }

    def render(self, response: ChatResponse, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._response(response, body, self._items(response, body))

    def render_stream(self, response: ChatResponse, body: Mapping[str, Any]) -> list[bytes]:
        items = self._items(response, body)
        final = self._response(response, body, items)
        opening = {**final, "status": "in_progress", "output": [], "usage": None}
        opening["incomplete_details"] = None
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": opening},
            {"type": "response.in_progress", "response": opening},
        ]
        for index, item in enumerate(items):
            events.extend(self._item_events(index, item))
        end = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
        events.append({"type": end, "response": final})
        return [_sse({**event, "sequence_number": n}) for n, event in enumerate(events)]

    def _item_events(self, index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
        size = self.options.chunk_size
        kind = item["type"]
        at: dict[str, Any] = {"output_index": index}
        part: dict[str, Any] = {"item_id": item["id"], **at}
        events: list[dict[str, Any]] = []
        if kind == "message":
            text = item["content"][0]["text"]
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            part["content_index"] = 0
            opening = {**item, "status": "in_progress", "content": []}
            events.append(_event("output_item.added", at, item=opening))
            events.append(_event("content_part.added", part, part=empty))
            events.extend(
                _event("output_text.delta", part, delta=piece, logprobs=[])
                for piece in split_text(text, size)
            )
            events.append(_event("output_text.done", part, text=text, logprobs=[]))
            events.append(_event("content_part.done", part, part={**empty, "text": text}))
        elif kind == "function_call":
            arguments = item["arguments"]
            opening = {**item, "status": "in_progress", "arguments": ""}
            events.append(_event("output_item.added", at, item=opening))
            events.extend(
                _event("function_call_arguments.delta", part, delta=piece)
                for piece in split_text(arguments, size)
            )
            events.append(
                _event("function_call_arguments.done", part, name=item["name"], arguments=arguments)
            )
        else:
            opening = {k: v for k, v in item.items() if k != "encrypted_content"}
            events.append(_event("output_item.added", at, item={**opening, "summary": []}))
            for n, summary in enumerate(item["summary"]):
                where = {**part, "summary_index": n}
                text = summary["text"]
                empty = {"type": "summary_text", "text": ""}
                events.append(_event("reasoning_summary_part.added", where, part=empty))
                events.extend(
                    _event("reasoning_summary_text.delta", where, delta=piece)
                    for piece in split_text(text, size)
                )
                events.append(_event("reasoning_summary_text.done", where, text=text))
                events.append(_event("reasoning_summary_part.done", where, part=summary))
        events.append(_event("output_item.done", at, item=item))
        return events

    def stream_error(self, fault: StreamError) -> bytes:
        return _sse(
            {
                "type": "error",
                "code": fault.error_type or "server_error",
                "message": fault.message,
                "param": None,
                "sequence_number": 0,
            }
        )

    def malformed_event(self, body: bytes) -> bytes:
        return b"event: response.created\ndata: " + body + b"\n\n"


def _event(kind: str, where: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    return {"type": f"response.{kind}", **where, **fields}


def _sse(event: dict[str, Any]) -> bytes:
    name: str = event["type"]
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


def _decode_item(item: dict[str, Any], messages: list[Message]) -> None:
    kind = item.get("type", "message")
    if kind == "message":
        content = item.get("content")
        role = item.get("role")
        if isinstance(content, list) and role == "user":
            parts = [responses_part(p) for p in content if isinstance(p, dict)]
            kept = [p for p in parts if p is not None]
            if kept and any(not isinstance(p, str) for p in kept):
                messages.append(Message.user(*kept))
                return
        if isinstance(content, list):
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if role in ("system", "developer"):
            messages.append(Message.system(str(content or "")))
        elif role == "assistant":
            messages.append(Message.assistant(str(content or "")))
        else:
            messages.append(Message.user(str(content or "")))
    elif kind == "function_call":
        call = ToolCall(item["call_id"], item["name"], item.get("arguments") or "{}")
        last = messages[-1] if messages else None
        if last is not None and last.role == "assistant":
            messages[-1] = Message.assistant(last.content, tool_calls=(*last.tool_calls, call))
        else:
            messages.append(Message.assistant(tool_calls=(call,)))
    elif kind == "function_call_output":
        output = item.get("output")
        if isinstance(output, list):  # text and images
            parts = [responses_part(p) for p in output if isinstance(p, dict)]
            said: list[str | Image] = [p for p in parts if isinstance(p, str | Image)]
            messages.append(Message.tool(item["call_id"], *(said or [""])))
        else:
            text = output if isinstance(output, str) else ""
            messages.append(Message.tool(item["call_id"], text))
