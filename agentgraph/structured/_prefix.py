"""The value a growing JSON text stands for so far, without re-parsing it all in Python.

`PrefixParser.parse(text)` returns what `loads_lenient(text, partial=True)` returns,
for a text that only ever grows (a streamed answer). While the answer is strict
JSON (possibly after prose or an opening code fence), a small state machine
scans only the new characters and remembers where the last complete item of
each open container ends; the text up to there, plus the closing brackets (and a
quote for an open string value), goes to orjson. So each chunk costs one
orjson parse instead of a lenient parse of everything so far.

Anything the state machine does not follow exactly (single quotes, comments,
trailing commas, control characters, a fence that closed, a lone surrogate, a
bracket after the finished value) is left to `loads_lenient`, which therefore
decides every case the fast path could get wrong.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .._util._limits import MAX_DEPTH
from ._lenient import _FENCE_CLOSE, _FENCE_OPEN, _OPENER, loads_lenient, whole_fails
from ._syntax import CUT_HEX as _CUT_HEX
from ._syntax import CUT_LOW as _CUT_LOW
from ._syntax import HEX4 as _HEX4
from ._syntax import NUMBER as _NUMBER
from ._syntax import QUOTES, goes_on
from ._syntax import WS as _LEAD  # the lenient parser's whitespace, a BOM included

__all__ = ("PrefixParser",)

_WS = re.compile(r"[ \t\n\r]*")
_PLAIN = re.compile(r'[^"\\\x00-\x1f]*')
_DIGITS = re.compile(r"[0-9eE.+-]*")
_LETTERS = re.compile(r"[a-z]*")
_LITERALS = ("true", "false", "null")
_SIMPLE_ESCAPES = frozenset('"\\/bfnrt')

# What the scanner expects next.
_VALUE, _FIRST_VALUE, _FIRST_KEY, _KEY, _COLON, _AFTER = range(6)
_STRING, _KEY_STRING, _NUMBER_TOKEN, _WORD, _DONE, _BROKEN = range(6, 12)


def _end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where a pattern that may match nothing stops matching."""
    match = pattern.match(text, pos)
    return match.end() if match else pos


def _start(text: str) -> int | None:
    """Where the lenient parser would begin the value, when the fast path can follow it."""
    first = _end(_LEAD, text, 0)
    if first >= len(text):
        return None
    char = text[first]
    if char in "{[":
        return first
    if char in QUOTES:  # a quoted string could still turn out to be the whole answer
        return None
    start = _later_start(text, first)
    # The lenient parser reads the whole text first: a value found later counts only
    # when that first reading fails without ending the search (`NaN [1]` ends it).
    return start if start is None or whole_fails(text) else None


def _later_start(text: str, first: int) -> int | None:
    """Where the value starts when the text does not: in a code fence, or after prose."""
    fence = _FENCE_OPEN.search(text)
    if fence is not None:
        if _FENCE_CLOSE.search(text, fence.end() - 1):
            return None  # a closed fence: the lenient parser reads its body with orjson
        body = _end(_LEAD, text, fence.end())
        return body if body < len(text) and text[body] in "{[" else None
    if "```" in text:  # a fence may be opening: its body would come first
        return None
    opener = _OPENER.search(text, first)
    if opener is None:
        return None
    head = text[: opener.start()]
    return None if "//" in head or "/*" in head or "#" in head else opener.start()


class _Scanner:
    """A strict JSON state machine over `text[start:]`, resumable as the text grows."""

    __slots__ = ("closers", "cuts", "pos", "start", "state", "token")

    def __init__(self, start: int) -> None:
        self.start = start
        self.pos = start
        self.state = _VALUE
        self.closers: list[str] = []
        self.cuts: list[int] = []  # per open container: the end of its last complete item
        self.token = start

    def scan(self, text: str) -> None:
        end = len(text)
        while self.pos < end and self.state < _DONE:
            if self.state in (_STRING, _KEY_STRING):
                if not self._string(text):
                    return
            elif self.state == _NUMBER_TOKEN:
                self.pos = _end(_DIGITS, text, self.pos)
                if self.pos < end:
                    self._value_done(self.pos)
            elif self.state == _WORD:
                self.pos = _end(_LETTERS, text, self.pos)
                if self.pos < end:
                    word = text[self.token : self.pos]
                    if word in _LITERALS:
                        self._value_done(self.pos)
                    else:
                        self.state = _BROKEN
            else:
                self.pos = _end(_WS, text, self.pos)
                if self.pos < end:
                    self._token(text[self.pos])

    def _token(self, char: str) -> None:
        state = self.state
        if state in (_VALUE, _FIRST_VALUE):
            self._value_token(char)
        elif state in (_FIRST_KEY, _KEY):
            if char == '"':
                self._step(_KEY_STRING)
            elif char == "}" and state == _FIRST_KEY:
                self._close(self.pos)
            else:
                self.state = _BROKEN
        elif state == _COLON:
            self._step(_VALUE if char == ":" else _BROKEN)
        elif char == ",":  # after a value
            self._step(_KEY if self.closers[-1] == "}" else _VALUE)
        elif char == self.closers[-1]:
            self._close(self.pos)
        else:
            self.state = _BROKEN

    def _value_token(self, char: str) -> None:
        pos = self.pos
        if char in "{[":
            if len(self.closers) >= MAX_DEPTH:  # the lenient parser refuses it
                self.state = _BROKEN
                return
            self.closers.append("}" if char == "{" else "]")
            self.cuts.append(pos + 1)
            self._step(_FIRST_KEY if char == "{" else _FIRST_VALUE)
        elif char == "]" and self.state == _FIRST_VALUE:
            self._close(pos)
        elif not self.closers:  # the root must be a container
            self.state = _BROKEN
        elif char == '"':
            self._step(_STRING)
        elif char == "-" or "0" <= char <= "9":
            self.state, self.token = _NUMBER_TOKEN, pos
        elif char in "tfn":
            self.state, self.token = _WORD, pos
        else:
            self.state = _BROKEN

    def _step(self, state: int) -> None:
        """Take the one-character token at `pos` and move to `state`."""
        self.state = state
        self.pos += 1

    def _string(self, text: str) -> bool:
        """Advance through a string; False when it stops at an escape cut off by the end."""
        end = len(text)
        pos = _end(_PLAIN, text, self.pos)
        self.pos = pos
        if pos >= end:
            return True
        char = text[pos]
        if char == '"':
            self.pos = pos + 1
            if self.state == _KEY_STRING:
                self.state = _COLON
            else:
                self._value_done(pos + 1)
            return True
        if char != "\\":  # a raw control character: only the lenient parser takes it
            self.state = _BROKEN
            return True
        step = self._escape(text, pos)
        if step == 0:
            return False
        self.pos = pos + step
        return True

    def _escape(self, text: str, pos: int) -> int:
        """The length of the escape at `pos`; 0 when the end cuts it off; -1 for bad ones."""
        end = len(text)
        if pos + 1 >= end:
            return 0
        kind = text[pos + 1]
        if kind in _SIMPLE_ESCAPES:
            return 2
        if kind != "u":
            self.state = _BROKEN
            return 1
        digits = _HEX4.match(text, pos + 2)
        if digits is None:
            if _CUT_HEX.match(text, pos + 2):
                return 0
            self.state = _BROKEN
            return 1
        code = int(digits.group(), 16)
        if 0xD800 <= code < 0xDC00:
            if _CUT_LOW.match(text, pos + 6):
                return 0  # the low half of the pair has not arrived
            low = _HEX4.match(text, pos + 8) if text.startswith("\\u", pos + 6) else None
            if low is None or not 0xDC00 <= int(low.group(), 16) < 0xE000:
                self.state = _BROKEN  # a lone surrogate
                return 1
            return 12
        return 6

    def _close(self, pos: int) -> None:
        self.closers.pop()
        self.cuts.pop()
        self.pos = pos + 1
        self._value_done(pos + 1)

    def _value_done(self, end: int) -> None:
        if not self.closers:
            self.state, self.token = _DONE, end
            return
        self.cuts[-1] = end
        self.state = _AFTER

    def candidate(self, text: str) -> str | None:
        """The text so far, cut and closed the way the lenient parser closes it."""
        state = self.state
        if state == _DONE:
            return text[self.start : self.token]
        if state == _BROKEN:
            return None
        closing = "".join(reversed(self.closers))
        if state == _STRING:
            return f'{text[self.start : self.pos]}"{closing}'
        if state == _NUMBER_TOKEN:
            number = _NUMBER.match(text, self.token, self.pos)
            if number is not None:
                return text[self.start : number.end()] + closing
        elif state == _WORD:
            word = text[self.token : self.pos]
            if word in _LITERALS:
                return text[self.start : self.pos] + closing
            if not any(literal.startswith(word) for literal in _LITERALS):
                return None
        return text[self.start : self.cuts[-1]] + closing


class PrefixParser:
    """`loads_lenient(text, partial=True)` for a text that grows between calls."""

    __slots__ = ("_scanner",)

    def __init__(self) -> None:
        self._scanner: _Scanner | None = None

    def parse(self, text: str) -> Any:
        """The value so far. Raises `OutputError` exactly when `loads_lenient` does."""
        start = _start(text)
        if start is not None:
            scanner = self._scanner
            if scanner is None or scanner.start != start or scanner.pos > len(text):
                scanner = self._scanner = _Scanner(start)
            scanner.scan(text)
            candidate = scanner.candidate(text)
            if scanner.state == _DONE and (
                _OPENER.search(text, scanner.token) is not None  # a second value: ambiguous
                or goes_on(text, scanner.token, len(text))  # closed early: refused
            ):
                candidate = None
            if candidate is not None:
                try:
                    return orjson.loads(candidate)
                except orjson.JSONDecodeError:
                    pass
        return loads_lenient(text, partial=True)
