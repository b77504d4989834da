"""The tolerant JSON state machine under `loads_lenient`: one value from one offset.

`Scanner.value_at(pos)` parses one value with an explicit stack (nesting never
recurses) and notes each repair it makes in `repairs`. It raises `Fail` where
it cannot go on; `reach` is the furthest offset it looked at, which the search
for a value in prose charges to its budget and never starts inside.

Where a quote ends a string is decided by what follows it: a quote that cannot
end the string where it stands (`"say "hi" now"`: a value is never followed by
a word) is taken as part of the text. A look ahead of a bounded length decides,
so scanning stays linear.
"""

from __future__ import annotations

from typing import Any

from .._limits import MAX_DEPTH
from ._syntax import (
    _BARE,
    _CASED,
    _COMMENT,
    _CONTROL,
    _CUT_KEY,
    _DELIMITERS,
    _ESCAPES,
    _INT_MAX,
    _INT_MIN,
    _KEY_AHEAD,
    _LOOKAHEAD,
    _LOOSE_KEY,
    _LOOSE_NUMBER,
    _NUMBER_TAIL,
    _PYTHON,
    _QUOTES,
    _RUNS,
    _STRAY,
    CUT_HEX,
    CUT_LOW,
    HEX4,
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
# Where a string stands, which decides what may follow its closing quote.
_ROOT, _KEYS, _MEMBER, _ITEMS = range(4)
MISSING: Any = object()


class _Obj:
    """An object under construction and the key waiting for its value."""

    __slots__ = ("data", "key")

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.key = ""


class Scanner:
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

    def note(self, repair: str) -> None:
        self.repairs[repair] = None

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
            value, pos, _ = self.string(pos, _MEMBER if member else _ITEMS if self.stack else _ROOT)
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
            key, pos, closed = self.string(pos, _KEYS)
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

    def key_ahead(self, pos: int) -> bool:
        if _KEY_AHEAD.match(self.text, pos, self.end) is not None:
            return True
        # In a stream, a key the end cut off before its colon.
        return self.partial and _CUT_KEY.match(self.text, pos, self.end) is not None

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

    def string(self, pos: int, where: int) -> tuple[str, int, bool]:
        """A quoted string: its value, the offset after it, and whether it closed."""
        text, end = self.text, self.end
        opener = text[pos]
        run, closers = _RUNS[opener], _QUOTES[opener]
        if opener == "'":
            self.note("single quotes")
        elif opener != '"':
            self.note("smart quotes")
        doubled = self.doubled(pos, where)
        if doubled is not None:
            return doubled
        parts: list[str] = []
        start, inner, unpaired = pos, 0, False
        pos += 1
        while True:
            stop = match_end(run, text, pos, end)
            parts.append(text[pos:stop])
            self.reach = max(self.reach, stop)
            if stop >= end:
                if not self.partial:
                    raise Fail(end, "unterminated string")
                self.note("closed at the end")
                return self.joined(parts), end, False
            if text[stop] in closers:
                if where == _ROOT or self.ends_string(stop + 1, where):
                    if unpaired and inner % 2:
                        raise Fail(start, "a quote inside a string has no pair (ambiguous)")
                    return self.joined(parts), stop + 1, True
                self.note("inner quote")
                # One quote with no pair may have ended the string: in a list, before
                # a word missing its opening quote (`["a" b", "c"]`), or right after
                # the opening one (`""value"`). In `{"k": "v"alue"}` it can only be text.
                unpaired = opener != "'" and (where == _ITEMS or stop == start + 1 or unpaired)
                inner += 1
                parts.append(text[stop])
                pos = stop + 1
                continue
            piece, pos = self.escape(stop)
            parts.append(piece)

    def doubled(self, pos: int, where: int) -> tuple[str, int, bool] | None:
        """A string written with its quotes doubled (`""text""`, as CSV quotes them), or None.

        `""` before a delimiter is the empty string; a doubled opening whose
        text does not end in a doubled closing is left to the general reading.
        """
        text, end = self.text, self.end
        quote = text[pos]
        first = pos + 2
        if quote not in "\"'" or not text.startswith(quote * 2, pos, end) or first >= end:
            return None
        if text[first] in _DELIMITERS or text[first] == quote:
            return None
        close = text.find(quote, first, end)
        if close < 0 or not text.startswith(quote * 2, close, end):
            return None
        body = text[first:close]
        if "\\" in body or "\n" in body:
            return None
        if where != _ROOT and not self.ends_string(close + 2, where):
            return None
        self.note("doubled quotes")
        self.reach = max(self.reach, close + 2)
        return body, close + 2, True

    def joined(self, parts: list[str]) -> str:
        value = "".join(parts)
        if _CONTROL.search(value) is not None:
            self.note("control character")
        return value

    def ends_string(self, pos: int, where: int) -> bool:
        """Whether a quote just before `pos` can close a string standing at `where`."""
        text, end = self.text, self.end
        next_ = match_end(WS, text, pos, end)
        self.reach = max(self.reach, next_)
        if next_ >= end:
            return True
        char = text[next_]
        if where == _KEYS:
            return char == ":"
        if _COMMENT.match(text, next_, end) is not None:
            return True
        if char in "}]":
            return True
        if char == ",":
            return self.item_ahead(next_ + 1, where)
        if text.find("\n", pos, next_) >= 0:
            return True  # a missing comma at the end of a line
        if char == ":":
            # `"note": "typed {"verbose": true}"`: a key inside the text, or the text
            # ended and a key began? Both read; neither is safe.
            raise Fail(pos - 1, "a quote inside a string comes before ':' (ambiguous)")
        if text.find("\n", pos, next_) >= 0:
            return True  # a missing comma at the end of a line
        if char in QUOTES:
            return where == _ITEMS or self.key_ahead(next_)
        return where == _ITEMS and self.value_ahead(next_)

    def item_ahead(self, pos: int, where: int) -> bool:
        """Whether what follows a comma at `pos - 1` starts the next member or item."""
        next_ = match_end(WS, self.text, pos, self.end)
        self.reach = max(self.reach, next_)
        if next_ >= self.end or self.text.find("\n", pos, next_) >= 0:
            return True  # members and items one to a line
        char = self.text[next_]
        if _COMMENT.match(self.text, next_, self.end) is not None:
            return True
        if where == _MEMBER:
            if char in QUOTES or char == "}" or self.key_ahead(next_):
                return True
            if _LOOSE_KEY.match(self.text, next_, self.end) is not None:
                # `"value", 5: "x"`: the next member, with a key no parser reads, or text?
                raise Fail(pos - 2, "a quote inside a string comes before ', key:' (ambiguous)")
            return False
        return char == "]" or self.value_ahead(next_)

    def value_ahead(self, pos: int) -> bool:
        """Whether an item (in an array) starts at `pos`."""
        char = self.text[pos]
        if char in QUOTES or char in "{[-+." or "0" <= char <= "9":
            return True
        word = WORD.match(self.text, pos, min(self.end, pos + _LOOKAHEAD))
        if word is None:
            return False
        if self.partial and word.end() == self.end:
            return any(name.startswith(word.group()) for name in NAMES)
        return word.group() in LITERALS or word.group() in NONFINITE

    def escape(self, pos: int) -> tuple[str, int]:
        """The backslash escape at `pos`; unknown escapes are kept as written."""
        if pos + 1 >= self.end:
            return "", self.end
        char = self.text[pos + 1]
        if char != "u":
            return _ESCAPES.get(char, "\\" + char), pos + 2
        code = self.hex4(pos + 2)
        if code is None:
            cut = CUT_HEX.match(self.text, pos + 2, self.end)
            return ("", self.end) if cut else ("\\u", pos + 2)
        if 0xD800 <= code < 0xDC00:
            low = self.hex4(pos + 8) if self.text.startswith("\\u", pos + 6, self.end) else None
            if low is not None and 0xDC00 <= low < 0xE000:
                return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), pos + 12
            if CUT_LOW.match(self.text, pos + 6, self.end):
                # Do not leave half a surrogate pair in a cut-off string.
                return "", self.end
        return chr(code), pos + 6

    def hex4(self, pos: int) -> int | None:
        return int(m.group(), 16) if (m := HEX4.match(self.text, pos, self.end)) else None

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
