"""The streaming fast path: every prefix gives what `loads_lenient(..., partial=True)` gives."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgraph import OutputError, loads_lenient
from agentgraph.structured import _prefix
from agentgraph.structured._prefix import PrefixParser
from tests.test_parse import JSON, same

HEADS = ["", "  ", "Sure!\n", "```json\n", "Here:\n```json\n", "Use {x}: ", "Use [1]: "]
HEADS += ["// c\n", "\ufeff", "'q' ", "1. ", "```\n", "x", "```python\nx = 1\n```\n```json\n"]
TAILS = ["", "\n```", "\n```\nMore?", " done", "\n``", ' {"z": 1}', "\n```\n```json\n[2]\n```"]
ALPHABET = list("{}[]\",:0123456789-.eEtrufalsn \n\\u'`/*xD8C")
ALPHABET += list("#+\u201c\u201d\u2018\u2019J;")  # the repairs: comments, numbers, quotes, words


def render(value: Any, how: int) -> str:
    if how == 0:
        return orjson.dumps(value).decode()
    if how == 1:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    return json.dumps(value, ensure_ascii=True)  # \u escapes, surrogate pairs included


def assert_agrees(text: str, step: int) -> None:
    """Feed `text` in pieces of `step`; each prefix must match the lenient parser."""
    parser = PrefixParser()
    for end in [*range(0, len(text), step), len(text)]:
        prefix = text[:end]
        try:
            want = loads_lenient(prefix, partial=True)
        except OutputError:
            with pytest.raises(OutputError):
                parser.parse(prefix)
            continue
        got = parser.parse(prefix)
        assert same(got, want), f"{prefix!r}: {got!r} != {want!r}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=JSON,
    how=st.integers(0, 2),
    head=st.sampled_from(HEADS),
    tail=st.sampled_from(TAILS),
    step=st.integers(1, 5),
)
def test_streamed_json_agrees_with_the_lenient_parser(value, how, head, tail, step):
    assert_agrees(head + render(value, how) + tail, step)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(ALPHABET), max_size=40), step=st.integers(1, 3))
def test_streamed_noise_agrees_with_the_lenient_parser(text, step):
    assert_agrees(text, step)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "x\\u00e9y\\ud83d\\ude00z", "b": [1, -2.5e+3, true, null], "c": {}}',
        'Sure! {"a": 1, "b": "tail"} Anything else?',
        'Here:\n```json\n{"a": [1, 2], "b": "x"}\n```\nDone.',
        '{"a": 012}',
        '{"a": 1,}',
        "{'a': 1}",
        '{"a": "line\nbreak"}',
        '{"a": "\\ud83d"}',
        "[1, tru, 2]",
    ],
)
def test_known_cases_agree_at_every_prefix(text):
    assert_agrees(text, 1)


def test_clean_json_never_reaches_the_lenient_parser(monkeypatch):
    text = 'Sure:\n```json\n{"a": "x\\"y", "b": [1.5, true, {"c": null}]}'
    expected = loads_lenient(text, partial=True)

    def refuse(text: str, **_: Any) -> Any:
        raise AssertionError("the lenient parser ran on clean JSON")

    monkeypatch.setattr(_prefix, "loads_lenient", refuse)
    parser = PrefixParser()
    for end in range(text.index("{") + 1, len(text) + 1):
        parser.parse(text[:end])
    assert parser.parse(text) == expected


def test_text_the_fast_path_does_not_follow_goes_to_the_lenient_parser():
    parser = PrefixParser()
    assert parser.parse("{'a': 1, 'b'") == {"a": 1}
    assert parser.parse("{'a': 1, 'b': [Tr") == {"a": 1, "b": []}
    with pytest.raises(OutputError):
        parser.parse("Sure")
