"""The effects benchmark runs each case end to end; its figures are checked for sanity only."""

import pytest

from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("effects")


@pytest.mark.parametrize("case", ["plain", "model", "stream", "tools", "guarded", "sqlite"])
def test_each_case_runs_its_steps_and_reports_a_cost(bench, case):
    result = bench.run_case(case, quick=True)
    assert result["case"] == case and result["us_per_step"] > 0
