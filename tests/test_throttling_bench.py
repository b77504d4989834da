"""The throttling benchmark runs end to end at tiny sizes; no timing is checked."""

import asyncio

import pytest

from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("throttling")


@pytest.mark.timeout(120)
def test_both_measurements_run_and_render(bench):
    sizes = bench.Sizes(
        requests=12,
        connections=(1, 2),
        answer_s=0.05,
        pool_timeout_s=0.05,
        clients=4,
        think_s=0.1,
        steady_s=0.4,
        brownout_s=0.3,
        after_s=0.8,
    )
    section = asyncio.run(bench.measure(sizes))
    assert section.startswith(bench.HEADING)
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert len(rows) == 3  # SpreadTransport, and the brownout with and without the jitter
    spread = rows[0].split("|")
    served, timeouts = int(spread[2].replace(",", "")), int(spread[3].replace(",", ""))
    assert served + timeouts == 12 and served >= 2
    for row in rows[1:]:
        assert row.rstrip(" |").endswith("| 0")  # every request got an answer in the end
