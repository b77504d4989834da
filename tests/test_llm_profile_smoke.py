"""The LLM path profile runs end to end at tiny sizes; its figures are checked for sanity only."""

import asyncio
import subprocess
from pathlib import Path

import pytest

from tests.helpers import load_benchmark

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("llm_profile")


def test_areas_name_where_the_code_lives(bench):
    assert bench.area("/x/agentgraph/llm/_openai_wire.py", "parse_completion").startswith(
        "agentgraph: provider client"
    )
    assert bench.area("/x/agentgraph/_core/_runtime.py", "execute").startswith("agentgraph: engine")
    assert bench.area("/x/site-packages/httpcore/_async/http11.py", "f") == "httpcore, h11"
    assert bench.area("~", "<built-in method orjson.dumps>") == "orjson"
    assert bench.area("~", "<built-in method builtins.len>") == "built-in functions"
    assert bench.area("/x/somewhere/else.py", "f") == "other Python"


def test_parts_are_timed(bench):
    parts = asyncio.run(bench._components(200))["components"]
    labels = [label for label, _, _ in parts]
    assert any(label.startswith("request building") for label in labels)
    assert any(label.startswith("response assembly") for label in labels)
    assert labels[-1].startswith("engine, agent and tool turn")
    assert all(ours > 0 for label, ours, _ in parts)


@pytest.mark.timeout(180)
def test_the_whole_profile_renders_every_table(bench, tmp_path):
    revision = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    before = revision.stdout.strip() if revision.returncode == 0 else None
    cpu, profiles, parts = bench.measure_all(4, 1, before, quick=True)
    names = ["httpx", "agentgraph", *(["agentgraph-before"] if before else [])]
    assert list(cpu) == names and all(len(turns) == 1 and turns[0] > 0 for turns in cpu.values())
    for profile in profiles.values():
        assert profile["requests"] == 12 and profile["calls"] > 0
        assert sum(profile["areas"].values()) > 0
    assert profiles["agentgraph"]["areas"]["agentgraph: provider client (`agentgraph/llm`)"] > 0
    assert any("agentgraph/llm/" in row["where"] for row in profiles["agentgraph"]["top"])
    section = bench.render(cpu, profiles, parts, runs=4, rounds=1, before=before, load=(0.0, 0.0))
    assert section.startswith(bench.HEADING + "\n")
    for heading in ("### agentgraph's own work", "### Own time by area", "### Machine"):
        assert heading in section
    assert "| bare httpx (hand-built JSON) |" in section and "1.00x" in section

    results = tmp_path / "RESULTS.md"
    results.write_text("# R\n\n## LLM path\n\nkept\n\n## LLM path profile\n\nold\n\n## RAG\n\nx\n")
    bench.publish(section, output=results, quick=True)
    text = results.read_text()
    assert "old" not in text and "kept" in text and text.endswith("## RAG\n\nx\n")


def test_a_failing_contender_is_refused(bench):
    with pytest.raises(RuntimeError, match="answered"):
        asyncio.run(bench._batch(_wrong, 0, 2))


async def _wrong(i: int) -> tuple[str, int]:
    return "not the answer", 3
