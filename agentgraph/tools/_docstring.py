"""Read a tool's description and parameter descriptions from a Google-style docstring."""

from __future__ import annotations

import inspect
import re

__all__ = ("parse_docstring",)

_SECTION = re.compile(r"([A-Z][A-Za-z ]*):\s*")
_ARGS_SECTIONS = frozenset({"Args", "Arguments", "Parameters", "Params", "Keyword Args"})
_ENTRY = re.compile(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and a `{parameter: description}` map.

    The description is the text before the first section header (`Args:`,
    `Returns:`, ...); parameter descriptions come from the `Args:` section, with
    continuation lines joined.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    entry_indent: int | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        header = _SECTION.fullmatch(line)
        if header is not None:
            section, current, entry_indent = header.group(1), None, None
            continue
        if section is None:
            description.append(line)
            continue
        if section not in _ARGS_SECTIONS or not stripped:
            continue
        if entry_indent is None:
            entry_indent = indent
        entry = _ENTRY.fullmatch(stripped) if indent <= entry_indent else None
        if entry is not None:
            current = entry.group(1)
            params[current] = entry.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return "\n".join(description).strip(), params
