"""`python -m agentgraph eval`: reports, and an exit status CI can gate on."""

import io
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from agentgraph._cli import main
from agentgraph.evals import Case, Dataset, Report

from .agents import cases

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests.evals.agents:agent"
EVALUATORS = "tests.evals.agents:EVALUATORS"


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(["eval", *map(str, argv)], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_an_evaluation_writes_its_reports_and_passes_its_thresholds(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    data = tmp_path / "cases.jsonl"
    Dataset(cases()).save(data)
    report, junit = tmp_path / "report.json", tmp_path / "eval.xml"
    status, out, err = run(
        TARGET, data, "--evaluators", EVALUATORS, "--repeat", 3, "--plain",
        "--threshold", "pass@1=0.6", "--threshold", "equals_expected=0.5",
        "--report", report, "--junit", junit,
    )  # fmt: skip
    assert (status, err) == (0, "")
    assert out.splitlines()[0] == "cases: 3 cases x 3 repeats"
    saved = Report.load(report)
    assert len(saved.results) == 9 and saved.pass_at(1) == 2 / 3
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.attrib["tests"] == "9" and suite.attrib["failures"] == "3"


def test_a_score_below_its_threshold_or_the_baseline_exits_1(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    easy, data = tmp_path / "easy.jsonl", tmp_path / "cases.jsonl"
    Dataset([*cases()[:2], Case("div", "What is 9 * 2?", "The answer is 18.")]).save(easy)
    Dataset(cases()).save(data)
    baseline = tmp_path / "baseline.json"
    status, _, _ = run(TARGET, easy, "--evaluators", EVALUATORS, "--report", baseline)
    assert status == 0 and Report.load(baseline).pass_at(1) == 1.0
    status, out, err = run(
        TARGET,
        data,
        "--evaluators",
        EVALUATORS,
        "--baseline",
        baseline,
        "--threshold",
        "pass@1=0.9",
    )
    assert status == 1
    assert err.splitlines() == [
        "agentgraph: eval: pass@1: 0.667 is below the threshold 0.9",
        "agentgraph: eval: pass@1: 0.667 is below the baseline's 1.000",
        "agentgraph: eval: pass^1: 0.667 is below the baseline's 1.000",
        "agentgraph: eval: equals_expected: 0.667 is below the baseline's 1.000",
        "agentgraph: eval: trajectory: 0.667 is below the baseline's 1.000",
    ]
    assert "  div / passed: 1.000 -> 0.000 (worse)" in out
    status, _, err = run(TARGET, easy, "--evaluators", EVALUATORS, "--baseline", baseline)
    assert (status, err) == (0, "")


def test_problems_with_the_command_exit_2_with_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"name": "a", "input": 1}\n{"name": "b"\n')
    status, _, err = run(TARGET, bad)
    assert status == 2
    assert err.startswith(f"agentgraph: error: cannot read dataset {bad}, line 2: not JSON")
    status, _, err = run(TARGET, bad, "--evaluators", "tests.evals.agents:nothing")
    assert status == 2 and "cannot load evaluators" in err
    status, _, err = run(TARGET, bad, "--threshold", "pass@1")
    assert status == 2 and "is not NAME=NUMBER" in err


def test_the_module_runs_it_as_a_command(tmp_path):
    data = tmp_path / "cases.jsonl"
    Dataset(cases()[:1]).save(data)
    done = subprocess.run(
        [sys.executable, "-m", "agentgraph", "eval", TARGET, str(data), "--plain"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "add" in done.stdout and "pass@1=1.000" in done.stdout


def test_a_bare_node_is_a_target_as_evaluate_takes_it(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    data = tmp_path / "cases.jsonl"
    Dataset([Case("hi", "hi", "HI"), Case("yo", "yo", "yo")]).save(data)
    status, out, err = run(
        "tests.evals.agents:shout", data, "--evaluators", "tests.evals.agents:EXACT",
        "--plain", "--threshold", "equals_expected=0.5",
    )  # fmt: skip
    assert (status, err) == (0, "")
    assert "pass@1=0.500" in out
    status, _, err = run("tests.evals.agents:shout", data, "--model", "ollama:x")
    assert status == 2 and "is a node; --model needs a function taking `model`" in err
    status, _, err = run("tests.evals.agents:OPS", data)
    assert status == 2 and "is of type dict, not a node, a Graph or a function" in err


WORDS = """
from agentgraph import AgentContext, GraphBuilder, node


@node
def count(ctx: AgentContext[str]) -> AgentContext[int]:
    return ctx.with_input(len(ctx.input.split()))


with GraphBuilder[str, int]("words") as g:
    g.start.edge_to(count).edge_to(g.finish)
graph = g.build()
"""


def test_without_evaluators_the_expected_value_is_compared(tmp_path):
    (tmp_path / "words.py").write_text(WORDS)
    data = tmp_path / "cases.jsonl"
    data.write_text('{"input": "a b", "expected": 99}\n')
    status, out, _ = run(f"{tmp_path / 'words.py'}:graph", data, "--plain")
    assert status == 0  # no threshold given: the gate is --threshold and --baseline
    assert "pass@1=0.000" in out
    assert "no --evaluators: each output is compared with its case's expected value" in out
    assert "EqualsExpected" in out
    status, _, err = run(f"{tmp_path / 'words.py'}:graph", data, "--threshold", "pass@1=1")
    assert status == 1 and "pass@1" in err
    data.write_text('{"input": "a b", "expected": 2}\n')
    status, out, _ = run(f"{tmp_path / 'words.py'}:graph", data, "--plain")
    assert status == 0 and "pass@1=1.000" in out


def test_with_nothing_to_score_the_command_refuses_and_names_the_fix(tmp_path):
    (tmp_path / "words.py").write_text(WORDS)
    data = tmp_path / "cases.jsonl"
    data.write_text('{"input": "a b"}\n')
    status, out, err = run(f"{tmp_path / 'words.py'}:graph", data, "--plain")
    assert status == 2 and out == ""
    assert err.startswith("agentgraph: error: nothing to score")
    assert "--evaluators module:attribute" in err and "`expected`" in err
