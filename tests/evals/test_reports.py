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
    write_junit,
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
    )
    after = Report(
        "arith",
        [
            result("a", 0, ok("equals", True), ok("f1", 1.0)),
            result("a", 1, ok("equals", True), ok("f1", 1.0)),
            result("b", 0, ok("equals", False), ok("f1", 1.0)),
            result("b", 1, error="NodeFailed: boom"),
        ],
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
    once = Report("arith", [r for r in before.results if r.repeat == 0])
    # pass^1 of a one-repeat baseline is read from two repeats too: nothing is missing.
    assert check(before, baseline=once, tolerance=1.0) == []
    assert check(once, baseline=before) == [
        "pass^2: in the baseline (0.500) but not in this report"
    ]


@pytest.mark.parametrize("k", [0, -1, 3, 4])
def test_pass_at_and_pass_hat_refuse_a_k_outside_1_to_n(k):
    before, _ = two_reports()
    for chance in (before.pass_at, before.pass_hat):
        with pytest.raises(ValueError, match=rf"k={k}, n=2"):
            chance(k)
    with pytest.raises(ValueError, match="k=1, n=0"):
        Report("empty", []).pass_at(1)


def uneven():
    """Recorded runs as a store holds them: three of one case, one of another."""
    return Report(
        "recorded",
        [
            result("a", 0, ok("equals", True)),
            result("a", 1, ok("equals", False)),
            result("a", 2, ok("equals", True)),
            result("b", 0, ok("equals", True)),
        ],
    )


def test_a_report_over_uneven_runs_says_so_and_computes_pass_at_k_per_case():
    report = uneven()
    assert report.repeat is None and report.runs_per_case == (1, 3)
    assert [(c.name, c.runs, len(c.pass_at)) for c in report.cases()] == [
        ("a", 3, 3),
        ("b", 1, 1),
    ]
    # pass@1: both cases; pass@2 and pass@3: only the case with that many runs.
    assert report.pass_at(1) == pytest.approx((2 / 3 + 1) / 2)
    assert report.pass_at(2) == 1.0 and report.pass_hat(2) == pytest.approx(1 / 3)
    assert report.pass_hat(3) == 0.0 and report.counted(2) == report.counted(3) == 1
    with pytest.raises(ValueError, match="k=4, n=3"):
        report.pass_at(4)
    assert report.to_data()["repeat"] is None
    assert report.to_data()["runs_per_case"] == [1, 3]
    even, _ = two_reports()
    assert even.repeat == 2 and even.runs_per_case == (2, 2)


def test_render_check_and_compare_take_uneven_reports(tmp_path):
    report = uneven()
    out = io.StringIO()
    render_report(report, out, style="plain")
    lines = out.getvalue().splitlines()
    assert lines[0] == "recorded: 2 cases x 1 to 3 runs per case"
    assert lines[1].split() == ["case", "passed", "pass@1", "pass^n", "equals", "errors"]
    assert lines[2].split() == ["a", "2/3", "0.67", "0.00", "0.67"]
    assert lines[3].split() == ["b", "1/1", "1.00", "1.00", "1.00"]
    assert lines[4].startswith("pass@1=0.833 pass@2=1.000 (1 of 2 cases) pass@3=1.000 (1 of 2")
    assert check(report, baseline=report) == []
    assert check(report, thresholds={"pass@3": 1.0, "pass^3": 0.5, "pass@4": 0}) == [
        "pass^3: 0.000 is below the threshold 0.5",
        "pass@4: the report has no such score",
    ]
    even, _ = two_reports()
    assert check(report, baseline=even) == [  # pass^2 over the one case with 2 runs or more
        "pass^2: 0.333 is below the baseline's 0.500",
        "f1: in the baseline (0.750) but not in this report",
    ]
    overall = {c.score: c.verdict for c in compare(even, report).overall}
    assert overall["pass@1"] == "better"
    suite = ET.fromstring(to_junit(report)).find("testsuite")
    assert [c.attrib["name"] for c in suite.findall("testcase")] == [
        "a [1]",
        "a [2]",
        "a [3]",
        "b [1]",
    ]
    path = tmp_path / "uneven.json"
    report.save(path)
    assert Report.load(path) == report and Report.load(path).repeat is None


def test_an_empty_report_renders_and_compares():
    empty = Report("none", [])
    out = io.StringIO()
    render_report(empty, out, style="plain")
    assert out.getvalue().splitlines()[0] == "none: 0 cases x 0 repeats"
    assert check(empty, baseline=empty) == []
    assert compare(empty, empty).overall == ()


# Every kind of character a run's error, a case's name or a score may hold:
# C0 and C1 controls, DEL, lone surrogates, non-characters, a byte order mark,
# private use, line and paragraph separators, astral characters, markup, and
# terminal colour, cursor and title sequences.
AWKWARD = (
    "".join(map(chr, range(0x20)))
    + "\x7f"
    + "".join(map(chr, range(0x80, 0xA0)))
    + "\ud800\udbff\udc00\udfff\ufffe\uffff\ufeff\ue000\u2028\u2029\U0001f600\U0010ffff"
    + "<&>\"' ]]> &amp;"
    + "\x1b[31mred\x1b[0m \x1b[2K\x1b[1;2H \x1b]0;title\x07 \x1b(B"
)


def test_junit_holds_any_text_as_well_formed_xml(tmp_path):
    report = Report(
        "suite " + AWKWARD,
        [
            result("err " + AWKWARD, 0, error="NodeFailed: \x1b[31mboom\x1b[0m\x07" + AWKWARD),
            result("err " + AWKWARD, 1, error=AWKWARD),
            result("fail " + AWKWARD, 0, Score("s" + AWKWARD, "v" + AWKWARD, AWKWARD, False)),
            result("label", 0, Score("label", AWKWARD, None, None)),
            result("blank", 0, error=""),
        ],
    )
    path = tmp_path / "eval.xml"
    write_junit(report, path)
    suite = ET.parse(path).getroot().find("testsuite")
    cases_ = suite.findall("testcase")
    assert len(cases_) == 5 and suite.attrib["errors"] == "3"
    first = cases_[0].find("error")
    assert first.attrib["message"].startswith("NodeFailed: boom\\x07\\x00\\x01")
    assert "red" in first.text and "\x1b" not in first.text and "[31m" not in first.text
    assert "\\ud800" in first.text and "\U0001f600" in first.text and "<&>" in first.text
    assert cases_[2].attrib["name"].startswith("fail \\x00")
    assert cases_[2].find("failure").attrib["message"].startswith("s\\x00")
    assert cases_[4].find("error").attrib["message"] == ""


def test_junit_reads_the_runs_per_case_once_not_per_run(monkeypatch):
    grouped = Report._grouped
    calls = []

    def counting(self):
        calls.append(None)
        return grouped(self)

    monkeypatch.setattr(Report, "_grouped", counting)
    report = Report("many", [result(f"c{i % 10}", i // 10) for i in range(200)])
    suite = ET.fromstring(to_junit(report)).find("testsuite")
    assert len(suite.findall("testcase")) == 200
    assert suite.find("testcase").attrib["name"] == "c0 [1]"
    assert len(calls) == 1  # regrouping 200 runs for each of them made the file quadratic
