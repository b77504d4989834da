"""The MCP tool-call benchmark runs end to end at a tiny size; no timing is checked."""

import pytest

from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("_llm_path_mcp")


def test_every_contender_answers_every_call_right(bench):
    rows = bench.measure_mcp(calls=3, batches=1, warmup=1)
    assert [(r["name"], r["calls"], r["wrong"]) for r in rows] == [
        ("agentgraph", 3, 0),
        ("mcp-client", 3, 0),
        ("mcp-session", 3, 0),
    ]
    section = bench.render_section(rows, calls=3, batches=1)
    assert section.startswith(bench.HEADING + "\n")
    assert section.count("\n| ") == 4  # the header and one row per contender
