"""The three readings of a text agree on mutated JSON, at every prefix.

What "agree" means here, for a text `T` fed to a `PrefixParser` in pieces:

1. At every prefix `P`, `PrefixParser.parse(P)` and `loads_lenient(P, partial=True)`
   give the same value (same types all the way down), or both raise `OutputError`.
2. At the whole text, a stream value that closed nothing the end cut off (no
   `closed at the end` among its repairs) is the plain parse's value,
   `loads_lenient(T)`. Where the stream did close something, the plain parse
   reads the text as complete, so it may refuse it (`[1, 2`) or read it
   otherwise (`"[]` is a string so far, and a complete text holding a list);
   and the stream may refuse where the plain parse reads, when the end may
   still open a second value (`{"a": 1} {"b"`).

The cases are JSON values written by orjson with a few edits of the kinds
models make (a character dropped or doubled, a quote, bracket, comma or word
put in), so most of them are broken. `AGENTGRAPH_FUZZ_CASES` sets how many
(`make test-long` runs thousands).
"""

from __future__ import annotations

import os
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgraph import OutputError, loads_lenient, parse
from agentgraph.structured import repair_json
from agentgraph.structured._lenient import readings, single
from agentgraph.structured._parse import _MISSING, _shortcut
from agentgraph.structured._prefix import PrefixParser
from tests.test_parse import JSON, same

CASES = int(os.environ.get("AGENTGRAPH_FUZZ_CASES", "300"))

# What an edit puts in: the characters and words of JSON and of its usual repairs.
PIECES = list("{}[]\",:'` \n\\/#*-+.0123456789eE")
PIECES += ["\u201c", "\u201d", '""', "''", "//", "/*", "*/", "```", "```json\n"]
PIECES += ["NaN", "Infinity", "TRUE", "FALSE", "NULL", "Null", "None", "True", "null", "tru"]
PIECES += ["x", "key", "a b", "5", ", 5: ", ', "k": ', "Sure! ", " done."]

EDIT = st.tuples(st.sampled_from(("insert", "delete", "double")), st.floats(0, 1))
EDITS = st.lists(st.tuples(EDIT, st.sampled_from(PIECES)), min_size=1, max_size=3)


def mutate(text: str, edits: list[tuple[tuple[str, float], str]]) -> str:
    for (kind, where), piece in edits:
        at = min(int(where * len(text)), len(text))
        if kind == "insert":
            text = text[:at] + piece + text[at:]
        elif kind == "delete" and at < len(text):
            text = text[:at] + text[at + 1 :]
        elif at < len(text):
            text = text[: at + 1] + text[at:]
    return text


def reading(parse: Any, text: str) -> tuple[bool, Any]:
    try:
        return True, parse(text)
    except OutputError:
        return False, None


def assert_three_agree(text: str, step: int) -> None:
    """The agreement the module docstring defines, for `text` fed in pieces of `step`."""
    parser = PrefixParser()
    streamed: tuple[bool, Any] = (False, None)
    for end in [*range(0, len(text), step), len(text)]:
        prefix = text[:end]
        streamed = reading(parser.parse, prefix)
        want = reading(lambda t: loads_lenient(t, partial=True), prefix)
        assert streamed[0] == want[0], f"{prefix!r}: stream {streamed} != partial {want}"
        assert same(streamed[1], want[1]), f"{prefix!r}: stream {streamed} != partial {want}"
    if streamed[0] and "closed at the end" not in repair_json(text, partial=True).repairs:
        plain = reading(loads_lenient, text)
        assert plain[0], f"{text!r}: plain parse refused, stream {streamed}"
        assert same(plain[1], streamed[1]), f"{text!r}: plain {plain} != stream {streamed}"


@settings(
    max_examples=CASES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    value=JSON,
    indent=st.booleans(),
    edits=EDITS,
    step=st.integers(1, 4),
)
@pytest.mark.timeout(max(60, CASES // 5))
def test_stream_partial_and_plain_parse_agree_on_mutated_json(value, indent, edits, step):
    option = orjson.OPT_INDENT_2 if indent else 0
    assert_three_agree(mutate(orjson.dumps(value, option=option).decode(), edits), step)


@pytest.mark.parametrize(
    "text",
    [
        "NaN[",
        "-Infinity [1, 2]",
        'Infinity\n```json\n{"a": 1}\n```',
        "[" * 101 + "]" * 101,
        '{"":""","0":null}',  # a quote, then text to the end, is no key the end cut off
        "/*[]",  # the list is inside the comment, closed or not
        '"[]',
        '{"key": "value"}, "key2": "value2"}',
        '{"key": "value", 5: "value"}',
        '{""answer"": [{""traits"": ""aged 60+""}]}',
        '{"a": TRUE, "b": FALSE, "c": Null, "d": NULL}',
    ],
)
def test_known_disagreements_now_agree(text):
    assert_three_agree(text, 1)


# What models put before and after a JSON value: prose, fences, and the
# words and signs the lenient parser refuses outright (`NaN [1]`).
LEADS = ["", " ", "\ufeff", "Sure! ", "Here: ", "1 ", "true", "x: ", "-", "+", "- "]
LEADS += ["NaN", "NaN ", "-NaN", "+NaN ", "Infinity", "-Infinity ", "+Infinity", "NaNx "]
LEADS += ["Infinity_", "nan ", "NaN\n", "NaN // c\n", "```json\n", "NaN\n```json\n", '"q" ']
TAILS = ["", " ", " done.", "\n```", "\n```\n", " NaN", " [note]", " // c", ", 5: x"]


@settings(max_examples=CASES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lead=st.sampled_from(LEADS),
    value=JSON.filter(lambda v: isinstance(v, list | dict)),
    tail=st.sampled_from(TAILS),
    nonfinite=st.booleans(),
)
def test_the_fast_path_and_the_lenient_parser_agree_on_prose_wrapped_json(
    lead, value, tail, nonfinite
):
    """`parse`'s shortcuts give the lenient parser's value, or step aside where it refuses."""
    text = lead + orjson.dumps(value).decode() + tail
    fast = _shortcut(text)
    try:
        found = single(text, readings(text, nonfinite=nonfinite))
    except OutputError:
        assert fast is _MISSING, f"{text!r}: fast path {fast!r}, the lenient parser refuses"
        with pytest.raises(OutputError):
            parse(Any, text, nonfinite=nonfinite)
        return
    if fast is not _MISSING:
        assert same(fast, found.value), f"{text!r}: fast path {fast!r} != {found.value!r}"
    assert same(parse(Any, text, nonfinite=nonfinite), found.value)


@pytest.mark.parametrize(
    "text",
    [
        "NaN[]",
        "NaN [1]",
        "-Infinity{}",
        "+NaN [1]",
        'Infinity {"a": 1} done',
        "NaN\n```json\n[1]\n```",
        "NaN // [\n[1]",
    ],
)
def test_the_fast_path_refuses_what_the_lenient_parser_refuses(text):
    assert _shortcut(text) is _MISSING
    with pytest.raises(OutputError, match="is not JSON"):
        parse(Any, text)
    with pytest.raises(OutputError, match="is not JSON"):
        loads_lenient(text)
