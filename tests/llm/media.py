"""What the media tests share: a tiny PNG, and each provider served a plain answer over it."""

from __future__ import annotations

import base64
from typing import Any

from agentgraph.llm import AnthropicModel, GigaChatModel, OllamaModel

from .support import Server, Sleeps, json_response, retry

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cfc0f01f0005000201a5f5a1e20000000049454e44ae426082"
)
B64_PNG = base64.b64encode(PNG).decode()


def openai_completion() -> dict[str, Any]:
    """A chat completion answering "ok"."""
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
    }


def anthropic_served() -> tuple[Server, AnthropicModel]:
    """A Claude model whose server answers "ok"."""
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    server = Server(json_response(answer))
    model = AnthropicModel(
        "claude-sonnet-4-5", api_key="sk-ant-x", http_client=server.client(), retry=retry(Sleeps())
    )
    return server, model


def ollama_served(content: str) -> tuple[Server, OllamaModel]:
    """A llava model whose server answers `content`."""
    answer = {
        "model": "llava",
        "created_at": "2025-07-07T20:32:53Z",
        "message": {"role": "assistant", "content": content},
        "done": True,
        "done_reason": "stop",
    }
    server = Server(json_response(answer))
    return server, OllamaModel("llava", http_client=server.client(), retry=retry(Sleeps()))


def gigachat_unserved() -> tuple[Server, GigaChatModel]:
    """A GigaChat model on a server that answers nothing: a test expects no request."""
    server = Server()
    model = GigaChatModel(
        "GigaChat-Max",
        credentials="Y2xpZW50OnNlY3JldA==",
        base_url="https://giga.test/api/v1",
        auth_url="https://ngw.test/api/v2/oauth",
        http_client=server.client(),
    )
    return server, model
