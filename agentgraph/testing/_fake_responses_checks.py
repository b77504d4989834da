"""What the fake `/v1/responses` refuses, worded as the service words it.

Unknown parameters, the chat-completions tool shape, strict schemas that are
not closed, reasoning hints for models that cannot reason, a tool output
without its call (and a call without its output), reasoning items without
their encrypted content or without the item they led to.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from ._fake_media import responses_content_problem, responses_output_problem
from ._faults import ErrorResponse

__all__ = ("REASONING_MODEL", "check_body", "sealed")

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
REASONING_MODEL = re.compile(r"^(o\d|gpt-5(?!-chat)|gpt-oss)")
_PARAMETERS = frozenset(
    {
        "background", "conversation", "include", "input", "instructions", "max_output_tokens",
        "max_tool_calls", "metadata", "model", "parallel_tool_calls", "previous_response_id",
        "prompt", "prompt_cache_key", "prompt_cache_retention", "reasoning", "safety_identifier",
        "service_tier", "store", "stream", "stream_options", "temperature", "text",
        "tool_choice", "tools", "top_logprobs", "top_p", "truncation", "user",
    }
)  # fmt: skip
_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
_INCLUDABLE = frozenset(
    {
        "reasoning.encrypted_content",
        "message.output_text.logprobs",
        "file_search_call.results",
        "web_search_call.action.sources",
        "code_interpreter_call.outputs",
        "computer_call_output.output.image_url",
        "message.input_image.image_url",
    }
)
_ITEM_TYPES = ("message", "function_call", "function_call_output", "reasoning")
_SEAL = "fake-reasoning:"


def _bad(message: str, *, param: str | None = None, code: str | None = None) -> ErrorResponse:
    return ErrorResponse(400, message=message, code=code, param=param)


def _unsupported(param: str) -> ErrorResponse:
    return _bad(
        f"Unsupported parameter: '{param}' is not supported with this model.",
        param=param,
        code="unsupported_parameter",
    )


def sealed(item_id: str) -> str:
    """The `encrypted_content` the fake hands out for reasoning item `item_id`."""
    return base64.b64encode((_SEAL + item_id).encode()).decode()


def _strict_problem(schema: Any, where: str = "()") -> str | None:
    """Why a schema fails strict mode, worded as the service words it; None when it passes."""
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object" or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            return (
                f"In context={where}, 'additionalProperties' is required to be supplied "
                "and to be false."
            )
        properties = schema.get("properties") or {}
        missing = [key for key in properties if key not in (schema.get("required") or ())]
        if missing:
            return (
                f"In context={where}, 'required' is required to be supplied and to be an array "
                f"including every key in properties. Missing '{missing[0]}'."
            )
        for key, value in properties.items():
            problem = _strict_problem(value, f"('properties', '{key}')")
            if problem:
                return problem
    for key in ("items", "anyOf", "$defs"):
        nested = schema.get(key)
        values = nested.values() if isinstance(nested, dict) and key != "items" else [nested]
        if isinstance(nested, list):
            values = nested
        for value in values:
            problem = _strict_problem(value, where)
            if problem:
                return problem
    return None


def check_body(body: Mapping[str, Any]) -> ErrorResponse | None:
    """The error the service gives for a `/v1/responses` body, or None when it is valid."""
    for key in body:
        if key not in _PARAMETERS:
            return _bad(f"Unknown parameter: '{key}'.", param=key, code="unknown_parameter")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return _bad(
            "Missing required parameter: 'model'.",
            param="model",
            code="missing_required_parameter",
        )
    if "instructions" in body and not isinstance(body["instructions"], str | None):
        return _bad("Invalid type for 'instructions': expected a string.", param="instructions")
    return (
        _check_options(body, bool(REASONING_MODEL.match(model)), model)
        or _check_tools(body.get("tools"), body.get("tool_choice"))
        or _check_format(body.get("text"))
        or _check_input(body.get("input"), store=body.get("store", True) is not False)
    )


def _check_options(body: Mapping[str, Any], reasons: bool, model: str) -> ErrorResponse | None:
    if body.get("temperature") is not None and reasons:
        return _unsupported("temperature")
    limit = body.get("max_output_tokens")
    if isinstance(limit, int) and limit < 16:
        return _bad(
            "Invalid 'max_output_tokens': integer below minimum value. "
            f"Expected a value >= 16, but got {limit} instead.",
            param="max_output_tokens",
            code="integer_below_min_value",
        )
    for i, value in enumerate(body.get("include") or ()):
        if value not in _INCLUDABLE:
            return _bad(
                f"Invalid value: '{value}'. Supported values are: "
                + ", ".join(f"'{v}'" for v in sorted(_INCLUDABLE))
                + ".",
                param=f"include[{i}]",
                code="invalid_value",
            )
    reasoning = body.get("reasoning")
    if reasoning is None:
        return None
    if not isinstance(reasoning, dict):
        return _bad("Invalid type for 'reasoning': expected an object.", param="reasoning")
    effort = reasoning.get("effort")
    if effort is None:
        return None
    if not reasons:
        return _unsupported("reasoning.effort")
    allowed = [e for e in _EFFORTS if _takes(model, e)]
    if effort not in allowed:
        return _bad(
            f"Unsupported value: '{effort}' is not supported with the '{model}' model. "
            "Supported values are: " + ", ".join(f"'{e}'" for e in allowed) + ".",
            param="reasoning.effort",
            code="unsupported_value",
        )
    return None


def _takes(model: str, effort: str) -> bool:
    """Whether `model` takes reasoning `effort` (gpt-5.1 and later add `none`, drop nothing)."""
    if effort == "none":
        return bool(re.match(r"gpt-5\.\d", model))
    if effort == "minimal":
        return model.startswith("gpt-5")
    if effort == "xhigh":
        return bool(re.match(r"gpt-5\.[1-9]", model))
    return True


def _check_tools(tools: Any, choice: Any) -> ErrorResponse | None:
    if tools is None:
        tools = []
    if not isinstance(tools, list):
        return _bad("Invalid type for 'tools': expected an array.", param="tools")
    names = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            return _bad(f"Invalid value for 'tools[{i}].type'.", param=f"tools[{i}].type")
        name = tool.get("name")
        if name is None:  # the chat-completions shape nests it under `function`
            return _bad(
                f"Missing required parameter: 'tools[{i}].name'.",
                param=f"tools[{i}].name",
                code="missing_required_parameter",
            )
        if not _NAME.match(str(name)):
            return _bad(
                f"Invalid 'tools[{i}].name': string does not match pattern. Expected a string "
                "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                param=f"tools[{i}].name",
                code="invalid_value",
            )
        names.append(name)
        if tool.get("strict", True) is not False:  # strict unless said otherwise
            problem = _strict_problem(tool.get("parameters") or {"type": "object"})
            if problem:
                return _bad(
                    f"Invalid schema for function '{name}': {problem}",
                    param=f"tools[{i}].parameters",
                    code="invalid_function_parameters",
                )
    if isinstance(choice, dict):
        if choice.get("type") != "function" or choice.get("name") not in names:
            return _bad(
                "Tool choice 'function' not found in 'tools' parameter.", param="tool_choice"
            )
    elif choice is not None and choice not in ("auto", "none", "required"):
        return _bad(f"Invalid value: '{choice}'.", param="tool_choice", code="invalid_value")
    return None


def _check_format(text: Any) -> ErrorResponse | None:
    if text is None:
        return None
    fmt = text.get("format") if isinstance(text, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    if "json_schema" in fmt:  # the chat-completions shape nests the schema
        return _bad(
            "Unknown parameter: 'text.format.json_schema'.", param="text.format.json_schema"
        )
    name = fmt.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        return _bad(
            "Missing required parameter: 'text.format.name'.",
            param="text.format.name",
            code="missing_required_parameter",
        )
    if not isinstance(fmt.get("schema"), dict):
        return _bad(
            "Missing required parameter: 'text.format.schema'.",
            param="text.format.schema",
            code="missing_required_parameter",
        )
    problem = _strict_problem(fmt["schema"]) if fmt.get("strict") else None
    if problem:
        return _bad(
            f"Invalid schema for response_format '{name}': {problem}",
            param="text.format.schema",
            code="invalid_json_schema",
        )
    return None


def _check_input(items: Any, *, store: bool) -> ErrorResponse | None:
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return _bad("Invalid type for 'input': expected a string or an array.", param="input")
    pending: list[str] = []
    for i, item in enumerate(items):
        problem = _check_item(item, i, items, store, pending)
        if problem is not None:
            return problem
    if pending:
        return _bad(f"No tool output found for function call {pending[0]}.", param="input")
    return None


def _check_item(
    item: Any, i: int, items: list[Any], store: bool, pending: list[str]
) -> ErrorResponse | None:
    if not isinstance(item, dict):
        return _bad(f"Invalid type for 'input[{i}]': expected an object.", param=f"input[{i}]")
    kind = item.get("type", "message")
    if kind not in _ITEM_TYPES:
        return _bad(
            f"Invalid value: '{kind}'. Supported values are: "
            + ", ".join(f"'{t}'" for t in _ITEM_TYPES)
            + ".",
            param=f"input[{i}].type",
            code="invalid_value",
        )
    if kind == "function_call_output":
        call_id = item.get("call_id")
        if call_id not in pending:
            return _bad(
                f"No tool call found for function call output with call_id {call_id}.",
                param="input",
            )
        pending.remove(call_id)
        return responses_output_problem(item.get("output"), i)
    if pending and kind != "function_call":
        return _bad(f"No tool output found for function call {pending[0]}.", param="input")
    if kind == "message":
        return _check_message(item, i)
    if kind == "function_call":
        return _check_call(item, i, pending)
    return _check_reasoning(item, i, items, store)


def _check_message(item: dict[str, Any], i: int) -> ErrorResponse | None:
    if item.get("role") not in ("user", "assistant", "system", "developer"):
        return _bad(
            f"Invalid value: '{item.get('role')}'. Supported values are: 'assistant', "
            "'system', 'developer', and 'user'.",
            param=f"input[{i}].role",
            code="invalid_value",
        )
    if not isinstance(item.get("content"), str | list):
        return _bad(
            f"Invalid type for 'input[{i}].content': expected one of a string or array.",
            param=f"input[{i}].content",
        )
    return responses_content_problem(str(item.get("role")), item["content"], i)


def _check_call(item: dict[str, Any], i: int, pending: list[str]) -> ErrorResponse | None:
    for key in ("call_id", "name"):
        if not isinstance(item.get(key), str) or not item[key]:
            return _bad(
                f"Missing required parameter: 'input[{i}].{key}'.",
                param=f"input[{i}].{key}",
                code="missing_required_parameter",
            )
    if not isinstance(item.get("arguments"), str):
        return _bad(
            f"Invalid type for 'input[{i}].arguments': expected a string.",
            param=f"input[{i}].arguments",
            code="invalid_type",
        )
    pending.append(item["call_id"])
    return None


def _check_reasoning(
    item: dict[str, Any], i: int, items: list[Any], store: bool
) -> ErrorResponse | None:
    item_id = item.get("id")
    if not isinstance(item_id, str) or not isinstance(item.get("summary"), list):
        return _bad(
            f"Missing required parameter: 'input[{i}].id'.",
            param=f"input[{i}]",
            code="missing_required_parameter",
        )
    content = item.get("encrypted_content")
    if content is None and not store:
        return ErrorResponse(
            404,
            message=f"Item with id '{item_id}' not found. Items are not persisted when `store` "
            "is set to false. Try again with `store` set to true, or remove this item from "
            "your input.",
            param="input",
        )
    if content is not None and content != sealed(item_id):
        return _bad(
            "The encrypted content for item " + item_id + " could not be verified.",
            param="input",
            code="invalid_encrypted_content",
        )
    following = items[i + 1] if i + 1 < len(items) else None
    if not (
        isinstance(following, dict)
        and (following.get("type") == "function_call" or following.get("role") == "assistant")
    ):
        return _bad(
            f"Item '{item_id}' of type 'reasoning' was provided without its required "
            "following item.",
            param="input",
        )
    return None
