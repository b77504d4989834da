"""Lenient JSON parsing for model answers that are almost JSON.

`loads_lenient` parses with orjson first; only when that fails does it run a
tolerant single-pass parser that accepts, anywhere in the value: trailing
commas, single-quoted strings, unquoted (identifier) object keys, the Python
literals `True`, `False`, `None` and JavaScript's `undefined`, raw newlines and
control characters inside strings, and `//` and `/* */` comments.

Where the value sits in the text is decided in this order:

1. The whole text is one value. A scalar must fill the text (up to
   whitespace and comments); an object or array may be followed by prose.
2. The body of a Markdown code fence (```` ```json ```` or a bare ```` ``` ````)
   is one value; fences are tried in order and prose around them is ignored.
3. Otherwise the first complete object or array wins: each `{` or `[` is tried
   left to right, and the first one that parses (after the repairs above) is
   returned, whatever follows it. So `use {x} here: {"a": 1}` gives
   `{"a": 1}`, because `{x}` is not an object, and `{"a": 1}{"b": 2}` gives
   `{"a": 1}`. Brackets that a failed attempt had already parsed as structure
   are not tried again, so a value truncated by the end of the text is an
   error rather than one of its inner values.

With `partial=True` a value cut off by the end of the text (a stream) is closed:
open strings, arrays and objects are closed; a dangling key, an unfinished
literal or a lone minus sign is dropped.

Numbers follow orjson, so both paths agree: integers within the 64-bit range
stay `int`, larger ones become `float`. Nesting deeper than `MAX_DEPTH` (100) levels is an
error, as it is for orjson.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from .._errors import OutputError
from .._limits import MAX_DEPTH

__all__ = ("loads_lenient",)

_MAX_DEPTH = MAX_DEPTH  # the one limit the codec and validation share, so any value fits both
# Characters the bracket-by-bracket search may scan per character of text: skipping
# brackets already parsed keeps real input far below; this bounds any input.
_SEARCH_BUDGET = 16
_SNIPPET = 24
_WS = re.compile(r"[ \t\n\r\ufeff]*")
_DQ_RUN = re.compile(r'[^"\\]*')
_SQ_RUN = re.compile(r"[^'\\]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_TAIL = re.compile(r"[0-9eE.+-]*\Z")
_WORD = re.compile(r"(?:[^\W\d]|\$)(?:\w|\$)*")
_OPENER = re.compile(r"[\[{]")
_FENCE_OPEN = re.compile(r"```[^\n`]*\n")
_FENCE_CLOSE = re.compile(r"\n[ \t]*```")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
# What a `\u` escape (or the low half of a surrogate pair) cut off by the end looks like.
_CUT_HEX = re.compile(r"[0-9a-fA-F]{0,3}\Z")
_CUT_LOW = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")

# JSON's literals, JavaScript's `undefined` and Python's spellings.
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "undefined": None}
_LITERALS |= {"True": True, "False": False, "None": None}
_ESCAPES = dict(zip("\"'\\/bfnrt", "\"'\\/\b\f\n\r\t", strict=True))
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what orjson keeps as int

# Parser states: what the next token may be.
_VALUE, _ITEM, _KEY, _COLON, _AFTER, _DONE = range(6)
_MISSING: Any = object()


def loads_lenient(text: str, *, partial: bool = False) -> Any:
    """Parse JSON from a model answer, repairing the usual mistakes.

    Args:
        text: The answer. Valid JSON is parsed by orjson and nothing else runs.
        partial: Treat the end of the text as a cut-off stream and close the value.

    Returns:
        The parsed value.

    Raises:
        OutputError: No value could be recovered; `.position` is the offset
            where the most promising attempt stopped.
    """
    try:
        return shallow(orjson.loads(text), text)
    except orjson.JSONDecodeError:
        pass
    return _Parser(text, partial).repair()


def shallow(value: Any, text: str) -> Any:
    """`value` (parsed from `text`), or `OutputError` when it nests deeper than `MAX_DEPTH`.

    Counting brackets first keeps this free for ordinary answers.
    """
    if text.count("[") + text.count("{") <= _MAX_DEPTH:
        return value
    level = [(value, 1)]
    while level:
        item, depth = level.pop()
        if depth > _MAX_DEPTH:
            raise OutputError(f"the JSON nests deeper than {_MAX_DEPTH} levels", attempts=[text])
        if isinstance(item, dict):
            level.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            level.extend((v, depth + 1) for v in item if isinstance(v, dict | list))
    return value


class _Fail(Exception):
    """An attempt stopped at `pos`; `fatal` ends the whole search."""

    def __init__(self, pos: int, reason: str, *, fatal: bool = False) -> None:
        super().__init__(reason)
        self.pos = pos
        self.reason = reason
        self.fatal = fatal


class _Obj:
    """An object under construction and the key waiting for its value."""

    __slots__ = ("data", "key")

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.key = ""


class _Parser:
    """A tolerant parser with an explicit stack, so nesting never recurses."""

    def __init__(self, text: str, partial: bool) -> None:
        self.text = text
        self.partial = partial
        self.end = len(text)
        self.stack: list[list[Any] | _Obj] = []
        self.opened: list[int] = []
        self.root: Any = None
        self.best: _Fail | None = None
        self.last = 0

    def repair(self) -> Any:
        value = self.attempt(self.whole, 0, len(self.text))
        if value is not _MISSING:
            return value
        # The search would retry these brackets from the same offsets and fail the same way.
        tried = set(self.opened)
        for start, stop in self.fences():
            value = self.attempt(self.whole, start, stop)
            if value is not _MISSING:
                return value
        value = self.search(tried)
        if value is not _MISSING:
            return value
        raise self.error(self.best or _Fail(0, "no JSON value found"))

    def fences(self) -> list[tuple[int, int]]:
        """The body of each Markdown code fence; an unclosed one runs to the end."""
        bodies: list[tuple[int, int]] = []
        pos = 0
        while (opening := _FENCE_OPEN.search(self.text, pos)) is not None:
            closing = _FENCE_CLOSE.search(self.text, opening.end() - 1)
            stop = closing.start() if closing else len(self.text)
            bodies.append((opening.end(), max(stop, opening.end())))
            if closing is None:
                break
            pos = closing.end()
        return bodies

    def attempt(self, parse: Callable[..., Any], *args: int) -> Any:
        """Run one parse; a failure is remembered (the furthest one is reported)."""
        self.opened = []
        try:
            return parse(*args)
        except _Fail as exc:
            if exc.fatal:
                raise self.error(exc) from exc
            self.last = exc.pos
            if self.best is None or exc.pos > self.best.pos:
                self.best = exc
            return _MISSING

    def whole(self, start: int, stop: int) -> Any:
        """The value that fills `text[start:stop]`; an object or array may have prose after it."""
        if stop - start < len(self.text):
            try:
                return orjson.loads(self.text[start:stop])
            except orjson.JSONDecodeError:
                pass
        self.end = stop
        value, pos = self.value_at(self.skip(start))
        pos = self.skip(pos)
        if pos < stop and not isinstance(value, list | dict):
            raise _Fail(pos, "unexpected text after the value")
        return value

    def search(self, tried: set[int]) -> Any:
        """The first object or array, bracket by bracket, that parses."""
        self.end = len(self.text)
        budget = _SEARCH_BUDGET * (self.end + 256)
        pos = 0
        while (found := _OPENER.search(self.text, pos)) is not None:
            pos = found.start()
            if pos not in tried:
                value = self.attempt(lambda start: self.value_at(start)[0], pos)
                if value is not _MISSING:
                    return value
                tried.update(self.opened)
                budget -= self.last - pos
                if budget < 0:
                    raise self.error(_Fail(pos, "search limit reached"))
            pos += 1
        return _MISSING

    def error(self, fail: _Fail) -> OutputError:
        pos = fail.pos
        before = self.text[max(0, pos - _SNIPPET) : pos]
        after = self.text[pos : pos + _SNIPPET]
        return OutputError(
            f"cannot parse JSON: {fail.reason} at offset {pos}, near {before + '<HERE>' + after!r}",
            position=pos,
            details={"reason": fail.reason},
        )

    def value_at(self, pos: int) -> tuple[Any, int]:
        """Parse one value starting at `pos`; return it and the offset after it."""
        self.stack = []
        state = _VALUE
        while state != _DONE:
            pos = self.skip(pos)
            if pos >= self.end:
                return self.at_end(), pos
            if state == _AFTER:
                state, pos = self.after(pos)
            elif state == _KEY:
                state, pos = self.key(pos)
            elif state == _COLON:
                if self.text[pos] != ":":
                    raise _Fail(pos, "expected ':' after the key")
                state, pos = _VALUE, pos + 1
            else:
                state, pos = self.value(pos, state)
        return self.root, pos

    def skip(self, pos: int) -> int:
        """Skip whitespace and comments."""
        text = self.text
        while True:
            pos = _match_end(_WS, text, pos, self.end)
            if text.startswith("//", pos, self.end):
                newline = text.find("\n", pos, self.end)
                pos = self.end if newline < 0 else newline + 1
            elif text.startswith("/*", pos, self.end):
                close = text.find("*/", pos + 2, self.end)
                if close < 0 and not self.partial:
                    raise _Fail(pos, "unclosed comment")
                pos = self.end if close < 0 else close + 2
            elif self.partial and pos == self.end - 1 and text[pos] == "/":
                return self.end
            else:
                return pos

    def value(self, pos: int, state: int) -> tuple[int, int]:
        char = self.text[pos]
        if char in "{[":
            if len(self.stack) >= _MAX_DEPTH:
                raise _Fail(pos, f"nesting deeper than {_MAX_DEPTH} levels", fatal=True)
            self.opened.append(pos)
            self.stack.append(_Obj() if char == "{" else [])
            return (_KEY if char == "{" else _ITEM), pos + 1
        if char == "]" and state == _ITEM:
            return self.close(pos)
        if char in "\"'":
            value, pos, _ = self.string(pos)
        elif char == "-" or "0" <= char <= "9":
            value, pos = self.number(pos)
        else:
            value, pos = self.word(pos)
        if value is _MISSING:
            return state, pos
        return self.put(value, pos)

    def key(self, pos: int) -> tuple[int, int]:
        char = self.text[pos]
        if char == "}":
            return self.close(pos)
        if char in "\"'":
            key, pos, closed = self.string(pos)
            if not closed:
                return _COLON, pos
        else:
            match = _WORD.match(self.text, pos, self.end)
            if match is None:
                raise _Fail(pos, "expected a key or '}'")
            key, pos = match.group(), match.end()
        top = self.stack[-1]
        if isinstance(top, _Obj):
            top.key = key
        return _COLON, pos

    def after(self, pos: int) -> tuple[int, int]:
        char = self.text[pos]
        is_list = isinstance(self.stack[-1], list)
        if char == ",":
            return (_ITEM if is_list else _KEY), pos + 1
        closer = "]" if is_list else "}"
        if char == closer:
            return self.close(pos)
        raise _Fail(pos, f"expected ',' or {closer!r}")

    def close(self, pos: int) -> tuple[int, int]:
        return self.put(self.pop(), pos + 1)

    def pop(self) -> Any:
        top = self.stack.pop()
        return top.data if isinstance(top, _Obj) else top

    def put(self, value: Any, pos: int) -> tuple[int, int]:
        if not self.stack:
            self.root = value
            return _DONE, pos
        top = self.stack[-1]
        if isinstance(top, _Obj):
            top.data[top.key] = value
        else:
            top.append(value)
        return _AFTER, pos

    def at_end(self) -> Any:
        """Close every open container at the end of a cut-off text."""
        if not self.partial:
            raise _Fail(self.end, "unexpected end of text")
        if not self.stack:
            raise _Fail(self.end, "no complete value before the end of the text")
        while len(self.stack) > 1:
            self.put(self.pop(), self.end)
        return self.pop()

    def string(self, pos: int) -> tuple[str, int, bool]:
        """A quoted string: its value, the offset after it, and whether it closed."""
        text, quote = self.text, self.text[pos]
        run = _DQ_RUN if quote == '"' else _SQ_RUN
        parts: list[str] = []
        pos += 1
        while True:
            stop = _match_end(run, text, pos, self.end)
            parts.append(text[pos:stop])
            if stop >= self.end:
                if not self.partial:
                    raise _Fail(self.end, "unterminated string")
                return "".join(parts), self.end, False
            if text[stop] == quote:
                return "".join(parts), stop + 1, True
            piece, pos = self.escape(stop)
            parts.append(piece)

    def escape(self, pos: int) -> tuple[str, int]:
        """The backslash escape at `pos`; unknown escapes are kept as written."""
        if pos + 1 >= self.end:
            return "", self.end
        char = self.text[pos + 1]
        if char != "u":
            return _ESCAPES.get(char, "\\" + char), pos + 2
        code = self.hex4(pos + 2)
        if code is None:
            cut = _CUT_HEX.match(self.text, pos + 2, self.end)
            return ("", self.end) if cut else ("\\u", pos + 2)
        if 0xD800 <= code < 0xDC00:
            low = self.hex4(pos + 8) if self.text.startswith("\\u", pos + 6, self.end) else None
            if low is not None and 0xDC00 <= low < 0xE000:
                return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), pos + 12
            if _CUT_LOW.match(self.text, pos + 6, self.end):
                # Do not leave half a surrogate pair in a cut-off string.
                return "", self.end
        return chr(code), pos + 6

    def hex4(self, pos: int) -> int | None:
        return int(m.group(), 16) if (m := _HEX4.match(self.text, pos, self.end)) else None

    def number(self, pos: int) -> tuple[Any, int]:
        match = _NUMBER.match(self.text, pos, self.end)
        stop = match.end() if match else pos
        if self.partial and _NUMBER_TAIL.match(self.text, stop, self.end):
            # Cut off mid-number (`1.`, `1e+`, `-`): keep what forms a number so far.
            return (self._number(match.group()) if match else _MISSING), self.end
        if match is None:
            raise _Fail(pos, "invalid number")
        return self._number(match.group()), stop

    @staticmethod
    def _number(literal: str) -> Any:
        if "." in literal or "e" in literal or "E" in literal or len(literal) > 21:
            return float(literal)
        number = int(literal)
        return number if _INT_MIN <= number <= _INT_MAX else float(number)

    def word(self, pos: int) -> tuple[Any, int]:
        match = _WORD.match(self.text, pos, self.end)
        if match is None:
            raise _Fail(pos, f"unexpected {self.text[pos]!r}")
        word = match.group()
        if word in _LITERALS:
            return _LITERALS[word], match.end()
        cut = self.partial and match.end() == self.end
        if cut and any(literal.startswith(word) for literal in _LITERALS):
            return _MISSING, self.end
        raise _Fail(pos, f"unquoted word {word!r}")


def _match_end(pattern: re.Pattern[str], text: str, pos: int, end: int) -> int:
    """Where a pattern that may match nothing stops matching."""
    match = pattern.match(text, pos, end)
    return match.end() if match else pos
