"""The recorded-runs evaluation benchmark runs at its quick size; no timing is checked."""

import pytest

from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("evals_recorded")


def test_the_section_renders_with_every_row(bench, tmp_path):
    output = tmp_path / "RESULTS.md"
    bench.main(["--quick", "--output", str(output)])
    section = output.read_text()
    assert section.startswith(bench.HEADING + "\n")
    assert "| memory |" in section and "| SQLite |" in section
    assert "| what-if (prefix replayed" in section and "| running the case from scratch" in section
