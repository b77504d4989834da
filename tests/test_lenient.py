"""The lenient JSON parser: repairs, streaming prefixes, and errors that stay typed."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgraph import OutputError, loads_lenient
from agentgraph.structured import _lenient


def same(left: Any, right: Any) -> bool:
    """Equal and of the same types all the way down (so 1 and 1.0 differ)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(same, left, right))
    return bool(left == right)


def with_trailing_commas(value: Any) -> str:
    """JSON text with a comma before every closing bracket of a non-empty container."""
    if isinstance(value, list):
        return "[" + "".join(with_trailing_commas(item) + "," for item in value) + "]"
    if isinstance(value, dict):
        items = (orjson.dumps(k).decode() + ":" + with_trailing_commas(v) for k, v in value.items())
        return "{" + "".join(item + ", " for item in items) + "}"
    return orjson.dumps(value).decode()


REPAIRS = [
    # valid JSON: the orjson path
    ('{"a": 1}', {"a": 1}),
    ('  [1, 2.5, "x"]\n', [1, 2.5, "x"]),
    ("42", 42),
    ('"text"', "text"),
    ("null", None),
    # fences
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ("```\n[1, 2]\n```", [1, 2]),
    ('Here it is:\n```JSON\n{"a": 1}\n```\nAnything else?', {"a": 1}),
    ("```json\n42\n```", 42),
    ('Answer:\n```\n"hi"\n```\nbye', "hi"),
    ('```json\r\n{"a": 1}\r\n```', {"a": 1}),
    ('```json\n{"code": "```py\\nprint(1)\\n```"}\n```', {"code": "```py\nprint(1)\n```"}),
    ('```python\nx = 1\n```\nand the data:\n```json\n{"a": 1}\n```', {"a": 1}),
    ('```python\nd = {"k": 2}\n```\n```json\n{"a": 1}\n```', {"a": 1}),
    # prose around the value: the first complete object or array wins
    ('Here you go: {"a": 1} Thanks!', {"a": 1}),
    ("Sure!\n[1, 2]\nDone.", [1, 2]),
    ('use {x} here: {"a":1}', {"a": 1}),
    ('Sure! {"a": 1} and again {"a": 1}', {"a": 1}),
    ('[note] {"a": 1}', {"a": 1}),
    ('the set {1, 2} then {"a": 1}', {"a": 1}),
    ('{"a": 1} trailing words', {"a": 1}),
    ('He said "see [x]" and {"a": [1]}', {"a": [1]}),
    # trailing commas
    ("[1, 2,]", [1, 2]),
    ('{"a": 1,}', {"a": 1}),
    ('{"a": [1, {"b": 2,},],}', {"a": [1, {"b": 2}]}),
    ("[1,\n  2,\n]", [1, 2]),
    # single quotes
    ("{'a': 'b'}", {"a": "b"}),
    ("['it\\'s', \"x'y\"]", ["it's", "x'y"]),
    ("{'a': \"say 'hi'\", 'b': 'say \"hi\"'}", {"a": "say 'hi'", "b": 'say "hi"'}),
    ("'single'", "single"),
    # unquoted keys
    ("{a: 1, _b: 2, $c: 3, ключ: 4}", {"a": 1, "_b": 2, "$c": 3, "ключ": 4}),
    ("{ a : 1 , True: 2 }", {"a": 1, "True": 2}),
    # Python and JavaScript literals
    ('{"a": True, "b": False, "c": None}', {"a": True, "b": False, "c": None}),
    ("[undefined, true, null]", [None, True, None]),
    ("{'a': True, 'b': [None]}", {"a": True, "b": [None]}),
    ("True", True),
    # raw control characters inside strings
    ('{"a": "line1\nline2"}', {"a": "line1\nline2"}),
    ('["tab\there", "nul\x00", "cr\r"]', ["tab\there", "nul\x00", "cr\r"]),
    # comments
    ('{"a": 1, // one\n "b": 2 /* two */}', {"a": 1, "b": 2}),
    ("// leading\n[1] // trailing", [1]),
    ("/* a */ 7 /* b */", 7),
    # strings holding brackets, quotes and escapes
    ('x {"a": "} ] {", "b": "say \\"hi\\""} y', {"a": "} ] {", "b": 'say "hi"'}),
    (
        '{"a": "\\\\", "b": "\\/", "c": "\\b\\f\\n\\r\\t"},',
        {"a": "\\", "b": "/", "c": "\b\f\n\r\t"},
    ),
    ('["\\d+", "\\u12", "\\uZZZZ"],', ["\\d+", "\\u12", "\\uZZZZ"]),
    # unicode
    ('{"ключ": "значение", "e": "😀",}', {"ключ": "значение", "e": "😀"}),
    ('["\\u00e9\\ud83d\\ude00", "\\ud800 lone"],', ["é😀", "\ud800 lone"]),
    ("\ufeff[1,]", [1]),
    # numbers
    ("[1, -2, 3.5, 1e3, -0.5E-2, 0,]", [1, -2, 3.5, 1000.0, -0.005, 0]),
    ("[18446744073709551615, -9223372036854775808,]", [2**64 - 1, -(2**63)]),
    # combinations
    (
        "Sure, here:\n```json\n{name: 'Ann', // the name\n 'tags': ['a', 'b',], ok: True,}\n```",
        {"name": "Ann", "tags": ["a", "b"], "ok": True},
    ),
    ("Result: {'a': {'b': [1, {'c': None,},],},} done", {"a": {"b": [1, {"c": None}]}}),
]


@pytest.mark.parametrize(("text", "expected"), REPAIRS)
def test_repairs(text: str, expected: Any) -> None:
    assert same(loads_lenient(text), expected)


def test_valid_json_never_reaches_the_repair_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any) -> None:
        raise AssertionError("the repair parser ran on valid JSON")

    monkeypatch.setattr(_lenient, "_Finder", refuse)
    assert loads_lenient('{"a": [1, 2.5, "x", null]}') == {"a": [1, 2.5, "x", None]}
    assert loads_lenient(' "s" ', partial=True) == "s"
    with pytest.raises(AssertionError):
        loads_lenient("[1,]")


def test_integers_beyond_64_bits_become_floats_on_both_paths() -> None:
    big = "123456789012345678901234567890"
    assert same(loads_lenient(big), float(big))
    assert same(loads_lenient(f"[{big},]"), [float(big)])
    assert same(loads_lenient("[-9223372036854775809,]"), [-9223372036854775809.0])


def test_nested_structure_with_repairs() -> None:
    depth = 45  # 90 levels: within the limit of 100
    text = "{a: [" * depth + "'x'," + "],}" * depth
    value = loads_lenient(text)
    for _ in range(depth):
        value = value["a"][0]
    assert value == "x"


PARTIALS = [
    ('{"a": 1, "b": [1, 2', {"a": 1, "b": [1, 2]}),
    ('{"name": "Jo', {"name": "Jo"}),
    ('{"a": 1, "b', {"a": 1}),
    ('{"a": 1, "b"', {"a": 1}),
    ('{"a": 1, "b":', {"a": 1}),
    ('{"a": 1, b', {"a": 1}),
    ('{"a": tr', {}),
    ("[1, nul", [1]),
    ("[1, Fals", [1]),
    ("[1, true", [1, True]),
    ("[1, 2,", [1, 2]),
    ('{"a": -', {}),
    ("[1.5e", [1.5]),
    ("[12", [12]),
    ('{"a": "x\\', {"a": "x"}),
    ('{"a": "x\\u00', {"a": "x"}),
    ('{"a": "\\ud83d\\ude', {"a": ""}),
    ('{"a": "\\ud83d\\', {"a": ""}),
    ('[{"a": [{"b": "c', [{"a": [{"b": "c"}]}]),
    ('```json\n{"a": [1', {"a": [1]}),
    ('Here: {"a": 1, "b": {"c": ', {"a": 1, "b": {}}),
    ('{"a": 1 /', {"a": 1}),
    ('{"a": 1 /* still writing', {"a": 1}),
    ("{'a': 'it", {"a": "it"}),
    ('"abc', "abc"),
    ("{", {}),
    ('{"a": 1} and then', {"a": 1}),
    ("Here: [", []),
    # An unfinished opener at the very end is a value that has just begun.
    ("x [" * 1000, []),
    ("[1 2", [1, 2]),
    ('{"a": [1, 2]}', {"a": [1, 2]}),
]


@pytest.mark.parametrize(("text", "expected"), PARTIALS)
def test_partial(text: str, expected: Any) -> None:
    assert same(loads_lenient(text, partial=True), expected)


@pytest.mark.parametrize("text", ["", "   ", "tr", "-", "Sure, ", "```json\n", "{" * 1000])
def test_partial_without_a_value_raises(text: str) -> None:
    with pytest.raises(OutputError):
        loads_lenient(text, partial=True)


ERRORS = [
    ("", 0, "end of text"),
    ("no json here", 0, "unquoted word 'no'"),
    ('{"a": 1,, "b": 2}', 8, "expected a key"),
    ('{"a": 1', 7, "end of text"),
    ("[a, b]", 1, "unquoted word 'a'"),
    ("[1x]", 2, "expected ','"),
    ("'unterminated", 13, "unterminated string"),
    ('{"a": 1 /* never closed', 8, "unclosed comment"),
    ("42 is the answer", 3, "after the value"),
    ('Here: "quoted"', 0, "unquoted word"),
    ("[1, 2] tail", None, None),
    ('{"a": {"b": 1}, "c": ', 21, "end of text"),
    ("[-]", 1, "invalid number"),
    ("[.]", 1, "unexpected '.'"),
    ("[1,,2]", 3, "unexpected ','"),
    ("{1: 2}", 1, "expected a key"),
]


@pytest.mark.parametrize(("text", "position", "reason"), ERRORS)
def test_errors(text: str, position: int | None, reason: str | None) -> None:
    if position is None:  # prose after an array is fine: a control case for the table
        assert loads_lenient(text) == [1, 2]
        return
    with pytest.raises(OutputError) as caught:
        loads_lenient(text)
    error = caught.value
    assert error.position == position
    assert reason is not None and reason in str(error)
    assert reason in error.details["reason"]
    # The message shows the text on both sides of the failure point.
    snippet = text[max(0, position - 24) : position] + "<HERE>" + text[position : position + 24]
    assert repr(snippet) in str(error)


@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.parametrize("text", ["[" * 100_000, '{"a":' * 100_000, '[{"a": ' * 50_000])
def test_deep_nesting_raises_output_error(text: str, partial: bool) -> None:
    with pytest.raises(OutputError, match="deeper than 100"):
        loads_lenient(text, partial=partial)


@pytest.mark.parametrize("text", ["{" * 100_000, "x [" * 30_000, "{a: " * 30_000 + "x"])
def test_many_failing_candidates_raise_output_error(text: str) -> None:
    with pytest.raises(OutputError):
        loads_lenient(text)


def test_search_limit_raises_output_error(monkeypatch: pytest.MonkeyPatch) -> None:
    text = 'x {a b} {"a": 1}'
    assert loads_lenient(text) == {"a": 1}
    monkeypatch.setattr(_lenient, "_SEARCH_BUDGET", 0)
    with pytest.raises(OutputError, match="search limit reached") as caught:
        loads_lenient(text)
    assert caught.value.position == 2


def test_one_nesting_limit_for_the_fast_path_and_the_repairs() -> None:
    assert loads_lenient("[" * 100 + "]" * 100 + " ok") is not None
    assert loads_lenient("[" * 100 + "]" * 100) is not None
    with pytest.raises(OutputError, match="deeper than 100"):
        loads_lenient("[" * 101 + "]" * 101 + " ok")
    with pytest.raises(OutputError, match="deeper than 100"):
        loads_lenient("[" * 101 + "]" * 101)  # valid JSON, orjson's own path


def test_deep_partial_closes_without_recursion() -> None:
    value = loads_lenient('{"a": [' * 50, partial=True)  # 100 levels, the limit
    depth = 0
    while value["a"]:
        value = value["a"][0]
        depth += 1
    assert depth == 49
    with pytest.raises(OutputError, match="deeper than 100"):
        loads_lenient('{"a": [' * 51, partial=True)


# --- properties ---------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5)
    ),
    max_leaves=25,
)
containers = st.lists(values, max_size=5) | st.dictionaries(st.text(), values, max_size=5)
jsonish = st.text(
    alphabet="{}[]\"',:/*\\ \n\tabenrtuflsNTF0123456789.-+eE`$_u#\u201c\u201d\u2018\u2019"
)
FAST = settings(max_examples=200, deadline=None)


@FAST
@given(values)
def test_dumped_values_parse_back_unchanged(value: Any) -> None:
    assert same(loads_lenient(orjson.dumps(value).decode()), value)
    assert same(loads_lenient(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()), value)


@FAST
@given(values)
def test_fenced_values_are_recovered(value: Any) -> None:
    dumped = orjson.dumps(value).decode()
    assert same(loads_lenient(f"```json\n{dumped}\n```"), value)
    assert same(loads_lenient(f"Here you go:\n```\n{dumped}\n```\nThanks"), value)


@FAST
@given(containers)
def test_values_in_prose_are_recovered(value: Any) -> None:
    dumped = orjson.dumps(value).decode()
    assert same(loads_lenient(f"Here you go:\n{dumped}\nThanks"), value)


@FAST
@given(values)
def test_trailing_commas_are_recovered(value: Any) -> None:
    text = with_trailing_commas(value)
    assert same(loads_lenient(text), value)
    assert same(loads_lenient(f"```json\n{text}\n```"), value)


@FAST
@given(st.text() | jsonish)
def test_any_text_gives_a_value_or_output_error(text: str) -> None:
    for partial in (False, True):
        try:
            loads_lenient(text, partial=partial)
        except OutputError as exc:
            assert exc.position is not None and 0 <= exc.position <= len(text)


@FAST
@given(values)
def test_every_prefix_parses_in_partial_mode(value: Any) -> None:
    text = orjson.dumps(value).decode()
    for end in range(len(text)):
        try:
            result = loads_lenient(text[:end], partial=True)
        except OutputError:
            assert not isinstance(value, list | dict) or end == 0
        else:
            if isinstance(value, list | dict):
                assert type(result) is type(value)
    assert same(loads_lenient(text, partial=True), value)


def without_commas(value: Any) -> str:
    """JSON text with a space where every comma between members and items was."""
    if isinstance(value, list):
        return "[" + " ".join(without_commas(item) for item in value) + "]"
    if isinstance(value, dict):
        items = (orjson.dumps(k).decode() + ": " + without_commas(v) for k, v in value.items())
        return "{" + " ".join(items) + "}"
    return orjson.dumps(value).decode()


short_keys = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=20), children, max_size=5)
    ),
    max_leaves=25,
)


@FAST
@given(short_keys)
def test_missing_commas_are_recovered(value: Any) -> None:
    text = without_commas(value)
    assert same(loads_lenient(text), value)
    assert same(loads_lenient(text, partial=True), value)


def python_repr(value: Any) -> str:
    """What `repr` of the value looks like: single quotes, True, None."""
    if isinstance(value, list):
        return "[" + ", ".join(python_repr(item) for item in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{python_repr(k)}: {python_repr(v)}" for k, v in value.items()) + "}"
        )
    if isinstance(value, str):
        return "'" + orjson.dumps(value).decode()[1:-1].replace("'", "\\'") + "'"
    if value is None or isinstance(value, bool):
        return repr(value)
    return orjson.dumps(value).decode()


@FAST
@given(containers)
def test_python_literals_are_recovered(value: Any) -> None:
    assert same(loads_lenient(python_repr(value)), value)


@FAST
@given(values)
def test_every_repaired_value_is_json(value: Any) -> None:
    """Whatever the repairs, the value is one orjson can write (no NaN, depth within the limit)."""
    for text in (with_trailing_commas(value), without_commas(value)):
        try:
            result = loads_lenient(text)
        except OutputError:
            continue
        assert same(orjson.loads(orjson.dumps(result)), result)
