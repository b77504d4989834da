"""Anthropic's prompt cache as the fake server keeps it: breakpoints answered with
the cache reads and writes the service would report."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ("PromptCache",)

_LOOKBACK = 20  # blocks before a breakpoint the service checks for an earlier cached prefix


def _prompt_blocks(body: Mapping[str, Any]) -> list[tuple[bytes, bool]]:
    """The request as the cache sees it: each tool, system block and content block in order,
    with whether a breakpoint ends there."""
    blocks: list[Any] = list(body.get("tools") or ())
    system = body.get("system")
    if isinstance(system, str) and system:
        blocks.append({"type": "text", "text": system})
    elif isinstance(system, list):
        blocks.extend(system)
    for message in body.get("messages") or ():
        content = message.get("content")
        items = content if isinstance(content, list) else [{"type": "text", "text": content}]
        blocks.extend({"role": message.get("role"), **item} for item in items)
    out: list[tuple[bytes, bool]] = []
    for block in blocks:
        marked = isinstance(block, dict) and block.get("cache_control") is not None
        plain = {k: v for k, v in block.items() if k != "cache_control"} if marked else block
        out.append((orjson.dumps(plain, option=orjson.OPT_SORT_KEYS), marked))
    if out and body.get("cache_control") is not None:  # automatic: the last block
        out[-1] = (out[-1][0], True)
    return out


class PromptCache:
    """Anthropic's prompt cache, as the fake server keeps it.

    Every prefix ending at a breakpoint is written; a later request reads the
    longest written prefix found at one of its breakpoints or within the 20
    blocks before one. Tokens are estimated as 4 characters each. Prompts of
    any length are cached (the service has a minimum of about 1,024 tokens).
    """

    def __init__(self) -> None:
        self._written: set[bytes] = set()
        self._lock = threading.Lock()

    def forget(self) -> None:
        with self._lock:
            self._written.clear()

    def usage(self, body: Mapping[str, Any]) -> tuple[int, int, int] | None:
        """`(uncached, written, read)` input tokens, or None for a request without breakpoints."""
        blocks = _prompt_blocks(body)
        marks = [i for i, (_, marked) in enumerate(blocks) if marked]
        if not marks:
            return None
        digests, sizes = [], []
        running = hashlib.sha256()
        for data, _ in blocks:
            running.update(data)
            digests.append(running.copy().digest())
            sizes.append(max(1, len(data) // 4))
        with self._lock:
            candidates = {p for b in marks for p in range(max(0, b - _LOOKBACK + 1), b + 1)}
            hits = [p for p in candidates if digests[p] in self._written]
            read_to = max(hits) + 1 if hits else 0
            self._written.update(digests[b] for b in marks)
        write_to = max(marks) + 1
        read = sum(sizes[:read_to])
        written = sum(sizes[read_to:write_to])
        return sum(sizes[write_to:]), written, read
