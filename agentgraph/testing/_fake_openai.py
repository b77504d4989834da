"""The OpenAI Chat Completions and Embeddings wire format, as the fake server speaks it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from ..llm._model import ChatRequest, ChatResponse
from ..llm._replies import approx_tokens, float32_base64, ids, split_text
from ._fake_common import Dialect, unix_now, valid_dimensions
from ._fake_decode import decode_openai
from ._fake_media import openai_content_problem
from ._faults import ErrorResponse, StreamError

__all__ = ("OpenAIDialect",)

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")
_ROLES = ("system", "developer", "user", "assistant", "tool")
_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    409: ("invalid_request_error", None),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
    503: ("service_unavailable_error", "server_is_overloaded"),
}
_MESSAGES = {
    400: "Invalid request.",
    401: "Incorrect API key provided.",
    403: "Country, region, or territory not supported.",
    404: "The model does not exist or you do not have access to it.",
    429: "Rate limit reached for requests. Please try again in 1s.",
    500: "The server had an error while processing your request. Sorry about that!",
    503: "The engine is currently overloaded, please try again later.",
}
_QUOTA = "You exceeded your current quota, please check your plan and billing details."


def _bad(message: str, *, param: str | None = None, code: str | None = None) -> ErrorResponse:
    return ErrorResponse(400, message=message, code=code, param=param)


class OpenAIDialect(Dialect):
    """OpenAI `/v1/chat/completions` and `/v1/embeddings`."""

    name = "openai"
    call_prefix = "call_fake"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._chat_id = ids("chatcmpl-fake")
        self._request_id = ids("req_fake")

    def response_headers(self) -> dict[str, str]:
        return {"x-request-id": self._request_id()}

    def auth_problem(self, headers: Mapping[str, str]) -> ErrorResponse | None:
        scheme, _, key = headers.get("authorization", "").partition(" ")
        if scheme != "Bearer" or not key.strip():
            return ErrorResponse(
                401,
                message="You didn't provide an API key. Send it as 'Authorization: Bearer <key>'.",
            )
        if self.options.api_key is not None and key != self.options.api_key:
            return ErrorResponse(401, code="invalid_api_key")
        return None

    def error_body(self, error: ErrorResponse, headers: Mapping[str, str]) -> dict[str, Any]:
        kind, code = _TYPES.get(error.status, ("server_error", None))
        message = error.message or _MESSAGES.get(error.status, f"Error {error.status}.")
        if error.code == "insufficient_quota":
            kind, message = "insufficient_quota", error.message or _QUOTA
        # A default code belongs to the default message only.
        code = error.code if error.code is not None or error.message else code
        return {
            "error": {
                "message": message,
                "type": error.error_type or kind,
                "param": error.param,
                "code": code,
            }
        }

    def invalid_json(self) -> ErrorResponse:
        return _bad(
            "We could not parse the JSON body of your request. The body must be valid JSON."
        )

    def validate(self, body: Mapping[str, Any]) -> ErrorResponse | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return _bad("You must provide a model parameter.", param="model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _bad("Invalid 'messages': expected a non-empty array.", param="messages")
        if not isinstance(body.get("stream_options", {}), dict):
            return _bad(
                "Invalid type for 'stream_options': expected an object.", param="stream_options"
            )
        if "stream_options" in body and body.get("stream") is not True:
            return _bad(
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                param="stream_options",
            )
        if "max_tokens" in body and _REASONING_MODEL.match(body["model"]):
            return _bad(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                param="max_tokens",
                code="unsupported_parameter",
            )
        return _check_tools(body.get("tools")) or _check_messages(messages)

    def decode(self, body: Mapping[str, Any]) -> ChatRequest:
        return decode_openai(body)

    def render(self, response: ChatResponse, body: Mapping[str, Any]) -> dict[str, Any]:
        source, quirks = response.message, self.options.openai_quirks
        message: dict[str, Any] = {
            "role": "assistant",
            "content": source.content or (None if source.tool_calls else ""),
            "refusal": None,
        }
        if source.reasoning and quirks.reasoning_field:
            message[quirks.reasoning_field] = source.reasoning
        if source.tool_calls:
            message["tool_calls"] = quirks.tool_calls(source.tool_calls)
        choice = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": quirks.finish(response.finish_reason),
        }
        return {
            **self._envelope(response, body, "chat.completion"),
            "choices": [choice],
            "usage": _usage(response),
        }

    def render_stream(self, response: ChatResponse, body: Mapping[str, Any]) -> list[bytes]:
        message, quirks = response.message, self.options.openai_quirks
        size = self.options.chunk_size
        deltas: list[dict[str, Any]] = []
        if message.reasoning and quirks.reasoning_field:
            field = quirks.reasoning_field
            deltas.extend({field: piece} for piece in split_text(message.reasoning, size))
        if message.content or not message.tool_calls:
            deltas.append({"content": ""})
            deltas.extend({"content": piece} for piece in split_text(message.content, size))
        deltas.extend(quirks.tool_call_deltas(message.tool_calls, size))
        # The opening chunk names the role; a tool-only answer opens with null content.
        deltas[0] = {"role": "assistant", "content": None, **deltas[0]}
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        envelope = self._envelope(response, body, "chat.completion.chunk")
        extra = {"usage": None} if include_usage else {}
        chunks = [
            {
                **envelope,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}],
                **extra,
            }
            for delta in deltas
        ]
        chunks.append(
            {
                **envelope,
                "choices": [
                    {
                        "index": 0,
                        "delta": {},
                        "logprobs": None,
                        "finish_reason": quirks.finish(response.finish_reason),
                    }
                ],
                **extra,
            }
        )
        if include_usage:
            chunks.append({**envelope, "choices": [], "usage": _usage(response)})
        return [b"data: " + orjson.dumps(chunk) + b"\n\n" for chunk in chunks] + [
            b"data: [DONE]\n\n"
        ]

    def stream_error(self, fault: StreamError) -> bytes:
        error = {
            "message": fault.message,
            "type": fault.error_type or "server_error",
            "param": None,
            "code": None,
        }
        return b"data: " + orjson.dumps({"error": error}) + b"\n\n"

    def embed(self, body: Mapping[str, Any]) -> ErrorResponse | dict[str, Any]:
        """Validate an embeddings request and build its response."""
        if not isinstance(body.get("model"), str):
            return _bad("You must provide a model parameter.", param="model")
        inputs = body.get("input")
        if isinstance(inputs, str | int) or (
            isinstance(inputs, list) and inputs and all(isinstance(x, int) for x in inputs)
        ):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs or any(x in ("", []) for x in inputs):
            return _bad("'$.input' is invalid. Please check the API reference.", param="input")
        encoding = body.get("encoding_format", "float")
        if encoding not in ("float", "base64"):
            return _bad(
                f"Invalid value: '{encoding}'. Supported values are: 'float' and 'base64'.",
                param="encoding_format",
            )
        dim = body.get("dimensions")
        if not valid_dimensions(dim):
            return _bad("'dimensions' must be a positive integer.", param="dimensions")
        texts = [x if isinstance(x, str) else orjson.dumps(x).decode() for x in inputs]
        if len(texts) > 2048:
            return _bad("'$.input' is invalid: at most 2048 inputs per request.", param="input")
        # Token counts as the service limits them; a word is about 1.3 tokens in English.
        counts = [max(1, round(len(t.split()) * 1.3)) for t in texts]
        longest = max(counts)
        if longest > 8192:
            return _bad(
                f"This model's maximum context length is 8192 tokens, however you requested "
                f"{longest} tokens in the input. Please reduce your input.",
                param="input",
            )
        if sum(counts) > 300_000:
            return _bad(
                f"Requested {sum(counts)} tokens, max 300000 tokens per request", param="input"
            )
        data = []
        for index, text in enumerate(texts):
            vector = self.options.embed(text, dim)
            encoded: Any = float32_base64(vector) if encoding == "base64" else vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(approx_tokens(len(t)) for t in texts)
        return {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _envelope(
        self, response: ChatResponse, body: Mapping[str, Any], kind: str
    ) -> dict[str, Any]:
        return {
            "id": response.id or self._chat_id(),
            "object": kind,
            "created": unix_now(),
            "model": response.model or body.get("model", ""),
            "system_fingerprint": "fp_fake",
        }


def _usage(response: ChatResponse) -> dict[str, Any]:
    usage = response.usage
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def _check_tools(tools: Any) -> ErrorResponse | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        return _bad("Invalid 'tools': expected an array.", param="tools")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or tool.get("type") != "function":
            return _bad(f"Invalid 'tools[{i}]': expected a function tool.", param=f"tools[{i}]")
        if not _NAME.match(str(function.get("name", ""))):
            return _bad(
                f"Invalid 'tools[{i}].function.name': string does not match pattern. "
                "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                param=f"tools[{i}].function.name",
                code="invalid_value",
            )
    return None


def _check_messages(messages: list[Any]) -> ErrorResponse | None:
    pending: list[str] = []
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in _ROLES:
            return _bad(
                f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', "
                "'user', 'tool', and 'developer'.",
                param=f"messages[{i}].role",
                code="invalid_value",
            )
        problem = openai_content_problem(role, message.get("content"), i)
        if problem is not None:
            return problem
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return _bad(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceding message with 'tool_calls'.",
                    param=f"messages.[{i}].role",
                )
            pending.remove(call_id)
            continue
        if pending:
            return _unanswered(pending, i)
        if role == "assistant":
            problem = _check_assistant(message, i)
            if problem is not None:
                return problem
            pending = [call["id"] for call in message.get("tool_calls") or ()]
    return _unanswered(pending, len(messages)) if pending else None


def _unanswered(pending: list[str], index: int) -> ErrorResponse:
    return _bad(
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(pending),
        param=f"messages.[{index}].role",
    )


def _check_assistant(message: Mapping[str, Any], i: int) -> ErrorResponse | None:
    calls = message.get("tool_calls")
    if message.get("content") is None and not calls:
        return _bad(
            f"Invalid value for 'messages[{i}].content': expected a string, got null.",
            param=f"messages.[{i}].content",
        )
    for j, call in enumerate(calls or ()):
        where = f"messages[{i}].tool_calls[{j}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not call.get("id") or call.get("type") != "function":
            return _bad(
                f"Invalid '{where}': expected an id, type 'function' and a function.", param=where
            )
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            kind = "an object" if isinstance(arguments, dict) else type(arguments).__name__
            return _bad(
                f"Invalid type for '{where}.function.arguments': expected a string, "
                f"but got {kind} instead.",
                param=f"{where}.function.arguments",
                code="invalid_type",
            )
    return None
