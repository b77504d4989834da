"""Datasets: JSON lines and YAML round trips, inputs decoded through Types, typed errors."""

import enum

import attrs
import pytest

from agentgraph import AgentContext, Types
from agentgraph.evals import (
    Call,
    Case,
    Contains,
    Dataset,
    DatasetError,
    EqualsExpected,
    MaxSteps,
    Trajectory,
    ValidatesAs,
)
from agentgraph.llm import Message


class Level(enum.Enum):
    LOW = "low"
    HIGH = "high"


@attrs.frozen
class Ticket:
    title: str
    level: Level
    tags: tuple[str, ...] = ()


def rich_cases() -> list[Case]:
    ctx = AgentContext(Ticket("printer", Level.HIGH), system_prompt="Be brief.").append(
        Message.user("hello")
    )
    return [
        Case("text", "What is 2 + 3?", expected="5", metadata={"difficulty": "easy"}),
        Case("ticket", Ticket("disk full", Level.LOW, ("ops",)), expected=Level.LOW),
        Case("context", ctx, evaluators=[Contains("printer"), MaxSteps(3)]),
        Case(
            "calls",
            {"q": [1, 2]},
            evaluators=[Trajectory(["search", Call("fetch", {"page": 2})], order="exact")],
        ),
    ]


@pytest.mark.parametrize("suffix", [".jsonl", ".yaml"])
def test_a_dataset_saves_and_loads_back_the_same(tmp_path, suffix):
    evaluators = [EqualsExpected()] if suffix == ".yaml" else []
    dataset = Dataset(rich_cases(), name="tickets", evaluators=evaluators)
    path = tmp_path / f"tickets{suffix}"
    dataset.save(path)
    loaded = Dataset.load(path, types=Types.of(Ticket, Level))
    assert loaded.cases == dataset.cases
    assert loaded.evaluators == dataset.evaluators
    assert loaded.name == "tickets"


def test_a_type_the_graph_does_not_declare_is_refused_with_file_and_line(tmp_path):
    path = tmp_path / "tickets.jsonl"
    Dataset(rich_cases()).save(path)
    with pytest.raises(DatasetError) as caught:
        Dataset.load(path)  # Ticket is not among the types: never imported because data says so
    assert caught.value.line == 2 and caught.value.source == str(path)
    assert "test_datasets:Ticket" in str(caught.value)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"name": "a", "input": 1', "not JSON"),
        ("[1, 2]", "a case is an object"),
        ('{"name": "a"}', "either `input` or `context`"),
        ('{"name": "a", "input": 1, "answer": 2}', "no field 'answer'"),
        ('{"name": "", "input": 1}', "non-empty string"),
        ('{"name": "a", "input": 1, "evaluators": ["Nope"]}', "unknown evaluator 'Nope'"),
        ('{"name": "a", "input": 1, "evaluators": [{"Contains": 1, "x": 2}]}', "evaluator spec"),
        ('{"name": "a", "input": 1, "evaluators": [{"MaxSteps": {"most": 2}}]}', "MaxSteps"),
        ('{"name": "a", "input": {"$type": "os:system"}}', "not a type this decoder"),
        (
            '{"name": "a", "input": 1, "evaluators": [{"Trajectory": [{"arguments": {}}]}]}',
            "a call of a trajectory needs a 'name'",
        ),
    ],
)
def test_a_malformed_line_is_a_typed_error_naming_the_file_and_line(tmp_path, line, reason):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"name": "ok", "input": 1}\n\n' + line + "\n")
    with pytest.raises(DatasetError) as caught:
        Dataset.load(path)
    assert caught.value.line == 3
    assert reason in str(caught.value) and f"{path}, line 3" in str(caught.value)


def test_yaml_errors_name_the_line_of_the_case(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text("name: x\ncases:\n- name: a\n  input: 1\n- name: b\n  inputs: 2\n")
    with pytest.raises(DatasetError) as caught:
        Dataset.load(path)
    assert caught.value.line == 5 and "no field 'inputs'" in str(caught.value)
    path.write_text("cases: [\n")
    with pytest.raises(DatasetError, match="not YAML") as caught:
        Dataset.load(path)
    assert caught.value.line is not None


def test_duplicate_names_and_unknown_suffixes_are_refused(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"name": "a", "input": 1}\n{"name": "a", "input": 2}\n')
    with pytest.raises(DatasetError, match="two cases are named 'a'"):
        Dataset.load(path)
    with pytest.raises(DatasetError, match=r"\.jsonl, \.yaml or \.yml"):
        Dataset.load(tmp_path / "cases.csv")


def test_evaluators_a_file_cannot_name_are_refused_when_saving(tmp_path):
    from agentgraph import UsageError

    dataset = Dataset([Case("a", 1, evaluators=[ValidatesAs(int)])])
    with pytest.raises(UsageError, match="ValidatesAs cannot be written"):
        dataset.save(tmp_path / "a.jsonl")
    with pytest.raises(UsageError, match="save a dataset with evaluators as YAML"):
        Dataset([Case("a", 1)], evaluators=[EqualsExpected()]).save(tmp_path / "a.jsonl")


def test_unknown_pydantic_evals_specs_name_themselves(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text("cases:\n- inputs: 1\n  evaluators:\n  - HasMatchingSpan: {query: {}}\n")
    with pytest.raises(DatasetError, match="unsupported evaluator 'HasMatchingSpan'") as caught:
        Dataset.from_pydantic_evals(path)
    assert caught.value.line == 2
    path.write_text("cases:\n- inputs: 1\nevaluators:\n- LLMJudge: be nice\n")
    with pytest.raises(DatasetError, match="'LLMJudge' needs a judge model"):
        Dataset.from_pydantic_evals(path)
    path.write_text("cases:\n- inputs: 1\nreport_evaluators:\n- ConfusionMatrixEvaluator\n")
    with pytest.raises(DatasetError, match="report evaluator 'ConfusionMatrixEvaluator'"):
        Dataset.from_pydantic_evals(path)


def test_the_package_imports_neither_pydantic_evals_nor_yaml_nor_rich():
    import subprocess
    import sys

    code = (
        "import sys, agentgraph.evals\n"
        "names = ('pydantic_evals', 'pydantic', 'yaml', 'rich')\n"
        "print(sorted(m for m in names if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
