"""Quoted strings, for the tolerant parser: where each one ends, and what it holds.

Where a quote ends a string is decided by what follows it: a quote that cannot
end the string where it stands (`"say "hi" now"`: a value is never followed by
a word) is taken as part of the text. A look ahead of a bounded length decides,
so scanning stays linear. Where both readings hold, the string is refused as
ambiguous (`"value", 5: "x"`; a quote with no pair in a list item).
"""

from __future__ import annotations

from ._syntax import (
    _COMMENT,
    _CONTROL,
    _CUT_KEY,
    _DELIMITERS,
    _ESCAPES,
    _KEY_AHEAD,
    _LOOKAHEAD,
    _LOOSE_KEY,
    _QUOTES,
    _RUNS,
    CUT_HEX,
    CUT_LOW,
    HEX4,
    LITERALS,
    NAMES,
    NONFINITE,
    QUOTES,
    WORD,
    WS,
    Fail,
    match_end,
)

__all__ = ("ITEMS", "KEYS", "MEMBER", "ROOT", "StringReader")

# Where a string stands, which decides what may follow its closing quote.
ROOT, KEYS, MEMBER, ITEMS = range(4)


class StringReader:
    """The string part of `Scanner`: reads `text[:end]`, noting repairs and how far it looked."""

    text: str
    end: int
    partial: bool
    reach: int
    repairs: dict[str, None]  # ordered, without repeats

    def note(self, repair: str) -> None:
        self.repairs[repair] = None

    def key_ahead(self, pos: int) -> bool:
        if _KEY_AHEAD.match(self.text, pos, self.end) is not None:
            return True
        # In a stream, a key the end cut off before its colon.
        return self.partial and _CUT_KEY.match(self.text, pos, self.end) is not None

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
                if where == ROOT or self.ends_string(stop + 1, where):
                    if unpaired and inner % 2:
                        raise Fail(start, "a quote inside a string has no pair (ambiguous)")
                    return self.joined(parts), stop + 1, True
                self.note("inner quote")
                # One quote with no pair may have ended the string: in a list, before
                # a word missing its opening quote (`["a" b", "c"]`), or right after
                # the opening one (`""value"`). In `{"k": "v"alue"}` it can only be text.
                unpaired = opener != "'" and (where == ITEMS or stop == start + 1 or unpaired)
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
        if where != ROOT and not self.ends_string(close + 2, where):
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
        if where == KEYS:
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
            return where == ITEMS or self.key_ahead(next_)
        return where == ITEMS and self.value_ahead(next_)

    def item_ahead(self, pos: int, where: int) -> bool:
        """Whether what follows a comma at `pos - 1` starts the next member or item."""
        next_ = match_end(WS, self.text, pos, self.end)
        self.reach = max(self.reach, next_)
        if next_ >= self.end or self.text.find("\n", pos, next_) >= 0:
            return True  # members and items one to a line
        char = self.text[next_]
        if _COMMENT.match(self.text, next_, self.end) is not None:
            return True
        if where == MEMBER:
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
