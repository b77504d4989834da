"""OpenAI Responses API requests: a history as input items, tools, tool choice and format.

Requests go with `store: false`, so every turn carries the whole history. The
reasoning items a response left in `Message.provider_data` go back verbatim,
before the function-call items they led to, as the service requires. Responses
and stream events are read in `_responses_wire`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from .._core._errors import BadRequestError
from ._assemble import arguments_json
from ._content import Image, Part, data_url
from ._messages import Message, ToolSpec
from ._model import OutputSchema, ToolChoice

__all__ = (
    "CALL_ITEMS_KEY",
    "REASONING_KEY",
    "responses_format",
    "responses_input",
    "responses_tool_choice",
    "responses_tools",
    "strict_schema",
)

REASONING_KEY = "openai.reasoning"
"""`Message.provider_data` key of the reasoning items that must go back verbatim."""
CALL_ITEMS_KEY = "openai.call_items"
"""`Message.provider_data` key mapping each tool call's `call_id` to its item id."""


def _reasoning_items(message: Message) -> list[dict[str, Any]]:
    return [dict(item) for item in message.provider_data.get(REASONING_KEY, ()) if _mapping(item)]


def _mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping)


def responses_input(
    messages: Sequence[Message], *, provider: str, reasoning: bool = True
) -> tuple[str, list[Any]]:
    """`(instructions, input items)` for a history: system text leads, the rest are items.

    System messages anywhere in the history (a summary after the prompt) are
    joined into `instructions`, which the service applies to this turn only.
    Kept reasoning items (and the item ids that need them) go back only to a
    model that reasons (`reasoning`); another model is sent the answers alone.
    """
    system: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            if message.content.strip():
                system.append(message.content)
        elif message.role == "tool":
            if not message.tool_call_id:
                raise BadRequestError(
                    "a tool message needs the tool_call_id of the call it answers",
                    provider=provider,
                )
            # A result with images is a list of input parts, as the service takes it.
            output: Any = message.content
            if message.parts:
                output = [_input_part(part) for part in message.parts if part != ""]
            items.append(
                {"type": "function_call_output", "call_id": message.tool_call_id, "output": output}
            )
        elif message.role == "assistant":
            items.extend(_assistant_items(message, reasoning))
        elif message.parts:
            content = [_input_part(part) for part in message.parts]
            items.append({"type": "message", "role": "user", "content": content})
        else:
            items.append({"type": "message", "role": "user", "content": message.content})
    return "\n\n".join(system), items


def _input_part(part: Part) -> dict[str, Any]:
    """One part of a user turn: text, an image (URL or data URL), a PDF file (data URL)."""
    if isinstance(part, str):
        return {"type": "input_text", "text": part}
    if isinstance(part, Image):
        url = part.url if part.data is None else data_url(str(part.media_type), part.data)
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    return {
        "type": "input_file",
        "filename": part.name,
        "file_data": data_url(part.media_type, part.data),
    }


def _assistant_items(message: Message, reasoning: bool) -> list[dict[str, Any]]:
    items = _reasoning_items(message) if reasoning else []
    # A call goes back under its item id only beside the reasoning it came with.
    ids = message.provider_data.get(CALL_ITEMS_KEY, {}) if items else {}
    if message.content.strip() or not message.tool_calls:
        items.append({"type": "message", "role": "assistant", "content": message.content})
    for call in message.tool_calls:
        item: dict[str, Any] = {
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": arguments_json(call.arguments),
        }
        item_id = ids.get(call.id) if isinstance(ids, Mapping) else None
        if isinstance(item_id, str) and item_id:
            item["id"] = item_id
        items.append(item)
    return items


def strict_schema(schema: Mapping[str, Any]) -> bool:
    """Whether a JSON Schema meets strict mode: every object closed, every property required."""
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or ()) != set(properties):
            return False
        if not all(_mapping(p) and strict_schema(p) for p in properties.values()):
            return False
    items = schema.get("items")
    if _mapping(items) and not strict_schema(items):
        return False
    for key in ("anyOf", "$defs", "definitions"):
        nested = schema.get(key)
        values = nested.values() if _mapping(nested) else nested or ()
        if not all(_mapping(v) and strict_schema(v) for v in values):
            return False
    return True


def responses_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as flat `{"type": "function", "name", "parameters", "strict"}` entries.

    The service treats a tool as strict unless told otherwise, and refuses a
    strict schema that leaves a property optional; `strict` is sent as the
    schema allows.
    """
    out: list[dict[str, Any]] = []
    for tool in tools:
        entry: dict[str, Any] = {
            "type": "function",
            "name": tool.name,
            "parameters": tool.parameters,
            "strict": strict_schema(tool.parameters),
        }
        if tool.description:
            entry["description"] = tool.description
        out.append(entry)
    return out


def responses_tool_choice(choice: ToolChoice) -> Any:
    """`auto` / `none` / `required`, or `{"type": "function", "name": ...}` for a tool name."""
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "name": choice}


def responses_format(output: OutputSchema) -> dict[str, Any]:
    """`text.format` for structured output."""
    schema: dict[str, Any] = {
        "type": "json_schema",
        "name": output.name,
        "schema": output.schema,
        "strict": output.strict,
    }
    if output.description:
        schema["description"] = output.description
    return schema
