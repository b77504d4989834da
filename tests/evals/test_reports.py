"""Reports: JSON round trip, the console table, JUnit XML, compare, the gate, masking."""

import io
import xml.etree.ElementTree as ET

import pytest

from agentgraph.evals import (
    Case,
    DatasetError,
    EqualsExpected,
    Report,
    RunResult,
    Score,
    check,
    compare,
    evaluate,
    render_report,
    to_junit,
)
from agentgraph.llm import Usage

from .agents import agent, cases

pytestmark = pytest.mark.anyio

SECRET = "sk-test-0123456789abcdef0123456789"


def result(case, repeat, *scores, error=None, output="x"):
    usage = Usage(1, 2, 1)
    return RunResult(case, repeat, output, scores, usage, None, 0.5, f"r{case}{repeat}", error)


def ok(name, value, passed=None):
    return Score.of(name, value) if passed is None else Score(name, value, None, passed)


def two_reports():
    before = Report(
        "arith",
        [
            result("a", 0, ok("equals", True), ok("f1", 0.5)),
            result("a", 1, ok("equals", False), ok("f1", 0.5)),
            result("b", 0, ok("equals", True), ok("f1", 1.0)),
            result("b", 1, ok("equals", True), ok("f1", 1.0)),
        ],
        repeat=2,
    )
    after = Report(
        "arith",
        [
            result("a", 0, ok("equals", True), ok("f1", 1.0)),
            result("a", 1, ok("equals", True), ok("f1", 1.0)),
            result("b", 0, ok("equals", False), ok("f1", 1.0)),
            result("b", 1, error="NodeFailed: boom"),
        ],
        repeat=2,
    )
    return before, after


async def test_a_report_saves_as_json_and_loads_back_equal(tmp_path):
    report = await evaluate(agent(), [*cases(), Case("boom", "boom")], [EqualsExpected()], repeat=2)
    path = tmp_path / "report.json"
    report.save(path)
    assert Report.load(path) == report
    (tmp_path / "bad.json").write_text('{"name": "x"}')
    with pytest.raises(DatasetError, match="not a report"):
        Report.load(tmp_path / "bad.json")


async def test_secrets_are_masked_in_outputs_errors_and_reasons():
    def leaky(outcome):
        return Score.of("leak", False, f"the key was {SECRET}")

    report = await evaluate(agent(), [cases()[0], Case("boom", "boom")], [leaky])
    text = report.to_data().__repr__() + to_junit(report)
    out = io.StringIO()
    render_report(report, out, style="plain")
    assert SECRET not in text + out.getvalue()
    assert report.results[0].scores[0].reason == "the key was ***"


def test_the_plain_table_has_a_row_per_case_and_the_aggregates():
    _, after = two_reports()
    out = io.StringIO()
    render_report(after, out, style="plain")
    lines = out.getvalue().splitlines()
    assert lines[0] == "arith: 2 cases x 2 repeats"
    assert lines[1].split() == ["case", "passed", "pass@1", "pass^2", "equals", "f1", "errors"]
    assert lines[2].split() == ["a", "2/2", "1.00", "1.00", "1.00", "1.00"]
    assert lines[3].split() == ["b", "0/2", "0.00", "0.00", "0.00", "1.00", "1"]
    assert lines[4] == "pass@1=0.500 pass@2=0.500 pass^1=0.500 pass^2=0.500"
    assert lines[6] == "agent: 4 requests, 12 tokens"


def test_the_rich_table_is_used_when_asked():
    pytest.importorskip("rich")
    _, after = two_reports()
    out = io.StringIO()
    render_report(after, out, style="rich")
    assert "┃ case" in out.getvalue() and "pass^2=0.500" in out.getvalue()


def test_junit_lists_every_case_and_repeat_with_failures_and_errors():
    _, after = two_reports()
    suite = ET.fromstring(to_junit(after)).find("testsuite")
    assert suite.attrib["tests"] == "4" and suite.attrib["failures"] == "1"
    assert suite.attrib["errors"] == "1"
    cases_ = suite.findall("testcase")
    assert [c.attrib["name"] for c in cases_] == ["a [1]", "a [2]", "b [1]", "b [2]"]
    assert cases_[2].find("failure").attrib["message"] == "equals: False"
    assert cases_[3].find("error").attrib["message"] == "NodeFailed: boom"
    assert cases_[0].find("failure") is None


def test_compare_says_what_got_better_worse_or_stayed():
    before, after = two_reports()
    comparison = compare(before, after)
    verdicts = {(c.case, c.score): c.verdict for c in comparison.changes}
    assert verdicts == {
        ("a", "passed"): "better",
        ("a", "equals"): "better",
        ("a", "f1"): "better",
        ("b", "passed"): "worse",
        ("b", "equals"): "worse",
        ("b", "f1"): "same",
    }
    overall = {c.score: (c.before, c.after, c.verdict) for c in comparison.overall}
    assert overall["pass@1"] == (0.75, 0.5, "worse")
    assert overall["f1"] == (0.75, 1.0, "better")
    out = io.StringIO()
    comparison.render(out)
    assert out.getvalue().splitlines()[-3:] == [
        "  a / passed: 0.500 -> 1.000 (better)",
        "  b / passed: 1.000 -> 0.000 (worse)",
        "3 better, 2 worse, 1 the same",
    ]
    out = io.StringIO()
    comparison.render(out, detail=True)
    assert "  b / equals: 1.000 -> 0.000 (worse)" in out.getvalue()


def test_the_gate_fails_below_a_threshold_or_the_baseline():
    before, after = two_reports()
    assert check(before, thresholds={"pass@1": 0.75, "pass^2": 0.5, "f1": 0.7}) == []
    assert check(after, thresholds={"pass@1": 0.6, "pass@3": 0.1, "nope": 1}) == [
        "pass@1: 0.500 is below the threshold 0.6",
        "pass@3: the report has no such score",
        "nope: the report has no such score",
    ]
    assert check(after, baseline=before) == [
        "pass@1: 0.500 is below the baseline's 0.750",
        "equals: 0.667 is below the baseline's 0.750",  # over the runs that gave a score
    ]
    assert check(after, baseline=before, tolerance=0.3) == []
    assert check(before, baseline=before) == []
    once = Report("arith", [r for r in before.results if r.repeat == 0], repeat=1)
    # pass^1 of a one-repeat baseline is read from two repeats too: nothing is missing.
    assert check(before, baseline=once, tolerance=1.0) == []
    assert check(once, baseline=before) == [
        "pass^2: in the baseline (0.500) but not in this report"
    ]
