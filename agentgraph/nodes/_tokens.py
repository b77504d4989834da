"""Token counting for context budgets: characters/4 by default, tiktoken when installed."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from .._core._context import AgentContext
from .._util._extras import pip_install
from ..llm._messages import Message

__all__ = (
    "MESSAGE_OVERHEAD",
    "TokenCounter",
    "clip_to_tokens",
    "count_context_tokens",
    "count_message_tokens",
    "estimate_tokens",
    "message_text",
    "tiktoken_counter",
)

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text: `estimate_tokens`, `tiktoken_counter(...)`, or your own."""

MESSAGE_OVERHEAD = 4
"""Tokens counted per message for its role and framing, on top of its text."""


def estimate_tokens(text: str) -> int:
    """About one token per four characters, rounded up: no dependency, no download."""
    return (len(text) + 3) // 4


def tiktoken_counter(encoding: Any = "cl100k_base") -> TokenCounter:
    """A counter on a tiktoken encoding (the extra: `pip install 'agentgraph-engine[tokens]'`).

    Args:
        encoding: an encoding name, loaded now, or a `tiktoken.Encoding`.
            tiktoken downloads a named encoding on first use and caches it; on
            a machine without network, point `TIKTOKEN_CACHE_DIR` at a folder
            that already holds it, or pass an `Encoding` built locally.

    Raises:
        ImportError: tiktoken is not installed.
        ValueError: tiktoken knows no encoding of that name.
        OSError: the encoding could not be loaded (no network and no cache).
    """
    try:
        tiktoken = importlib.import_module("tiktoken")
    except ImportError as exc:
        raise ImportError(f"tiktoken_counter needs tiktoken: {pip_install('tokens')}") from exc
    if isinstance(encoding, str):
        try:
            enc = tiktoken.get_encoding(encoding)
        except ValueError as exc:
            raise ValueError(f"tiktoken has no encoding named {encoding!r}: {exc}") from exc
        except Exception as exc:
            raise OSError(
                f"tiktoken could not load the encoding {encoding!r} ({type(exc).__name__}: "
                f"{exc}); it downloads encodings on first use, so set TIKTOKEN_CACHE_DIR to a "
                "folder that holds it, or pass a tiktoken.Encoding"
            ) from exc
    elif isinstance(encoding, tiktoken.Encoding):
        enc = encoding
    else:
        raise TypeError(f"encoding is a name or a tiktoken.Encoding, not {type(encoding).__name__}")

    def count(text: str) -> int:
        # Special-token text in a conversation is ordinary text to count, not an error.
        return len(enc.encode(text, disallowed_special=()))

    count.__name__ = f"tiktoken_{enc.name}"
    return count


def message_text(message: Message) -> str:
    """The text of `message` a model reads: content, reasoning, tool names and arguments."""
    parts = [message.content]
    if message.reasoning:
        parts.append(message.reasoning)
    for call in message.tool_calls:
        parts.append(call.name)
        parts.append(orjson.dumps(dict(call.arguments), default=str).decode())
    return "\n".join(part for part in parts if part)


def count_message_tokens(messages: Iterable[Message], count: TokenCounter = estimate_tokens) -> int:
    """The estimated tokens of `messages`, `MESSAGE_OVERHEAD` included for each."""
    return sum(count(message_text(m)) + MESSAGE_OVERHEAD for m in messages)


def count_context_tokens(ctx: AgentContext[Any], count: TokenCounter = estimate_tokens) -> int:
    """The estimated tokens of the system prompt plus the history of `ctx`."""
    total = count_message_tokens(ctx.history, count)
    if ctx.system_prompt:
        total += count(ctx.system_prompt) + MESSAGE_OVERHEAD
    return total


def clip_to_tokens(text: str, budget: int, count: TokenCounter = estimate_tokens) -> str:
    """The longest prefix of `text` within `budget` tokens, ending on a word when it can."""
    if budget <= 0:
        return ""
    if count(text) <= budget:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits: counters grow with the prefix
        middle = (low + high + 1) // 2
        if count(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return clip_at_word(text, low)


def clip_at_word(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at the last space when that keeps most of it."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip()
