"""The Temporal scale benchmark runs end to end at tiny sizes; its figures are sane."""

import argparse

import pytest

from tests.helpers import load_benchmark

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("scale_temporal")


async def test_every_case_is_measured_and_rendered(bench, temporal_address):
    sizes = argparse.Namespace(local=3, sequential=1, concurrent=4, warmup=0)
    figures = await bench.measure(temporal_address, sizes)
    keys = {"local_ms", "temporal_ms", "activity_ms", "bare_activity_ms"}
    assert keys | {"runs_per_s_1", "runs_per_s_2"} == set(figures)
    assert all(figures[k] > 0 for k in ("local_ms", "temporal_ms", "runs_per_s_1"))
    section = bench.render(figures, sizes, (0.0, 0.0))
    assert section.startswith("## Scale on Temporal\n") and "| Temporal, 4 runs at once" in section
