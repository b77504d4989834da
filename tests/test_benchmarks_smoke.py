"""The engine benchmark runs end to end at tiny sizes; its figures are checked for sanity only."""

import json

import pytest

from tests.helpers import load_benchmark

# The modules the peers' benchmarks import (langgraph-checkpoint alone installs a bare
# `langgraph` namespace without the graph API).
PEERS = {"langgraph": "langgraph.graph", "pydantic-graph": "pydantic_graph"}


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("engine_overhead")


@pytest.fixture(scope="module")
def tiny(bench):
    return bench.Sizes(
        linear_runs=6,
        warmup_runs=2,
        loop_runs=2,
        loop_steps=20,
        concurrent_runs=20,
        concurrent_repeats=1,
        concurrent_seconds=0.0,
    )


@pytest.mark.parametrize("scenario", ["linear", "loop", "concurrent"])
@pytest.mark.parametrize(
    "framework", ["agentgraph", "design-floor", "bare-loop", "langgraph", "pydantic-graph"]
)
def test_case_produces_sane_figures(bench, tiny, framework, scenario):
    if framework in PEERS:
        pytest.importorskip(PEERS[framework])
    result = bench.run_case(f"{framework}:{scenario}", tiny)
    assert (result["framework"], result["scenario"]) == (framework, scenario)
    assert result["us_per_step"] > 0
    if scenario == "loop":
        assert result["steps"] == 21 and result["segment"] == 2
        assert result["early_us"] > 0 and result["late_us"] > 0
        assert result["late_over_early"] == pytest.approx(result["late_us"] / result["early_us"])
    if scenario == "concurrent":
        assert result["peak_rss_mib"] > 0 and result["rss_growth_mib"] >= 0


def test_unknown_case_and_odd_loop_are_refused(bench, tiny):
    with pytest.raises(ValueError, match="unknown case"):
        bench.run_case("agentgraph:sideways", tiny)
    with pytest.raises(ValueError, match="even number"):
        bench.measure_loop(bench.FRAMEWORKS["design-floor"], bench.Sizes(loop_steps=21))


def test_case_flag_prints_one_json_line(bench, capsys):
    bench.main(["--case", "design-floor:loop", "--quick"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["steps"] == 1001


def test_report_marks_targets_and_missing_peers(bench, tiny):
    results = [
        bench.run_case(f"{framework}:{scenario}", tiny)
        for scenario in ("linear", "loop", "concurrent")
        for framework in ("agentgraph", "design-floor", "bare-loop")
    ]
    results.append({"framework": "langgraph", "scenario": "linear", "error": "not installed"})
    report = bench.render_results(results, sizes=tiny, load=(0.5, 0.75))
    assert "| linear | langgraph | not measured: not installed |" in report
    assert "| linear | agentgraph |" in report and "| concurrent | design-floor |" in report
    assert report.startswith("## Engine overhead\n")
    targets = report.split("### Targets")[1].split("### Method")[0]
    assert targets.count("| linear: ") == 4 and targets.count("| loop: ") == 5
    assert targets.count("x the design floor |") == 3
    assert "linear: ≥ 20x faster than langgraph | - | not measured |" in targets
    assert all(word in targets for word in ("met", "concurrent: ≤ 15 µs/step"))
    assert "### Machine" in report and "agentgraph " in report
    assert "load average: 0.50 before the run, 0.75 after" in report


def test_errors_in_the_report_name_no_paths(bench):
    line = "ImportError: cannot import name 'X' from 'pkg.mod' (/srv/app/pkg/mod.py)"
    assert bench.clean_error(line) == "ImportError: cannot import name 'X' from 'pkg.mod'"
    assert bench.clean_error("ValueError: 3 µs/step is /opt/x") == "ValueError: 3 µs/step is"


def test_section_is_written_without_touching_other_sections(bench, tmp_path):
    results = tmp_path / "RESULTS.md"
    bench.write_section(results, "## Engine overhead\n\nfirst\n")
    assert results.read_text() == "## Engine overhead\n\nfirst\n"

    results.write_text("# Benchmarks\n\nintro\n\n## RAG\n\nrag figures\n")
    bench.write_section(results, "## Engine overhead\n\nfirst\n")
    expected = "# Benchmarks\n\nintro\n\n## Engine overhead\n\nfirst\n\n## RAG\n\nrag figures\n"
    assert results.read_text() == expected

    bench.write_section(results, "## Engine overhead\n\nsecond\n\n### Targets\n\nmet\n")
    assert results.read_text() == expected.replace("first", "second\n\n### Targets\n\nmet")

    results.write_text("## RAG\n\nrag\n\n## Engine overhead\n\nold\n")
    bench.write_section(results, "## Engine overhead\n\nnew\n")
    assert results.read_text() == "## RAG\n\nrag\n\n## Engine overhead\n\nnew\n"


def test_step_profile_renders_both_event_loops():
    for profile in load_benchmark("step_profile"):
        section = profile.render(steps=21, runs=2)
        assert section.startswith("## Step profile\n")
        assert "### asyncio" in section and "### trio" in section
        assert "agentgraph/_core/_runtime.py:run_graph" in section and "x); " in section
        assert "### The engine's own parts" in section and "| asyncio µs | trio µs |" in section


def test_overheads_render_every_target():
    for overheads in load_benchmark("overheads"):
        section = overheads.render(rounds=1, runs=1, repeats=1)
        assert section.startswith("## Tracing, import and fork overheads\n")
        assert section.count(" | met") + section.count("**missed**") == 4
        assert "| JSON-lines file |" in section and "`agentgraph`" in section
