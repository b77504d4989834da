"""agentgraph's evaluators agree with pydantic-evals' own on the same outputs and runs.

pydantic-evals reads tool calls and model requests from OpenTelemetry spans;
`OtelSink` emits those spans for the same run whose events agentgraph's
evaluators read, so both score one run.
"""

import dataclasses
import datetime
import enum
import json
from typing import Any

import pytest

pytest.importorskip("pydantic_evals", reason="pydantic-evals is a dev dependency")
pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")

import pydantic
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_evals import Dataset as PydanticDataset
from pydantic_evals import evaluators as pe
from pydantic_evals.evaluators import EvaluatorContext
from pydantic_evals.otel.span_tree import SpanTree

from agentgraph import AgentContext, GraphRunner, tool
from agentgraph.evals import (
    Case,
    Contains,
    Dataset,
    Equals,
    EqualsExpected,
    IsInstance,
    MaxModelRequests,
    MaxToolCalls,
    Outcome,
    ToolArguments,
    Trajectory,
)
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel
from agentgraph.tracing import OtelSink

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Record:
    """Fields whose JSON forms differ from their Python values, and a record inside."""

    pair: tuple[int, int]
    when: datetime.date
    color: Color
    at: Point
    points: list[Point]


class Model(pydantic.BaseModel):
    a: int
    b: list[int]
    pair: tuple[int, int] = (1, 2)
    color: Color = Color.RED
    at: Point = Point(0, 0)


RECORD = Record((1, 2), datetime.date(2024, 5, 1), Color.RED, Point(3, 4), [Point(5, 6)])
MODEL = Model(a=1, b=[1, 2])


OUTPUTS = [
    ("The answer is 5.", "5"),
    ("The answer is 5.", "answer IS"),
    ("hello", "hello"),
    ({"a": 1, "b": [1, 2]}, {"a": 1}),
    ({"a": 1, "b": [1, 2]}, {"a": 2}),
    ({"a": 1}, "a"),
    ({"a": 1}, "z"),
    ([1, 2, 3], 2),
    ([1, 2, 3], 4),
    (Point(1, 2), {"x": 1}),
    (Point(1, 2), {"y": 3}),
    (Point(1, 2), "x"),
    (42, 4),
    (None, "x"),
    ("42", 42),
    (RECORD, {"pair": (1, 2)}),
    (RECORD, {"pair": [1, 2]}),
    (RECORD, {"when": datetime.date(2024, 5, 1)}),
    (RECORD, {"when": "2024-05-01"}),
    (RECORD, {"color": Color.RED}),
    (RECORD, {"color": "red"}),
    (RECORD, {"at": {"x": 3, "y": 4}}),
    (RECORD, {"at": Point(3, 4)}),
    (RECORD, {"points": [{"x": 5, "y": 6}]}),
    (RECORD, {"pair": (1, 2), "color": Color.BLUE}),
    (RECORD, "when"),
    (RECORD, "nope"),
    (MODEL, {"a": 1}),
    (MODEL, {"a": 1, "b": [1, 2]}),
    (MODEL, {"b": [2]}),
    (MODEL, "b"),
    (MODEL, "z"),
    (MODEL, {"pair": (1, 2), "color": Color.RED}),
    (MODEL, {"at": {"x": 0, "y": 0}}),
    ({"pair": (1, 2)}, {"pair": (1, 2)}),
]


def both(output, expected=None, *, span_tree=None, events=(), inputs="q"):
    ours = Outcome(Case("c", inputs, expected), AgentContext(output), tuple(events))
    theirs = EvaluatorContext(
        name="c",
        inputs=inputs,
        metadata=None,
        expected_output=expected,
        output=output,
        duration=0.0,
        _span_tree=span_tree if span_tree is not None else SpanTree(),
        attributes={},
        metrics={},
    )
    return ours, theirs


def value_of(result):
    return result.value if isinstance(result, pe.EvaluationReason) else result


@pytest.mark.parametrize(("output", "value"), OUTPUTS)
def test_equals_contains_and_is_instance_agree(output, value):
    ours, theirs = both(output, expected=value)
    pairs = [
        (Equals(value), pe.Equals(value)),
        (EqualsExpected(), pe.EqualsExpected()),
        (Contains(value), pe.Contains(value)),
        (Contains(value, case_sensitive=False), pe.Contains(value, case_sensitive=False)),
        (Contains(value, as_strings=True), pe.Contains(value, as_strings=True)),
        (IsInstance(type(value).__name__), pe.IsInstance(type(value).__name__)),
        (IsInstance("Point"), pe.IsInstance("Point")),
        (IsInstance("object"), pe.IsInstance("object")),
    ]
    for mine, reference in pairs:
        score = mine.evaluate(ours)
        if isinstance(score, tuple):
            (score,) = score
        assert score.value == value_of(reference.evaluate_sync(theirs)), mine


def test_equals_expected_gives_no_score_without_an_expected_output_as_pydantic_evals():
    ours, theirs = both("x", expected=None)
    assert EqualsExpected().evaluate(ours) == ()
    assert pe.EqualsExpected().evaluate_sync(theirs) == {}


@tool
def search(query: str) -> str:
    """Search."""
    return f"results for {query}"


@tool
def fetch(url: str, page: int = 1) -> str:
    """Fetch a page."""
    return f"page {page} of {url}"


@tool
def calculate(op: str, a: float, b: float) -> float:
    """Calculate."""
    if op == "div" and b == 0:
        raise ZeroDivisionError("division by zero")
    return a + b


RUNS = {
    "none": [],
    "one": [[("calculate", {"op": "add", "a": 1, "b": 2})]],
    "three": [
        [("search", {"query": "weather"})],
        [("fetch", {"url": "https://a.example", "page": 2})],
        [("calculate", {"op": "add", "a": 1, "b": 2})],
    ],
    "failed": [
        [("search", {"query": "a"})],
        [("search", {"query": "b"})],
        [("calculate", {"op": "div", "a": 1, "b": 0})],
        [("calculate", {"op": "add", "a": 1, "b": 1})],
    ],
    "backwards": [
        [("fetch", {"url": "u"})],
        [("search", {"query": "q"})],
        [("fetch", {"url": "v"})],
    ],
}

TRAJECTORIES = [
    [],
    ["calculate"],
    ["search", "fetch", "calculate"],
    ["search", "search", "calculate"],
    ["fetch", "search"],
    ["calculate", "search", "x", "fetch"],
]

ARGUMENTS = [
    ("calculate", {"op": "add"}, "subset", "first"),
    ("calculate", {"op": "add", "a": 1, "b": 2}, "exact", "first"),
    ("calculate", {"op": "add", "a": 1}, "exact", "last"),
    ("calculate", {"op": "div"}, "subset", 0),
    ("fetch", {"url": "v"}, "subset", "last"),
    ("fetch", {"url": "u"}, "subset", 1),
    ("fetch", {"page": 2}, "subset", "first"),
    ("search", {"query": "b"}, "exact", 1),
    ("search", {}, "subset", 5),
    ("missing", {}, "subset", "first"),
]


async def run_with_spans(turns):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    replies = [ScriptedModel.tool_calls(*turn) for turn in turns] + ["done"]
    graph = react_agent(ScriptedModel(*replies), [search, fetch, calculate], max_turns=8)
    events = []
    sink = OtelSink(provider, capture_content=True)
    await GraphRunner(sinks=[sink, events.append]).run(graph, AgentContext("go"))
    tree = SpanTree()
    tree.add_readable_spans(list(exporter.get_finished_spans()))
    return events, tree


@pytest.mark.parametrize("run", sorted(RUNS))
async def test_trajectories_arguments_and_counts_agree(run):
    events, tree = await run_with_spans(RUNS[run])
    ours, theirs = both("done", span_tree=tree, events=events)
    for expected in TRAJECTORIES:
        for order in ("exact", "in_order", "any_order"):
            for failed in (False, True):
                mine = Trajectory(expected, order=order, include_failed=failed).evaluate(ours)
                reference = pe.TrajectoryMatch(expected, order=order, include_failed=failed)
                assert float(mine.value) == pytest.approx(reference.evaluate_sync(theirs).value), (
                    expected,
                    order,
                    failed,
                )
    for tool_name, wanted, mode, occurrence in ARGUMENTS:
        mine = ToolArguments(tool_name, wanted, mode=mode, occurrence=occurrence).evaluate(ours)
        reference = pe.ArgumentCorrectness(
            tool_name, wanted, match_mode=mode, occurrence=occurrence
        ).evaluate_sync(theirs)
        assert mine.value == reference.value, (tool_name, wanted, mode, occurrence)
    for limit in range(6):
        for failed in (False, True):
            mine = MaxToolCalls(limit, include_failed=failed).evaluate(ours)
            reference = pe.MaxToolCalls(limit, include_failed=failed).evaluate_sync(theirs)
            assert mine.value == reference.value
        mine = MaxModelRequests(limit).evaluate(ours)
        assert mine.value == pe.MaxModelRequests(limit).evaluate_sync(theirs).value


async def test_parallel_calls_in_one_response_agree_ignoring_order():
    turn = [("search", {"query": "a"}), ("fetch", {"url": "u"}), ("search", {"query": "b"})]
    events, tree = await run_with_spans([turn])
    ours, theirs = both("done", span_tree=tree, events=events)
    for expected in TRAJECTORIES:
        mine = Trajectory(expected, order="any_order").evaluate(ours)
        reference = pe.TrajectoryMatch(expected, order="any_order").evaluate_sync(theirs)
        assert mine.value == pytest.approx(reference.value)


DATASET_YAML = """\
# yaml-language-server: $schema=arithmetic_schema.json
name: arithmetic
cases:
- name: sum
  inputs: What is 2 + 3?
  expected_output: '5'
  metadata:
    difficulty: easy
  evaluators:
  - Contains: '5'
- inputs:
    question: What is 4 * 5?
    units: none
  expected_output: 20
- name: trajectory
  inputs: q
  evaluators:
  - TrajectoryMatch:
      expected_trajectory: [search, fetch]
      order: any_order
  - ArgumentCorrectness:
      tool_name: search
      expected_arguments: {query: weather}
      match_mode: exact
  - MaxToolCalls: 3
evaluators:
- EqualsExpected
- IsInstance: str
- MaxDuration: 2.5
- MaxModelRequests:
    max_requests: 4
    evaluation_name: requests
"""


def test_a_pydantic_evals_dataset_file_loads_to_the_same_cases(tmp_path):
    path = tmp_path / "arithmetic.yaml"
    path.write_text(DATASET_YAML)
    theirs = PydanticDataset[Any, Any, Any].from_file(path)
    ours = Dataset.from_pydantic_evals(path)
    assert ours.name == theirs.name == "arithmetic"
    assert len(ours.cases) == len(theirs.cases)
    for mine, reference in zip(ours.cases, theirs.cases, strict=True):
        assert mine.input == reference.inputs
        assert mine.expected == reference.expected_output
        assert dict(mine.metadata) == (reference.metadata or {})
        assert mine.name == (reference.name or f"Case {ours.cases.index(mine) + 1}")
        assert [type(e).__name__ for e in reference.evaluators] == [
            {"Contains": "Contains", "TrajectoryMatch": "TrajectoryMatch"}.get(n, n)
            for n in [_pydantic_name(e) for e in mine.evaluators]
        ]
    assert [_pydantic_name(e) for e in ours.evaluators] == [
        type(e).__name__ for e in theirs.evaluators
    ]
    assert ours.evaluators[3] == MaxModelRequests(4, name="requests")
    assert ours.cases[2].evaluators == (
        Trajectory(["search", "fetch"], order="any_order"),
        ToolArguments("search", {"query": "weather"}, mode="exact"),
        MaxToolCalls(3),
    )
    json_path = tmp_path / "arithmetic.json"
    theirs.to_file(json_path)  # pydantic-evals writes `$schema` and a schema file beside it
    assert "$schema" in json.loads(json_path.read_text())
    again = Dataset.from_pydantic_evals(json_path)
    assert [(c.name, c.input, c.expected) for c in again.cases] == [
        (c.name, c.input, c.expected) for c in ours.cases
    ]


def _pydantic_name(evaluator):
    return {
        "Trajectory": "TrajectoryMatch",
        "ToolArguments": "ArgumentCorrectness",
    }.get(type(evaluator).__name__, type(evaluator).__name__)
