"""Limits that hold across the package, so a value accepted in one place fits every other.

`MAX_DEPTH` bounds the nesting of values: the lenient parser refuses deeper
text, validation refuses deeper values, and the context codec refuses to
encode or decode them. orjson refuses to write more than 254 levels, and the
tagged form of a context wraps some values in an object of their own (a tuple,
an attrs class), so a value at the limit stays storable with room to spare.
"""

from __future__ import annotations

__all__ = ("MAX_DEPTH",)

MAX_DEPTH = 100
"""The deepest nesting of lists and mappings a value may have, anywhere in agentgraph."""
