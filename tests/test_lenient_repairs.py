"""Each repair class and each refusal, in the plain, the `partial=True` and the streaming modes."""

from __future__ import annotations

import contextlib
import math
import re
import textwrap
from typing import Any

import attrs
import pytest

from agentgraph import (
    AgentContext,
    ContextEncodingError,
    GraphBuilder,
    GraphRunner,
    OutputError,
    StructuredOutput,
    loads_lenient,
)
from agentgraph.nodes import generate
from agentgraph.structured import Repaired, parse, repair_json, validate
from agentgraph.structured import _lenient as lenient_module
from agentgraph.structured._prefix import PrefixParser
from agentgraph.testing import ScriptedModel
from tests.test_lenient import same
from tests.test_prefix import assert_agrees

# (text, value, the repair it needs)
REPAIRS = [
    ('{"a": 1 "b": 2}', {"a": 1, "b": 2}, "missing comma"),
    ('{"a": "x"\n "b": [1 2 3]}', {"a": "x", "b": [1, 2, 3]}, "missing comma"),
    ('["a" "b", {"c": 1} {"d": 2}]', ["a", "b", {"c": 1}, {"d": 2}], "missing comma"),
    ('{"name": John}', {"name": "John"}, "unquoted value"),
    ('{"name": John Smith, "age": 3}', {"name": "John Smith", "age": 3}, "unquoted value"),
    ('{"url": http://x.org/a, "n": 1}', {"url": "http://x.org/a", "n": 1}, "unquoted value"),
    ('{"v": "say "hi" now"}', {"v": 'say "hi" now'}, "inner quote"),
    ('{"v": "he said "yes", then left"}', {"v": 'he said "yes", then left'}, "inner quote"),
    ("{'name': 'O'Brien', 'n': 2}", {"name": "O'Brien", "n": 2}, "inner quote"),
    ('["a "b" c", "d"]', ['a "b" c', "d"], "inner quote"),
    ("{\u201cname\u201d: \u201cAnn\u201d}", {"name": "Ann"}, "smart quotes"),
    ("{\u2018a\u2019: \u2018it\u2019s\u2019}", {"a": "it\u2019s"}, "smart quotes"),
    ('{"a": 1, # the count\n "b": 2}', {"a": 1, "b": 2}, "comment"),
    ("# result\n[1, 2]", [1, 2], "comment"),
    ("[.25, 1., +3, -.5]", [0.25, 1.0, 3, -0.5], "number form"),
    ('{"a": 1, ... "b": 2}', {"a": 1, "b": 2}, "stray text"),
    ('{"a": 1,\n  and also\n  "b": 2}', {"a": 1, "b": 2}, "stray text"),
    ('{"a": 1, "b": }', {"a": 1}, "missing value"),
    ('{"a": , "b": 2}', {"b": 2}, "missing value"),
    ('```json\n{"a": 1,}\n```', {"a": 1}, "trailing comma"),
    ('Sure! {"a": True} Bye', {"a": True}, "python literal"),
    ('{"a": "x\ny"}', {"a": "x\ny"}, "control character"),
    ("{a: 1}", {"a": 1}, "unquoted key"),
    ("{'a': 1}", {"a": 1}, "single quotes"),
    # Shapes from json_repair's own tests, once read as other values.
    ('{"a": TRUE, "b": FALSE, "c": NULL}', {"a": True, "b": False, "c": None}, "literal case"),
    ("[TRUE, Null]", [True, None], "literal case"),
    ('{""ask"": [{""who"": ""aged 60+""}]}', {"ask": [{"who": "aged 60+"}]}, "doubled quotes"),
    ("{''a'': ''x y''}", {"a": "x y"}, "doubled quotes"),
    ('{"a": "", "b": ["" "x"]}', {"a": "", "b": ["", "x"]}, "missing comma"),
    ('{"key": "v"alue", "k2": "v2"}', {"key": 'v"alue', "k2": "v2"}, "inner quote"),
]


@pytest.mark.parametrize(("text", "value", "repair"), REPAIRS)
def test_each_repair_in_every_mode(text: str, value: Any, repair: str) -> None:
    assert same(loads_lenient(text), value)
    assert same(loads_lenient(text, partial=True), value)
    fixed = repair_json(text)
    assert same(fixed.value, value) and repair in fixed.repairs
    assert same(PrefixParser().parse(text), value)
    assert_agrees(text, 1)


REFUSALS = [
    # The issue's silently wrong values: an inner value of a broken outer one.
    ('{"x": "a, {"k": 1}, "y": 2}', "ambiguous"),
    ('{"a": "b" {"k": 1}}', "ambiguous"),
    ('{"name": "report", "note": "typed {"verbose": true} here"}', "ambiguous"),
    ('{"a": "x, "b": 2, "tags": ["t"]}', "ambiguous"),
    ('{"a": "x, {"b": 2}, "tags": ["t"], "c": 3}', "ambiguous"),
    ('{"a": 1 /* note {"k": 1}', "unclosed comment"),
    ('Result: {"items": [1, 2, {"k": 1}', "end of text"),
    # Two different values.
    ('{"a": 1}{"b": 2}', "ambiguous"),
    ('Either {"a": 1} or [2]', "ambiguous"),
    # Not JSON, and no safe reading.
    ('{"a": NaN}', "NaN is not JSON"),
    ("[1, -Infinity]", "Infinity is not JSON"),
    ("[a, b]", "unquoted word 'a'"),
    ("{'a', 'b'}", "unterminated string"),
    ('{"width": 5px}', "expected ','"),
    ("[012]", "expected ','"),
    ('{"a": 1, b}', "expected a key"),
    ('{"a": 1,, "b": 2}', "expected a key"),
    ("[1,,2]", "unexpected ','"),
    # Shapes from json_repair's own tests, once read as other values: a quote that may
    # end its string early, a bracket that closed early, a tuple.
    ('{"key": "value", 5: "value"}', "before ', key:' \\(ambiguous\\)"),
    ('["value1" value2", "value3"]', "no pair"),
    ('{"bad": ["Lorem", "consectetur" comment" ], "good": ["elit"]}', "no pair"),
    ('{"key": ""value"}', "no pair"),
    ('{"key": "value"}, "key2": "value2"}', "goes on after the closing bracket"),
    ('{"key": "value"}, "key2" "value2"}', "goes on after the closing bracket"),
    ('Here: {"a": 1}, "b": 2}', "goes on after the closing bracket"),
    ('{"key": "{\\"k\\":[\\"v\\"],\\"k2\\":"v2"}"}', "goes on after the closing bracket"),
    ('{"empty": ()}', "unexpected '\\('"),
    ('{"pair": (1, 2)}', "unexpected '\\('"),
    ("0/*[]", "unclosed comment"),  # the list is inside the comment
]


@pytest.mark.parametrize(("text", "reason"), REFUSALS)
def test_refusals_in_every_mode(text: str, reason: str) -> None:
    with pytest.raises(OutputError, match=reason) as caught:
        loads_lenient(text)
    assert caught.value.attempts == (text,)
    assert caught.value.position is not None
    assert_agrees(text, 1)  # partial mode and the stream agree, whatever they give
    with pytest.raises(OutputError):
        parse(Any, text)  # orjson's shortcuts for prose around JSON take none of these


def test_json_closed_early_in_prose_is_refused_by_typed_parsing_too() -> None:
    with pytest.raises(OutputError, match="goes on after the closing bracket"):
        parse(dict, 'Here: {"a": 1} "b"')


@attrs.frozen
class Options:
    name: str = "default"
    note: str = ""
    verbose: bool = False


def test_the_issues_examples_are_refused() -> None:
    # Never Options(verbose=True, name="default"): a quote before ':' inside a string
    # reads both as text and as a key, so the answer is refused and can be asked again.
    text = '{"name": "report", "note": "the user typed {"verbose": true} here"}'
    with pytest.raises(OutputError, match="ambiguous") as caught:
        parse(Options, text)
    assert caught.value.errors[0].startswith("$: cannot parse JSON: a quote inside a string")
    with pytest.raises(OutputError):
        parse(dict[str, int], '{"x": "a, {"k": 1}, "y": 2}')
    # Inner quotes that read one way only are repaired.
    assert parse(Options, '{"note": "the user typed "verbose" here"}') == Options(
        note='the user typed "verbose" here'
    )


def test_ambiguity_names_both_offsets() -> None:
    with pytest.raises(OutputError, match="ambiguous") as caught:
        loads_lenient('Sure: {"a": 1} or {"a": 2}')
    assert caught.value.details == {"reason": "ambiguous", "offsets": [6, 18]}
    assert caught.value.position == 18
    # The same value twice is not ambiguous.
    assert loads_lenient('{"a": 1} and again {"a": 1}') == {"a": 1}


@attrs.frozen
class Point:
    x: int
    y: int


def test_the_type_chooses_among_readings() -> None:
    text = 'See [1] for details: {"x": 1, "y": 2}'
    with pytest.raises(OutputError, match="ambiguous"):
        loads_lenient(text)
    assert parse(Point, text) == Point(1, 2)
    assert parse(list[int], text) == [1]
    with pytest.raises(OutputError, match="ambiguous") as caught:
        parse(Point, '{"x": 1, "y": 2} or {"x": 3, "y": 4},')
    assert caught.value.errors[0].startswith("$: ambiguous JSON")
    with pytest.raises(OutputError, match="Point"):
        parse(Point, "[1] or [2],")  # neither validates: the first one's problems


@attrs.frozen
class Reading:
    value: float
    unit: str


def test_nonfinite_numbers_only_in_float_fields_when_allowed() -> None:
    text = '{"value": NaN, "unit": "m",}'
    with pytest.raises(OutputError, match="NaN is not JSON"):
        parse(Reading, text)
    reading = parse(Reading, text, nonfinite=True)
    assert math.isnan(reading.value) and type(reading.value) is float
    assert parse(Reading, '{"value": -Infinity, "unit": "m"}', nonfinite=True).value == -math.inf
    with pytest.raises(OutputError, match="outside a float field"):
        parse(dict[str, Any], '{"value": NaN,}', nonfinite=True)
    with pytest.raises(OutputError):
        parse(Reading, '{"value": 1, "unit": NaN}', nonfinite=True)
    assert math.isinf(loads_lenient("[Infinity]", nonfinite=True)[0])
    # One that the caller let through still never reaches a checkpoint silently.
    with pytest.raises(ContextEncodingError, match="no JSON form"):
        AgentContext(reading).to_json()


def test_repairs_are_reported_in_order() -> None:
    assert repair_json('{"a": 1}') == Repaired({"a": 1}, ())
    fixed = repair_json("Here: {name: 'Ann' 'age': 3,} ok")
    assert fixed.value == {"name": "Ann", "age": 3}
    assert fixed.repairs == (
        "prose around",
        "unquoted key",
        "single quotes",
        "missing comma",
        "trailing comma",
    )
    assert repair_json('{"a": [1, 2', partial=True).repairs == ("closed at the end",)


@pytest.mark.anyio
async def test_generate_records_the_repairs_in_its_trace() -> None:
    model = ScriptedModel("{x: 1, y: 2,}")
    node = generate(Point, instruction="Where?", model=model)
    with GraphBuilder[str, Point]("point") as g:
        g.start.edge_to(node).edge_to(g.finish)
    events: list[Any] = []
    out = await GraphRunner(sinks=[events.append]).run(g.build(), AgentContext("go"))
    assert out.input == Point(1, 2)
    (event,) = [e for e in events if isinstance(e, StructuredOutput)]
    assert event.attempts[0].repairs == ("unquoted key", "trailing comma")


def test_unclosed_comments_are_scanned_once() -> None:
    # Each attempt charges the text it read, and no attempt starts inside a broken one.
    text = "[/*" * 33_333
    with pytest.raises(OutputError, match="unclosed comment"):
        loads_lenient(text)
    finder = lenient_module._Finder(text, False, False)
    with pytest.raises(OutputError):
        finder.readings()
    assert finder.budget >= lenient_module._SEARCH_BUDGET * (len(text) + 256) - 2 * len(text)


@pytest.mark.parametrize("unit", ["{", "x [", '["a" "', '{"a": "', "{a: ", '{"a":1,'])
def test_adversarial_shapes_charge_at_most_the_text(unit: str) -> None:
    text = unit * (20_000 // len(unit))
    finder = lenient_module._Finder(text, False, False)
    with contextlib.suppress(OutputError):
        finder.readings()
    assert finder.budget >= lenient_module._SEARCH_BUDGET * (len(text) + 256) - 2 * len(text)


@attrs.frozen
class Tree:
    child: Tree | None = None


def test_validation_depth_matches_the_parser() -> None:
    text = '{"child": ' * 99 + "{}" + "}" * 99  # 100 levels: the most the parser accepts
    tree = parse(Tree, text)
    for _ in range(99):
        assert tree.child is not None
        tree = tree.child
    with pytest.raises(OutputError, match="deeper than 100"):
        parse(Tree, '{"child": ' * 100 + "{}" + "}" * 100)
    data: dict[str, Any] = {}
    for _ in range(5_000):
        data = {"child": data}
    with pytest.raises(OutputError, match="deeper than 100"):
        validate(Tree, data)


def test_the_docstring_example_runs() -> None:
    doc = repair_json.__doc__ or ""
    (block,) = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    exec(textwrap.dedent(block), {"repair_json": repair_json})
