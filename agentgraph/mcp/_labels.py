"""What errors call a server: short, free of credentials, and telling servers apart."""

from __future__ import annotations

import os
from typing import Any

import mcp
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer

__all__ = ("label_of",)


def label_of(server: str | mcp.StdioServerParameters | Server[Any] | MCPServer) -> str:
    """How errors name a server: its URL without credentials, its command, or its name."""
    if isinstance(server, str):
        return server.split("?", 1)[0].rsplit("@", 1)[-1]
    if isinstance(server, mcp.StdioServerParameters):
        words = [os.path.basename(server.command), *(_short_arg(a) for a in server.args)]
        return _clip_middle(" ".join(words), _LABEL_CHARS)
    return server.name


_LABEL_CHARS = 80
_ARG_CHARS = 40


def _short_arg(arg: str) -> str:
    """A long path argument as the tail of whole parts that fits: the script's name shows.

    The script's name is what tells servers apart; where the checkout lives
    must not decide whether it shows.
    """
    parts = arg.rstrip("/").split("/")
    if len(arg) <= _ARG_CHARS or len(parts) < 2:
        return arg
    tail = parts[-1]
    for part in reversed(parts[:-1]):
        if len(part) + len(tail) + 3 > _ARG_CHARS:
            break
        tail = f"{part}/{tail}"
    return _clip_middle("…/" + tail, _ARG_CHARS)


def _clip_middle(text: str, limit: int) -> str:
    """`text` within `limit` characters, its middle replaced by "…": both ends stay readable."""
    if len(text) <= limit:
        return text
    tail = (limit - 1) * 2 // 3
    return text[: limit - 1 - tail] + "…" + text[-tail:]
