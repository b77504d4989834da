"""`parse`: a model's answer, as text, into a Python type.

```python
@generable("A problem found in a file")
@attrs.frozen
class Issue:
    line: int
    message: str

parse(Issue, '{"line": 3, "message": "unused import"}')      # orjson, then validation
parse(Issue, "Sure!\\n```json\\n{'line': '3', 'message': 'x',}\\n```")   # repaired
parse(list[int], "[1, 2")                                    # OutputError: cut off
```

Valid JSON goes straight to orjson and then to the type's validator; so does
valid JSON in a code fence or with prose around it. Only text that orjson
refuses reaches the lenient parser. Every failure is an
`OutputError` whose `.errors` are `path: message` lines ready to show a model,
and whose `.attempts` holds the text.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, overload

import attrs
import orjson

from .._core._errors import OutputError
from .._util._limits import MAX_DEPTH
from ._compile import cache_key, shape_of
from ._depth import SHALLOW_LEN, shallow
from ._lenient import (
    _FENCE_CLOSE,
    _FENCE_OPEN,
    _OPENER,
    Repaired,
    ambiguous,
    readings,
    single,
)
from ._schema import invalid_error
from ._shapes import Invalid, Shape
from ._syntax import NONFINITE_START, QUOTES, NonFinite, goes_on
from ._syntax import WS as _LEAD  # what the lenient parser skips as whitespace

__all__ = ("check", "holds_nonfinite", "load", "parse", "parse_repaired", "resolve")

T = TypeVar("T")

_CLOSER = {"{": "}", "[": "]"}
_HOLDERS = QUOTES + "/#"  # what may open a string or a comment that holds the rest
_MISSING: Any = object()
_loads = orjson.loads  # one lookup less on the path of every untyped answer


def _shortcut(text: str) -> Any:
    """The value the lenient parser would find, when orjson alone can find it.

    Two common shapes of answer: JSON in a code fence, and valid JSON with prose
    around it. The lenient parser tries the whole text first, then the first
    fence's body, then the first bracket that parses; these shortcuts apply only
    where the earlier rules cannot take the text, and otherwise return
    `_MISSING` for the lenient parser to decide.
    """
    lead = _LEAD.match(text)
    first = lead.end() if lead else 0
    if first >= len(text) or text[first] in _HOLDERS:  # a string or a comment may hold the rest
        return _MISSING
    if NONFINITE_START.match(text, first):  # `NaN [1]`: the whole text is refused, not searched
        return _MISSING
    fence = _FENCE_OPEN.search(text)
    if fence is not None:
        if text[first] in "{[":  # the whole text may parse as a value first
            return _MISSING
        closing = _FENCE_CLOSE.search(text, fence.end() - 1)
        return _orjson(text[fence.end() : closing.start() if closing else len(text)])
    if "```" in text:
        return _MISSING
    return _embedded(text, first)


def _embedded(text: str, first: int) -> Any:
    """The JSON from the first `{` or `[` to its last closer, when that span is valid JSON.

    A valid span parses the same either way, and it is what the lenient
    parser's search tries first.
    """
    found = _OPENER.search(text, first)
    if found is None:
        return _MISSING
    start = found.start()
    if "//" in text[:start] or "/*" in text[:start] or "#" in text[:start]:  # a comment may hide it
        return _MISSING
    end = text.rfind(_CLOSER[found.group()])
    if end <= start or "/*" in text[end:]:  # the lenient parser refuses an unclosed comment
        return _MISSING
    if _OPENER.search(text, end) is not None:  # a second value would make it ambiguous
        return _MISSING
    if goes_on(text, end + 1, len(text)):  # the lenient parser refuses a bracket closed early
        return _MISSING
    return _orjson(text[start : end + 1])


def _orjson(text: str) -> Any:
    try:
        return shallow(orjson.loads(text), text)
    except orjson.JSONDecodeError:
        return _MISSING


_SHAPES: dict[tuple[Any, str], Shape] = {}
_SHAPES_MAX = 256


def _shape(tp: Any) -> Shape:
    """`shape_of`, behind a plain dict: the lookup is most of the cost of a small answer."""
    shape = shape_of(tp)
    try:
        if len(_SHAPES) >= _SHAPES_MAX:  # bounded like `shape_of`'s own cache
            _SHAPES.clear()
        _SHAPES[cache_key(tp)] = shape
    except TypeError:  # an unhashable annotation
        pass
    return shape


def _repair(text: str, nonfinite: bool = False) -> list[Repaired]:
    """What `load` does once orjson has refused `text`: every reading of it."""
    value = _shortcut(text)
    if value is not _MISSING:
        return [Repaired(value, ("code fence" if "```" in text else "prose around",))]
    try:
        return readings(text, nonfinite=nonfinite)
    except OutputError as exc:
        raise OutputError(
            str(exc),
            attempts=(text,),
            errors=(f"$: {exc}",),
            position=exc.position,
            details=exc.details,
        ) from exc


def _refusal(exc: OutputError) -> OutputError:
    """`exc` with its message as the one `path: message` line a model is shown."""
    return OutputError(
        str(exc),
        attempts=exc.attempts,
        errors=(f"$: {exc}",),
        position=exc.position,
        details=exc.details,
    )


def load(text: str) -> Any:
    """Parse JSON leniently; a failure names the offset in `.errors` and keeps the text.

    Raises:
        OutputError: no JSON value could be recovered from `text`.
    """
    if not isinstance(text, str):
        raise TypeError(f"a model answer is parsed from str, not {type(text).__name__}")
    try:
        return shallow(orjson.loads(text), text)
    except orjson.JSONDecodeError:
        found = _repair(text)
    try:
        return single(text, found).value
    except OutputError as exc:
        raise _refusal(exc) from exc


def resolve(
    shape: Shape, text: str, *, strict: bool, nonfinite: bool = False
) -> tuple[Any, Any, tuple[str, ...]]:
    """The data in `text`, that data validated against `shape`, and the repairs applied.

    Of several readings of the text, the one that validates is kept; two that
    validate to different values are refused as ambiguous.

    Raises:
        OutputError: no reading, no valid reading, or more than one.
    """
    try:
        data = shallow(orjson.loads(text), text)
    except orjson.JSONDecodeError:
        pass
    else:
        return data, check(shape, data, strict=strict, raw=text), ()
    return _resolve_repaired(shape, text, strict=strict, nonfinite=nonfinite)


def _resolve_repaired(
    shape: Shape, text: str, *, strict: bool, nonfinite: bool
) -> tuple[Any, Any, tuple[str, ...]]:
    """`resolve` for a text orjson has refused."""
    found = _repair(text, nonfinite)
    if len(found) == 1:
        reading = found[0]
        result = check(shape, reading.value, strict=strict, raw=text)
    else:
        reading, result = _choose(shape, found, strict=strict, raw=text)
    if "non-finite number" in reading.repairs and holds_nonfinite(result):
        raise OutputError(
            "NaN or Infinity outside a float field: only float fields may hold one",
            attempts=(text,),
            errors=("$: NaN or Infinity stands where no float field takes it",),
            details={"reason": "non-finite number"},
        )
    return reading.value, result, reading.repairs


def _choose(shape: Shape, found: list[Repaired], *, strict: bool, raw: str) -> tuple[Any, Any]:
    """The one reading that validates (the type breaks the tie), with its value."""
    valid: list[tuple[Repaired, Any]] = []
    for reading in found:
        result = shape.check(reading.value, strict)
        if isinstance(result, Invalid):
            continue
        if all(result != other for _, other in valid):
            valid.append((reading, result))
    if not valid:
        check(shape, found[0].value, strict=strict, raw=raw)  # raises with its problems
    if len(valid) > 1:
        raise _refusal(ambiguous(raw, [reading for reading, _ in valid]))
    return valid[0]


def holds_nonfinite(value: Any) -> bool:
    """Whether a NaN or an infinity the parser allowed sits outside every float field."""
    level: list[tuple[Any, int]] = [(value, 0)]
    while level:
        item, depth = level.pop()
        if isinstance(item, NonFinite):
            return True
        if depth > MAX_DEPTH + 1:
            continue
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple | set | frozenset):
            children = item
        elif attrs.has(type(item)):
            children = [getattr(item, f.name) for f in attrs.fields(type(item))]
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            children = [getattr(item, f.name) for f in dataclasses.fields(item)]
        else:
            continue
        level.extend((child, depth + 1) for child in children)
    return False


def check(shape: Shape, data: Any, *, strict: bool, raw: str) -> Any:
    """Validate parsed `data` against a compiled shape.

    Raises:
        OutputError: with every problem in `.errors` and `raw` in `.attempts`.
    """
    result = shape.check(data, strict)
    if isinstance(result, Invalid):
        raise invalid_error(shape.label, result, raw=raw)
    return result


@overload
def parse(tp: type[T], text: str, *, strict: bool = False, nonfinite: bool = False) -> T: ...
@overload
def parse(tp: Any, text: str, *, strict: bool = False, nonfinite: bool = False) -> Any: ...
def parse(tp: Any, text: str, *, strict: bool = False, nonfinite: bool = False) -> Any:
    """Parse a model's answer into an instance of `tp`.

    The text is parsed as JSON (with orjson when it is valid, else with the
    lenient parser, which strips code fences and prose and repairs trailing
    commas, quotes and the like), then validated as `validate` does.

    Args:
        tp: any type `json_schema` accepts.
        text: the answer.
        strict: no coercion and no unknown fields (see `validate`).
        nonfinite: read `NaN`, `Infinity` and `-Infinity` into float fields
            (anywhere else they are still refused).

    Raises:
        OutputError: the text holds no JSON value, or the value does not match
            `tp`, or two readings of the text both match it; `.errors` lists
            every problem as `path: message`.
        UnsupportedType: `tp` has no JSON form.
    """
    if tp is Any and type(text) is str:  # nothing to validate: orjson and the depth guard
        try:
            value = _loads(text)
        except orjson.JSONDecodeError:
            return _resolve_repaired(_shape(Any), text, strict=strict, nonfinite=nonfinite)[1]
        return value if len(text) <= SHALLOW_LEN else shallow(value, text)
    try:
        shape = _SHAPES[cache_key(tp)]
    except (KeyError, TypeError):
        shape = _shape(tp)
    if not isinstance(text, str):
        raise TypeError(f"a model answer is parsed from str, not {type(text).__name__}")
    try:
        data = shallow(orjson.loads(text), text)
    except orjson.JSONDecodeError:
        return resolve(shape, text, strict=strict, nonfinite=nonfinite)[1]
    return check(shape, data, strict=strict, raw=text)


def parse_repaired(tp: Any, text: str, *, strict: bool = False) -> tuple[Any, tuple[str, ...]]:
    """`parse`, and the repairs the text needed (empty for valid JSON)."""
    _, result, repairs = resolve(_shape(tp), text, strict=strict)
    return result, repairs


@overload
def try_parse(tp: type[T], text: str, *, strict: bool = False) -> T | None: ...
@overload
def try_parse(tp: Any, text: str, *, strict: bool = False) -> Any: ...
def try_parse(tp: Any, text: str, *, strict: bool = False) -> Any:
    """`parse`, but None when the answer holds no JSON at all (plain prose, a refusal).

    An answer that holds JSON which does not fit `tp` still raises `OutputError`:
    only the absence of a value is None, never a wrong one.
    """
    try:
        return parse(tp, text, strict=strict)
    except OutputError:
        if "{" in text or "[" in text:
            raise
        try:
            load(text)
        except OutputError:
            return None  # nothing in the answer reads as JSON
        raise
