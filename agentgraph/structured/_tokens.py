"""The tolerant JSON state machine under `loads_lenient`: one value from one offset.

`Scanner.value_at(pos)` parses one value with an explicit stack (nesting never
recurses) and notes each repair it makes in `repairs`. It raises `Fail` where
it cannot go on; `reach` is the furthest offset it looked at, which the search
for a value in prose charges to its budget and never starts inside.

Strings (where each ends, what it holds) are read by its base, `_strings.StringReader`.
"""

from __future__ import annotations

from typing import Any

from .._util._limits import MAX_DEPTH
from ._strings import ITEMS, KEYS, MEMBER, ROOT, StringReader
from ._syntax import (
    _BARE,
    _CASED,
    _INT_MAX,
    _INT_MIN,
    _LOOSE_NUMBER,
    _NUMBER_TAIL,
    _PYTHON,
    _STRAY,
    LITERALS,
    NAMES,
    NONFINITE,
    NUMBER,
    QUOTES,
    WORD,
    WS,
    Fail,
    NonFinite,
    match_end,
)

__all__ = ("MISSING", "Scanner")

# Parser states: what the next token may be.
_VALUE, _ITEM, _KEY, _COLON, _AFTER, _DONE = range(6)
MISSING: Any = object()


class _Obj:
    """An object under construction and the key waiting for its value."""

    __slots__ = ("data", "key")

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.key = ""


class Scanner(StringReader):
    """A tolerant parser over `text[:end]`; `repairs` names what it repaired."""

    def __init__(self, text: str, *, partial: bool, nonfinite: bool) -> None:
        self.text = text
        self.partial = partial
        self.nonfinite = nonfinite
        self.end = len(text)
        self.stack: list[list[Any] | _Obj] = []
        self.root: Any = None
        self.reach = 0
        # Whether the attempt read a key and its colon, or an item: then it was JSON,
        # and a failure leaves no telling where it would have ended.
        self.committed = False
        self.comma = False
        self.repairs: dict[str, None] = {}  # ordered, without repeats
        self.open_comment = -1  # where a comment the end of the text cut off opens

    def value_at(self, pos: int) -> tuple[Any, int]:
        """Parse one value starting at `pos`; return it and the offset after it.

        `repairs` gathers what this attempt repaired; the caller empties it first.
        """
        self.stack = []
        self.reach = pos
        self.committed = False
        state = _VALUE
        while state != _DONE:
            before = pos
            pos = self.skip(pos)
            self.reach = max(self.reach, pos)
            if pos >= self.end:
                return self.at_end(), pos
            if state == _AFTER:
                state, pos = self.after(pos, pos > before)
            elif state == _KEY:
                state, pos = self.key(pos)
            elif state == _COLON:
                if self.text[pos] != ":":
                    raise Fail(pos, "expected ':' after the key")
                state, pos = _VALUE, pos + 1
                self.committed = True
            else:
                state, pos = self.value(pos, state)
        return self.root, pos

    def skip(self, pos: int) -> int:
        """Skip whitespace and comments (`//`, `/* */` and `#`)."""
        text, end = self.text, self.end
        while True:
            pos = match_end(WS, text, pos, end)
            if text.startswith("//", pos, end) or text.startswith("#", pos, end):
                newline = text.find("\n", pos, end)
                pos = end if newline < 0 else newline + 1
                self.note("comment")
            elif text.startswith("/*", pos, end):
                close = text.find("*/", pos + 2, end)
                self.reach = end if close < 0 else close + 2  # what `find` read
                if close < 0:
                    self.open_comment = pos  # the rest of the text is inside it
                    if not self.partial:
                        raise Fail(pos, "unclosed comment")
                    self.note("closed at the end")
                pos = end if close < 0 else close + 2
                self.note("comment")
            elif self.partial and pos == end - 1 and text[pos] == "/":
                return end
            else:
                return pos

    def value(self, pos: int, state: int) -> tuple[int, int]:
        char = self.text[pos]
        if char in "{[":
            if len(self.stack) >= MAX_DEPTH:
                raise Fail(pos, f"nesting deeper than {MAX_DEPTH} levels", fatal=True)
            self.stack.append(_Obj() if char == "{" else [])
            self.comma = False
            return (_KEY if char == "{" else _ITEM), pos + 1
        if char == "]" and state == _ITEM:
            if self.comma:
                self.note("trailing comma")
            return self.close(pos)
        member = state == _VALUE and bool(self.stack)
        if member and char in ",}":
            # `{"a": }`: the member is dropped, not given an invented value.
            self.note("missing value")
            if char == "}":
                return self.close(pos)
            self.comma = True
            return _KEY, pos + 1
        if char in QUOTES:
            value, pos, _ = self.string(pos, MEMBER if member else ITEMS if self.stack else ROOT)
        elif char in "-+." or "0" <= char <= "9":
            value, pos = self.number(pos)
        else:
            value, pos = self.word(pos, member)
        if value is MISSING:
            return state, pos
        return self.put(value, pos)

    def key(self, pos: int) -> tuple[int, int]:
        char = self.text[pos]
        if char == "}":
            if self.comma:
                self.note("trailing comma")
            return self.close(pos)
        if char in QUOTES:
            key, pos, closed = self.string(pos, KEYS)
            if not closed:
                return _COLON, pos
        else:
            match = WORD.match(self.text, pos, self.end)
            colon = match is not None and self.key_ahead(pos)
            if match is None or (not colon and not self.cut(match.end())):
                return self.stray(pos)
            key, pos = match.group(), match.end()
            self.note("unquoted key")
        top = self.stack[-1]
        if isinstance(top, _Obj):
            top.key = key
        return _COLON, pos

    def cut(self, pos: int) -> bool:
        """Whether a stream may still be writing the token that ends at `pos`."""
        return self.partial and match_end(WS, self.text, pos, self.end) >= self.end

    def stray(self, pos: int) -> tuple[int, int]:
        """Text between members that is no key: skipped when a quoted key or `}` follows."""
        stop = match_end(_STRAY, self.text, pos, self.end)
        self.reach = max(self.reach, stop)
        words = self.text[pos:stop].strip()
        # A lone word is a key without its value, not stray text.
        top = self.stack[-1]
        # Between members: before a quoted key, or before `}` once there is a member.
        closing = stop < self.end and self.text[stop] == "}" and isinstance(top, _Obj) and top.data
        before_key = (stop < self.end and self.text[stop] in QUOTES) or bool(closing)
        if before_key and words and not WORD.fullmatch(words):
            self.note("stray text")
            return _KEY, stop
        if stop >= self.end and self.partial:
            return _KEY, stop
        raise Fail(pos, "expected a key or '}'")

    def after(self, pos: int, gap: bool) -> tuple[int, int]:
        char = self.text[pos]
        is_list = isinstance(self.stack[-1], list)
        if char == ",":
            self.comma = True
            return (_ITEM if is_list else _KEY), pos + 1
        closer = "]" if is_list else "}"
        if char == closer:
            return self.close(pos)
        starts = char in QUOTES or (is_list and char in "{[")
        if starts or (gap and self.starts_item(pos, is_list)):
            self.note("missing comma")
            self.comma = False
            return (_ITEM if is_list else _KEY), pos
        raise Fail(pos, f"expected ',' or {closer!r}")

    def starts_item(self, pos: int, is_list: bool) -> bool:
        char = self.text[pos]
        if is_list:
            return char in "-+." or "0" <= char <= "9" or WORD.match(self.text, pos) is not None
        return self.key_ahead(pos)

    def close(self, pos: int) -> tuple[int, int]:
        return self.put(self.pop(), pos + 1)

    def pop(self) -> Any:
        top = self.stack.pop()
        return top.data if isinstance(top, _Obj) else top

    def put(self, value: Any, pos: int) -> tuple[int, int]:
        self.comma = False
        if not self.stack:
            self.root = value
            return _DONE, pos
        top = self.stack[-1]
        if isinstance(top, _Obj):
            top.data[top.key] = value
        else:
            top.append(value)
            self.committed = True
        return _AFTER, pos

    def at_end(self) -> Any:
        """Close every open container at the end of a cut-off text."""
        if not self.partial:
            raise Fail(self.end, "unexpected end of text")
        if not self.stack:
            raise Fail(self.end, "no complete value before the end of the text")
        self.note("closed at the end")
        while len(self.stack) > 1:
            self.put(self.pop(), self.end)
        return self.pop()

    def number(self, pos: int) -> tuple[Any, int]:
        text = self.text
        match = _LOOSE_NUMBER.match(text, pos, self.end)
        stop = match.end() if match else pos
        if self.partial and _NUMBER_TAIL.match(text, stop, self.end):
            # Cut off mid-number (`1.`, `1e+`, `-`): keep what forms a number so far.
            self.note("closed at the end")
            strict = NUMBER.match(text, pos, stop)
            return (self.to_number(strict.group()) if strict else MISSING), self.end
        if match is None:
            if text[pos] in "+-" and (word := WORD.match(text, pos + 1, self.end)) is not None:
                value = self.special(word.group(), pos, word.end())
                if value is not MISSING:
                    return (NonFinite(-value) if text[pos] == "-" else value), word.end()
            raise Fail(pos, "invalid number" if text[pos] != "." else "unexpected '.'")
        literal = match.group()
        strict = NUMBER.fullmatch(literal)
        if strict is None:
            self.note("number form")
        return self.to_number(literal), stop

    @staticmethod
    def to_number(literal: str) -> Any:
        if "." in literal or "e" in literal or "E" in literal or len(literal) > 21:
            return float(literal)
        number = int(literal)
        return number if _INT_MIN <= number <= _INT_MAX else float(number)

    def special(self, word: str, pos: int, stop: int) -> Any:
        """NaN or Infinity: refused unless the caller allowed them."""
        if word not in NONFINITE:
            return MISSING
        if not self.nonfinite:
            raise Fail(pos, f"{word} is not JSON (allow it for float fields only)", fatal=True)
        self.note("non-finite number")
        return NonFinite(NONFINITE[word])

    def word(self, pos: int, member: bool) -> tuple[Any, int]:
        text = self.text
        match = WORD.match(text, pos, self.end)
        if match is not None:
            word = match.group()
            if word in LITERALS:
                if word in _PYTHON:
                    self.note("python literal")
                elif word in _CASED:
                    self.note("literal case")
                return LITERALS[word], match.end()
            special = self.special(word, pos, match.end())
            if special is not MISSING:
                return special, match.end()
            if (
                self.partial
                and match.end() == self.end
                and any(name.startswith(word) for name in NAMES)
            ):
                return MISSING, self.end
        if member:
            return self.bare(pos)
        if match is None:
            raise Fail(pos, f"unexpected {text[pos]!r}")
        raise Fail(pos, f"unquoted word {match.group()!r}")

    def bare(self, pos: int) -> tuple[str, int]:
        """An unquoted member value (`{"name": John Smith}`): the text to the next delimiter."""
        stop = match_end(_BARE, self.text, pos, self.end)
        self.reach = max(self.reach, stop)
        if stop >= self.end and not self.partial:
            raise Fail(self.end, "unexpected end of text")
        value = self.text[pos:stop].strip()
        if not value:
            raise Fail(pos, f"unexpected {self.text[pos]!r}")
        if value[0] == "(":  # a tuple or a group (`()`, `(1, 2)`) is no string
            raise Fail(pos, f"unexpected {value[0]!r}")
        self.note("unquoted value")
        return value, stop
