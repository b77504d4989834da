"""Request bodies of each provider decoded into the provider-neutral `ChatRequest`.

Lenient by design: the dialects validate first, so these only need to read
what a valid request holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ..llm._content import Image
from ..llm._messages import Message, ToolCall, ToolSpec
from ..llm._model import ChatRequest, OutputSchema
from ._fake_media import anthropic_part, ollama_parts, openai_part

__all__ = ("decode_anthropic", "decode_gigachat", "decode_ollama", "decode_openai")

_ANTHROPIC_CHOICE = {"auto": "auto", "any": "required", "none": "none"}


def _openai_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _parse_arguments(text: str) -> dict[str, Any]:
    try:
        value = orjson.loads(text or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def decode_openai(body: Mapping[str, Any]) -> ChatRequest:
    """A Chat Completions request body as a provider-neutral `ChatRequest`."""
    messages: list[Message] = []
    for raw in body.get("messages") or ():
        role, content = raw.get("role"), _openai_text(raw.get("content"))
        if role in ("system", "developer"):
            messages.append(Message.system(content))
        elif role == "tool":
            messages.append(Message.tool(str(raw.get("tool_call_id", "")), content))
        elif role == "assistant":
            calls = tuple(
                ToolCall(
                    c.get("id", ""),
                    c["function"].get("name", ""),
                    _parse_arguments(c["function"].get("arguments", "")),
                )
                for c in raw.get("tool_calls") or ()
            )
            messages.append(Message.assistant(content, tool_calls=calls))
        elif isinstance(raw.get("content"), list) and any(
            part.get("type") in ("image_url", "file") for part in raw["content"]
        ):
            parts = (openai_part(part) for part in raw["content"])
            messages.append(Message.user(*(part for part in parts if part is not None)))
        else:
            messages.append(Message.user(content))
    tools = tuple(
        ToolSpec(
            t["function"]["name"],
            t["function"].get("description", ""),
            t["function"].get("parameters") or {"type": "object", "properties": {}},
        )
        for t in body.get("tools") or ()
    )
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        choice = choice.get("function", {}).get("name")
    output = None
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema") or {}
        output = OutputSchema(
            spec.get("name", "output"),
            spec.get("schema") or {},
            spec.get("description", ""),
            bool(spec.get("strict", False)),
        )
    effort = body.get("reasoning_effort")
    return ChatRequest(
        messages,
        tools,
        tool_choice=choice,
        temperature=body.get("temperature"),
        max_output=body.get("max_completion_tokens", body.get("max_tokens")),
        think=effort if effort in ("low", "medium", "high") else None,
        output=output,
        model=body.get("model"),
    )


def _anthropic_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content if isinstance(content, str) else ""


def _anthropic_message(raw: Mapping[str, Any]) -> list[Message]:
    content = raw.get("content")
    if raw.get("role") == "assistant":
        blocks: list[dict[str, Any]] = (
            content if isinstance(content, list) else [{"type": "text", "text": content}]
        )
        text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        thinking = "".join(
            str(b.get("thinking", "")) for b in blocks if b.get("type") == "thinking"
        )
        calls = tuple(
            ToolCall(str(b["id"]), str(b["name"]), dict(b.get("input") or {}))
            for b in blocks
            if b.get("type") == "tool_use"
        )
        return [Message.assistant(text, tool_calls=calls, reasoning=thinking or None)]
    if not isinstance(content, list):
        return [Message.user(_anthropic_text(content))]
    messages = [_anthropic_result(b) for b in content if b.get("type") == "tool_result"]
    if any(b.get("type") in ("image", "document") for b in content):
        parts = (anthropic_part(b) for b in content if b.get("type") != "tool_result")
        messages.append(Message.user(*(part for part in parts if part is not None)))
        return messages
    text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    if text or not messages:
        messages.append(Message.user(text))
    return messages


def _anthropic_result(block: Mapping[str, Any]) -> Message:
    """A `tool_result` block as a tool message: its text, and its images in order."""
    content = block.get("content")
    call_id, failed = str(block.get("tool_use_id", "")), bool(block.get("is_error"))
    if isinstance(content, list) and any(b.get("type") == "image" for b in content):
        parts = (anthropic_part(b) for b in content)
        kept: list[str | Image] = [p for p in parts if isinstance(p, str | Image)]
        return Message.tool(call_id, *kept, is_error=failed)
    return Message.tool(call_id, _anthropic_text(content), is_error=failed)


def decode_anthropic(body: Mapping[str, Any]) -> ChatRequest:
    """A Messages request body as a provider-neutral `ChatRequest`."""
    messages: list[Message] = []
    if body.get("system"):
        messages.append(Message.system(_anthropic_text(body["system"])))
    for raw in body.get("messages") or ():
        messages.extend(_anthropic_message(raw))
    tools = tuple(
        ToolSpec(t["name"], t.get("description", ""), t.get("input_schema") or {})
        for t in body.get("tools") or ()
    )
    choice = body.get("tool_choice") or {}
    tool_choice = (
        choice.get("name")
        if choice.get("type") == "tool"
        else _ANTHROPIC_CHOICE.get(choice.get("type", ""))
    )
    thinking = (body.get("thinking") or {}).get("type")
    return ChatRequest(
        messages,
        tools,
        tool_choice=tool_choice,
        temperature=body.get("temperature"),
        max_output=body.get("max_tokens"),
        think=True if thinking in ("enabled", "adaptive") else False if thinking else None,
        model=body.get("model"),
    )


def _ollama_message(raw: Mapping[str, Any]) -> Message:
    role = str(raw.get("role", "user")).lower()
    content = str(raw.get("content") or "")
    if role == "system":
        return Message.system(content)
    if role == "tool":
        found = ollama_parts(raw) if raw.get("images") else (content,)
        parts: list[str | Image] = [p for p in found if isinstance(p, str | Image)]
        return Message.tool(
            str(raw.get("tool_call_id") or ""),
            *(parts or [""]),
            name=raw.get("tool_name") or raw.get("name"),
        )
    if role == "assistant":
        calls = tuple(
            ToolCall(
                str(c.get("id") or ""),
                c["function"].get("name", ""),
                c["function"].get("arguments") or {},
            )
            for c in raw.get("tool_calls") or ()
        )
        return Message.assistant(content, tool_calls=calls, reasoning=raw.get("thinking"))
    if raw.get("images"):
        return Message.user(*ollama_parts(raw))
    return Message.user(content)


def decode_ollama(body: Mapping[str, Any]) -> ChatRequest:
    """An `/api/chat` request body as a provider-neutral `ChatRequest`."""
    tools = tuple(
        ToolSpec(
            t["function"]["name"],
            t["function"].get("description", ""),
            t["function"].get("parameters") or {"type": "object", "properties": {}},
        )
        for t in body.get("tools") or ()
    )
    options = body.get("options") or {}
    fmt = body.get("format")
    think = body.get("think")
    return ChatRequest(
        [_ollama_message(m) for m in body.get("messages") or ()],
        tools,
        temperature=options.get("temperature"),
        max_output=options.get("num_predict"),
        think=think if think in (True, False, "low", "medium", "high") else None,
        output=OutputSchema("output", fmt) if isinstance(fmt, dict) else None,
        model=body.get("model"),
    )


def decode_gigachat(body: Mapping[str, Any]) -> ChatRequest:
    """A GigaChat chat body as a provider-neutral `ChatRequest`.

    GigaChat calls have no ids: the `functions_state_id` (or the function name)
    stands in, and a function result answers the call before it.
    """
    messages: list[Message] = []
    last_call = ""
    for raw in body.get("messages") or ():
        role, content = raw.get("role"), str(raw.get("content") or "")
        call = raw.get("function_call")
        if role == "assistant" and isinstance(call, dict):
            last_call = str(raw.get("functions_state_id") or call.get("name", ""))
            tool_call = ToolCall(last_call, str(call.get("name", "")), call.get("arguments") or {})
            messages.append(Message.assistant(content, tool_calls=(tool_call,)))
        elif role == "function":
            messages.append(Message.tool(last_call, content, name=raw.get("name")))
        elif role in ("system", "assistant"):
            messages.append(Message(role, content))
        else:
            messages.append(Message.user(content))
    tools = tuple(
        ToolSpec(f["name"], f.get("description") or "", f.get("parameters") or {})
        for f in body.get("functions") or ()
    )
    choice = body.get("function_call")
    return ChatRequest(
        messages,
        tools,
        tool_choice=choice.get("name") if isinstance(choice, dict) else choice,
        temperature=body.get("temperature"),
        max_output=body.get("max_tokens"),
        model=body.get("model"),
    )
