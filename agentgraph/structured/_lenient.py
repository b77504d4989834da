"""Lenient JSON parsing for model answers that are almost JSON.

`loads_lenient` parses with orjson first; only when that fails does the
tolerant parser run (`_tokens.Scanner`). It repairs, anywhere in the value:

- trailing commas, and missing commas between members or items;
- single quotes, smart quotes (U+201C and U+201D, U+2018 and U+2019) and unescaped quotes inside a
  string (`"say "hi" now"`), told apart by what follows each quote;
- doubled quotes, as JSON kept in a CSV cell has them (`{""name"": ""Ann""}`);
- unquoted keys and unquoted member values (`{"name": John Smith}`);
- the Python literals `True`, `False`, `None`, JavaScript's `undefined`, and
  `TRUE`, `FALSE`, `NULL` and `Null`;
- raw newlines and control characters inside strings;
- `//`, `/* */` and `#` comments, and stray text between members (`...`);
- numbers written `.25`, `1.` or `+3`;
- a missing value (`{"a": }`): the member is left out, never given a guess.

It refuses, with an `OutputError`: `NaN` and `Infinity` (unless allowed, for
float fields), words standing where a value must be quoted (`[a, b]`), numbers
with trailing units (`5px`), tuples (`(1, 2)`), leading zeros, a key without
its value, anything cut off by the end of the text (outside `partial=True`),
text after an unclosed comment (all of it is inside the comment), and
ambiguity: two different values; a quote inside a string before `:`
(`"typed {"v": 1}"` reads both as text and as the start of a key) or before
`, <key>:` with a key no parser reads (`"value", 5: "x"`); a quote with no
pair in a list item (`["a" b", "c"]`) or right after the opening one
(`""value"`), which may have ended the string; and an object or array
followed by more of its members (`{"a": 1}, "b": 2}`: the bracket closed early).

Where the value sits in the text is decided in this order:

1. The whole text is one value. A scalar must fill the text (up to
   whitespace and comments); an object or array may be followed by prose.
2. The body of a Markdown code fence (```` ```json ```` or a bare ```` ``` ````)
   is one value; fences are tried in order and prose around them is ignored.
3. Otherwise each `{` or `[` is tried left to right.

Never a wrong value: a bracket inside an object or array that failed to parse
is never tried on its own (`{"x": "a, {"k": 1}` is refused, not read as
`{"k": 1}`); once a failed attempt had read a key and its colon, or an item,
no bracket after it is tried either, since where it would have ended is
unknown. When the text holds two different values (`{"a": 1} or {"b": 2}`)
the answer is ambiguous and refused; `parse` with a type keeps the one reading
that validates. `repair_json` says which repairs were applied.

With `partial=True` a value cut off by the end of the text (a stream) is closed:
open strings, arrays and objects are closed; a dangling key, an unfinished
literal or a lone minus sign is dropped.

Numbers follow orjson, so both paths agree: integers within the 64-bit range
stay `int`, larger ones become `float`. Nesting deeper than `MAX_DEPTH` (100)
levels is an error, as it is for orjson. Time is linear in the text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any

import attrs
import orjson

from .._core._errors import OutputError
from ._depth import shallow
from ._syntax import NAMES, Fail, goes_on
from ._syntax import WS as _WS
from ._tokens import Scanner

__all__ = ("Repaired", "loads_lenient", "readings", "repair_json", "single", "whole_fails")

# Characters the search may scan per character of text. Attempts never overlap, so
# real input stays near 1; this bounds any input.
_SEARCH_BUDGET = 4
_MAX_READINGS = 16  # enough to find the one that validates; more is a refusal anyway
_SNIPPET = 24
_OPENER = re.compile(r"[\[{]")
# An opener worth an attempt: not one that fails at its next token (`{{`, `[see`), nor
# one right after a `{` (which fails there). Skipping these in C keeps prose full of
# brackets cheap; an attempt would only have ruled them out one by one.
_WORD_END = r"(?:[^\W\d]|\$)[\w$]*(?=[^\w$])"
_NAMES = rf"(?:{'|'.join(NAMES)})(?![\w$])"
_VIABLE = re.compile(
    r"\{(?<!\{\{)(?![ \t\n\r]*[{\[\],:])"
    rf"|\[(?<!\{{\[)(?![ \t\n\r]*(?:[}}:,]|(?!{_NAMES}){_WORD_END}))"
)
_FENCE_OPEN = re.compile(r"```[^\n`]*\n")
_FENCE_CLOSE = re.compile(r"\n[ \t]*```")


@attrs.frozen
class Repaired:
    """A value recovered from text, and the repairs that recovered it (in the order met).

    `repairs` is empty for valid JSON. The names: `code fence`, `prose around`,
    `trailing comma`, `missing comma`, `single quotes`, `smart quotes`,
    `inner quote`, `doubled quotes`, `unquoted key`, `unquoted value`, `python literal`,
    `literal case`,
    `control character`, `comment`, `stray text`, `number form`,
    `missing value`, `non-finite number`, `closed at the end`.
    """

    value: Any
    repairs: tuple[str, ...] = ()
    start: int = attrs.field(default=0, eq=False, repr=False)


def loads_lenient(text: str, *, partial: bool = False, nonfinite: bool = False) -> Any:
    """Parse JSON from a model answer, repairing the usual mistakes.

    Args:
        text: The answer. Valid JSON is parsed by orjson and nothing else runs.
        partial: Treat the end of the text as a cut-off stream and close the value.
        nonfinite: Read `NaN`, `Infinity` and `-Infinity` as floats instead of refusing.

    Returns:
        The parsed value.

    Raises:
        OutputError: No value could be recovered, or the text holds two
            different values; `.position` is the offset where the most
            promising attempt stopped.
    """
    try:
        return shallow(orjson.loads(text), text)
    except orjson.JSONDecodeError:
        pass
    return single(text, readings(text, partial=partial, nonfinite=nonfinite)).value


def repair_json(text: str, *, partial: bool = False, nonfinite: bool = False) -> Repaired:
    """`loads_lenient`, saying which repairs it applied.

    ```python
    fixed = repair_json("{name: 'Ann', tags: ['a' 'b'],}")
    assert fixed.value == {"name": "Ann", "tags": ["a", "b"]}
    assert fixed.repairs == ("unquoted key", "single quotes", "missing comma", "trailing comma")
    ```
    """
    try:
        return Repaired(shallow(orjson.loads(text), text))
    except orjson.JSONDecodeError:
        pass
    return single(text, readings(text, partial=partial, nonfinite=nonfinite))


def readings(text: str, *, partial: bool = False, nonfinite: bool = False) -> list[Repaired]:
    """Every value the text could stand for (one, unless it is ambiguous).

    Raises:
        OutputError: there is none.
    """
    return _Finder(text, partial, nonfinite).readings()


def whole_fails(text: str) -> bool:
    """Whether the first rule (the whole text is one value) fails in a stream, the search going on.

    It succeeds on a scalar that fills the text and ends the search on a fatal
    failure (`NaN [1]`); either way no later rule is reached. The streaming fast
    path asks before it follows a value that a later rule would find.
    """
    try:
        return not _Finder(text, True, False).whole(0, len(text), [], ())
    except OutputError:
        return False


def single(text: str, found: list[Repaired]) -> Repaired:
    """The one reading, or `OutputError` naming the ambiguity."""
    first = found[0]
    for other in found[1:]:
        if other.value != first.value or not _same_types(other.value, first.value):
            raise ambiguous(text, [first, other])
    return first


def ambiguous(text: str, found: list[Repaired]) -> OutputError:
    starts = [reading.start for reading in found]
    return OutputError(
        f"ambiguous JSON: the text holds {len(found)} different values, "
        f"at offsets {', '.join(map(str, starts))}; answer with exactly one",
        attempts=(text,),
        position=starts[1] if len(starts) > 1 else starts[0],
        details={"reason": "ambiguous", "offsets": starts},
    )


def _same_types(left: Any, right: Any) -> bool:
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return all(_same_types(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return all(map(_same_types, left, right))
    return True


class _Finder:
    """Where in the text the value is, with a budget on the text the attempts scan."""

    def __init__(self, text: str, partial: bool, nonfinite: bool) -> None:
        self.text = text
        self.scanner = Scanner(text, partial=partial, nonfinite=nonfinite)
        self.best: Fail | None = None
        # Spans of objects and arrays that failed, disjoint and in order: no bracket
        # inside one is tried alone.
        self.starts: list[int] = []
        self.stops: list[int] = []
        self.budget = _SEARCH_BUDGET * (len(text) + 256)

    def readings(self) -> list[Repaired]:
        found: list[Repaired] = []
        end = len(self.text)
        if self.whole(0, end, found, ()):
            return found
        for start, stop in self.fences():
            if self.whole(start, stop, found, ("code fence",)):
                return found
        self.search(0, end, found, ("prose around",))
        if found:
            return found
        raise self.error(self.best or Fail(0, "no JSON value found"))

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

    def whole(self, start: int, stop: int, found: list[Repaired], how: tuple[str, ...]) -> bool:
        """The value that fills `text[start:stop]`; an object or array may have prose after it."""
        if start > 0 or stop < len(self.text):
            body = self.text[start:stop]
            try:
                value = orjson.loads(body)
            except orjson.JSONDecodeError:
                pass
            else:
                found.append(Repaired(shallow(value, body), how, start))
                return True
        scanner = self.scanner
        scanner.end = stop
        first = _WS.match(self.text, start, stop).end()  # type: ignore[union-attr]
        scanner.repairs, scanner.open_comment = {}, -1
        try:
            value, pos = scanner.value_at(scanner.skip(first))
            if isinstance(value, list | dict) and goes_on(self.text, pos, stop):
                raise Fail(pos, "the text goes on after the closing bracket")
            pos = scanner.skip(pos)
            if pos < stop and not isinstance(value, list | dict):
                raise Fail(pos, "unexpected text after the value")
        except Fail as exc:
            opened = first < stop and self.text[first] in "{["
            self.failed(exc, first, opened, stop)
            return False
        repairs = (*how, *scanner.repairs)
        if pos < stop:
            repairs = (*repairs, "prose around")
        found.append(Repaired(value, repairs, first))
        self.search(pos, stop, found, repairs)
        return True

    def search(self, pos: int, stop: int, found: list[Repaired], how: tuple[str, ...]) -> None:
        """Each object or array from `pos` on that parses, none inside a broken one."""
        text, scanner = self.text, self.scanner
        scanner.end = stop
        while len(found) < _MAX_READINGS and (hit := _VIABLE.search(text, pos, stop)):
            pos = self.unbroken(hit.start())
            if pos != hit.start():
                continue
            if self.after_brace(pos):
                pos += 1
                continue
            scanner.repairs, scanner.open_comment = {}, -1
            try:
                value, after = scanner.value_at(pos)
            except Fail as exc:
                self.charge(pos)
                self.failed(exc, pos, True, stop)
                pos = max(pos + 1, scanner.reach)
                continue
            self.charge(pos)
            if goes_on(text, after, stop):  # closed early: no reading, nor any inside it
                self.failed(
                    Fail(after, "the text goes on after the closing bracket"), pos, False, stop
                )
                self.block(pos, after)
            else:
                found.append(Repaired(value, (*how, *scanner.repairs), pos))
            pos = after

    def after_brace(self, pos: int) -> bool:
        """Whether a `{` (which fails at this opener) comes before `pos`, past whitespace."""
        text = self.text
        back = pos - 1
        while back >= 0 and text[back] in " \t\n\r":
            back -= 1
        return back >= 0 and text[back] == "{"

    def unbroken(self, pos: int) -> int:
        """`pos`, or the end of the broken span that holds it."""
        index = bisect_right(self.starts, pos) - 1
        if index >= 0 and pos <= self.stops[index]:
            return self.stops[index] + 1
        return pos

    def charge(self, start: int) -> None:
        self.budget -= max(0, self.scanner.reach - start)
        if self.budget < 0:
            raise self.error(Fail(start, "search limit reached"))

    def failed(self, exc: Fail, start: int, opened: bool, stop: int) -> None:
        """Note a failed attempt: the span it covers is never searched again.

        An object or array that had read a key and its colon, or an item, was
        JSON: where it would have ended is unknown, so every bracket up to `stop`
        may be inside it. One that failed before that (`{x}`, `[see above]`) was
        prose, and covers what it read. A comment that never closes covers
        the rest of the text.
        """
        if exc.fatal:
            raise self.error(exc) from exc
        if self.scanner.open_comment >= 0:  # nothing after it is outside the comment
            self.block(self.scanner.open_comment, stop)
        if opened:
            reach = stop if self.scanner.committed else max(self.scanner.reach, exc.pos)
            self.block(start, reach)
        if self.best is None or exc.pos > self.best.pos:
            self.best = exc

    def block(self, start: int, stop: int) -> None:
        """Add a broken span, merged with those it overlaps."""
        starts, stops = self.starts, self.stops
        index = bisect_right(starts, start) - 1
        if index >= 0 and stops[index] >= start:
            start = starts[index]
            stop = max(stop, stops[index])
        else:
            index += 1
        last = index
        while last < len(starts) and starts[last] <= stop:
            stop = max(stop, stops[last])
            last += 1
        starts[index:last] = [start]
        stops[index:last] = [stop]

    def error(self, fail: Fail) -> OutputError:
        pos = fail.pos
        before = self.text[max(0, pos - _SNIPPET) : pos]
        after = self.text[pos : pos + _SNIPPET]
        return OutputError(
            f"cannot parse JSON: {fail.reason} at offset {pos}, near {before + '<HERE>' + after!r}",
            attempts=(self.text,),
            position=pos,
            details={"reason": fail.reason},
        )
