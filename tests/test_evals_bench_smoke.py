"""The evaluations benchmark runs end to end at a tiny size; no timing is checked."""

import pytest

from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("evals")


def test_the_section_renders_with_every_row(bench, tmp_path):
    output = tmp_path / "RESULTS.md"
    bench.main(["--quick", "--output", str(output)])
    section = output.read_text()
    assert section.startswith(bench.HEADING + "\n")
    assert f"| the {len(bench.EVALUATORS)} deterministic evaluators |" in section
    assert "| `evaluate` with the evaluators |" in section
    assert section.count("| deterministic evaluators ≤ 5% of the run") == 2
