"""The prompt-injection suite runs end to end at a small size; its figures are counts."""

import pytest

from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("injection")


def test_the_guard_stops_the_attacks_it_can_express_and_the_tasks_still_complete(bench, tmp_path):
    output = tmp_path / "RESULTS.md"
    bench.main(["--quick", "--output", str(output)])
    section = output.read_text()
    assert section.startswith(bench.HEADING + "\n")
    assert "| no guard | 2/2 (100%) | 6/6 (100%) | 6/6 (100%) | 0 | 0 |" in section
    # Two of three injections need a recipient the policy does not allow: blocked.
    assert "| ToolPolicy guard | 2/2 (100%) | 6/6 (100%) | 2/6 (33%) | 4 | 0 |" in section
