"""The tokens of the JSON models write: patterns, quotes, literals, and how an attempt fails.

Shared by the tolerant parser (`_tokens.Scanner`), the search around it
(`_lenient`) and the streaming fast path (`_prefix`), which must agree.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ("Fail", "NonFinite", "goes_on", "match_end")

WS = re.compile(r"[ \t\n\r\ufeff]*")
NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# What models write for numbers: `+3`, `.25`, `1.` as well.
_LOOSE_NUMBER = re.compile(r"[+-]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NUMBER_TAIL = re.compile(r"[0-9eE.+-]*\Z")
WORD = re.compile(r"(?:[^\W\d]|\$)(?:\w|\$)*")
HEX4 = re.compile(r"[0-9a-fA-F]{4}")
# What a `\u` escape (or the low half of a surrogate pair) cut off by the end looks like.
CUT_HEX = re.compile(r"[0-9a-fA-F]{0,3}\Z")
CUT_LOW = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")
_CONTROL = re.compile(r"[\x00-\x1f]")
# An unquoted value runs to the next delimiter, or to a comment after a space.
_BARE = re.compile(r"(?:[^,{}\[\]\"\n\r\s]|[ \t](?![ \t]*(?://|#)))*")
# Text between members that is neither a key nor a value ("...", "and also").
_STRAY = re.compile(r"[^\"'\u201c\u201d\u2018\u2019{}\[\]:,]*")
# A key coming next: a quoted one (of bounded length) or a word, then a colon.
_KEY_AHEAD = re.compile(
    r"""(?:"(?:[^"\\\n]|\\.){0,200}"|'(?:[^'\\\n]|\\.){0,200}'"""
    r"|[\u201c\u201d](?:[^\u201c\u201d\"\\\n]|\\.){0,200}[\u201c\u201d\"]"
    r"|[\u2018\u2019](?:[^\u2018\u2019'\\\n]|\\.){0,200}[\u2018\u2019']"
    r"|(?:[^\W\d]|\$)(?:\w|\$){0,200})[ \t\r\n]*:"
)
# ... or one the end cut off: a quoted key not closed yet, or closed with its colon to come.
_CUT_KEY = re.compile(
    r"""(?:"(?:[^"\\\n]|\\.){0,200}[\\"]?|'(?:[^'\\\n]|\\.){0,200}[\\']?"""
    r"|[\u201c\u201d](?:[^\u201c\u201d\"\\\n]|\\.){0,200}[\\\u201c\u201d\"]?"
    r"|[\u2018\u2019](?:[^\u2018\u2019'\\\n]|\\.){0,200}[\\\u2018\u2019']?"
    r"|(?:[^\W\d]|\$)(?:\w|\$){0,200})[ \t\r\n]*\Z"
)
# Text that reads as a key before a colon, though no parser reads it as one (`5`, `a b`).
_LOOSE_KEY = re.compile(
    r"[^\s\"'\u201c\u201d\u2018\u2019{}\[\],:][^\"'\u201c\u201d\u2018\u2019{}\[\],:\n]{0,200}:"
)
_DELIMITERS = frozenset(" \t\r\n,:}]")  # what may follow a string's closing quote
# After a closed object or array, text that carries on its members (`{"a": 1}, "b": 2}`):
# the bracket closed early, and the value read up to it is not the one written.
_GOES_ON = re.compile(
    r"[ \t\r\n]*(?:[\"'\u201c\u201d\u2018\u2019]"
    r"|,[ \t\r\n]*(?:[\"'\u201c\u201d\u2018\u2019]|[^\s\"'{}\[\],:][^\"'{}\[\],:\n]{0,200}:))"
)
_COMMENT = re.compile(r"//|/\*|#")
_LOOKAHEAD = 96  # the most a look ahead reads past the offset it starts from

# Each opening quote, the quotes that may close it, and the text between.
_QUOTES: dict[str, str] = {
    '"': '"',
    "'": "'",
    "\u201c": '\u201d\u201c"',
    "\u201d": '\u201d\u201c"',
    "\u2018": "\u2019\u2018'",
    "\u2019": "\u2019\u2018'",
}
_RUNS = {q: re.compile(f"[^{re.escape(c)}\\\\]*") for q, c in _QUOTES.items()}
QUOTES = "".join(_QUOTES)

# JSON's literals, JavaScript's `undefined`, Python's spellings and the capitalised ones.
LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "undefined": None}
LITERALS |= {"True": True, "False": False, "None": None}
LITERALS |= {"TRUE": True, "FALSE": False, "NULL": None, "Null": None}
_PYTHON = frozenset({"True", "False", "None", "undefined"})
_CASED = frozenset({"TRUE", "FALSE", "NULL", "Null"})
NONFINITE = {"NaN": float("nan"), "Infinity": float("inf")}
NAMES = (*LITERALS, *NONFINITE)
# A value that starts with NaN or Infinity (signed or not, as a whole word): refused
# outright unless the caller allows them, and the refusal ends the whole search.
NONFINITE_START = re.compile(rf"[+-]?(?:{'|'.join(NONFINITE)})(?![\w$])")
_ESCAPES = dict(zip("\"'\\/bfnrt", "\"'\\/\b\f\n\r\t", strict=True))
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what orjson keeps as int


class NonFinite(float):
    """NaN or an infinity the caller allowed: float validation turns it into a plain float.

    One left in a validated value sits where no float field took it, and is refused.
    """

    __slots__ = ()


class Fail(Exception):
    """An attempt stopped at `pos`; `fatal` ends the whole search."""

    def __init__(self, pos: int, reason: str, *, fatal: bool = False) -> None:
        super().__init__(reason)
        self.pos = pos
        self.reason = reason
        self.fatal = fatal


def match_end(pattern: re.Pattern[str], text: str, pos: int, end: int) -> int:
    """Where a pattern that may match nothing stops matching."""
    match = pattern.match(text, pos, end)
    return match.end() if match else pos


def goes_on(text: str, pos: int, end: int) -> bool:
    """Whether the text after a container closed at `pos` carries on its members."""
    return _GOES_ON.match(text, pos, end) is not None
