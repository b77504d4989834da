"""The depth guard on JSON that orjson parsed: nothing deeper than `MAX_DEPTH` gets through.

orjson parses up to 1024 levels; agentgraph takes `MAX_DEPTH` (100), as the
lenient parser, validation and the context codec do. Tests that cost far less
than the parse let most answers through, cheapest first:

1. A text of at most `SHALLOW_LEN` characters cannot hold that many levels.
2. A dict level takes five characters and a list level two, so up to about
   500 characters the position of the first `[` usually shows it cannot
   either; under 8 KB, a count of `[`, or of all opening brackets.
3. orjson writes the value inside `_WRAPPER`, lists nested so that its own
   limit on writing leaves the value exactly `MAX_DEPTH` levels. Writing costs
   a fraction of parsing (a fifth to a third on answers of records) and
   reads the value, not the text, so strings and escapes need no care.

Only when orjson refuses (a value too deep, or one it cannot write) does a
scan of the text's brackets decide: the answer never rests on orjson's
limit beyond what `_wrapper` checked when the module loaded.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .._core._errors import OutputError
from .._util._limits import MAX_DEPTH

__all__ = ("SHALLOW_LEN", "shallow")

SHALLOW_LEN = 2 * MAX_DEPTH + 1
"""The longest text that cannot nest past `MAX_DEPTH`: each level takes an opener and a closer."""

# On a path of d nested containers each list takes two characters and each dict
# but the innermost five (`{"":` and `}`), so a text of n characters holding l
# `[` nests at most (n + 3 + 3 * l) / 5 levels. Each `[` has its `]` after it,
# so l is at most half the text from the first `[` on: one `find` clears most
# short answers, one count most of the rest.
_SHORT = 5 * MAX_DEPTH - 3

# Up to about this size an answer rarely holds enough brackets to need the write,
# and counting them costs less; past it the count is mostly wasted.
_COUNT_BELOW = 8192
_ORJSON_DEPTH = 254
"""The deepest nesting of lists and dicts `orjson.dumps` writes (it refuses one more)."""


def shallow(value: Any, text: str) -> Any:
    """`value` (parsed by orjson from `text`), or `OutputError` if it nests past `MAX_DEPTH`."""
    size = len(text)
    if size <= SHALLOW_LEN:
        return value
    if size <= _SHORT:  # no `[`, or all of them late, bounds the lists without a count
        first = text.find("[")
        if size + (0 if first < 0 else 3 * (size - first) // 2) <= _SHORT:
            return value
    if size < _COUNT_BELOW:
        lists = text.count("[")
        if size + 3 * lists <= _SHORT or lists + text.count("{") <= MAX_DEPTH:
            return value
    if _WRAPPER is not None and _writes(_WRAPPER, value):
        return value
    if _too_deep(text):
        raise OutputError(f"the JSON nests deeper than {MAX_DEPTH} levels", attempts=[text])
    return value


class _Hole:
    """Where `shallow` puts the value: orjson cannot write it, so it asks `default`."""


def _nest(levels: int, inner: Any) -> Any:
    for _ in range(levels):
        inner = [inner]
    return inner


def _wrapper() -> list[Any] | None:
    """Lists around a hole, so deep that orjson writes a value in the hole only when
    it nests at most `MAX_DEPTH` levels; None if this orjson's limit is another."""
    wrapper = _nest(_ORJSON_DEPTH - MAX_DEPTH, _Hole())
    at_limit, past_it = _nest(MAX_DEPTH - 1, {}), _nest(MAX_DEPTH, {})
    return wrapper if _writes(wrapper, at_limit) and not _writes(wrapper, past_it) else None


def _writes(wrapper: list[Any], value: Any) -> bool:
    try:
        orjson.dumps(wrapper, default=lambda _: value)
    except orjson.JSONEncodeError:
        return False
    return True


_WRAPPER = _wrapper()

_ESCAPE = re.compile(rb"\\.", re.S)
_NOT_BRACKET_OR_QUOTE = bytes(c for c in range(256) if c not in b'[]{}"')
_INNERMOST = re.compile(rb"\[\]|\{\}")


def _too_deep(text: str) -> bool:
    """True when valid JSON `text` nests deeper than `MAX_DEPTH` containers.

    On the UTF-8 bytes (where no multi-byte character holds an ASCII byte):
    escapes go first, so an escaped quote cannot end a string; then all but
    brackets and quotes; then the strings; then each pass removes the
    innermost pairs, so a value `MAX_DEPTH` deep is gone after that many.
    """
    data = text.encode()
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    kept = data.translate(None, _NOT_BRACKET_OR_QUOTE).replace(b'""', b"")
    if b'"' in kept:  # a string that holds brackets
        kept = b"".join(kept.split(b'"')[::2])
    for _ in range(MAX_DEPTH):
        kept = _INNERMOST.sub(b"", kept)
        if not kept:
            return False
    return True
