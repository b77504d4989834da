"""The structured-output benchmark runs end to end at tiny sizes and edits only its own section."""

import pytest

from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("structured")


@pytest.fixture(scope="module")
def tiny(bench):
    return bench.Sizes(docs=3, rounds=1, budget=0.0, stream=("small",))


def test_every_messy_document_is_recovered_by_agentgraph(bench, tiny):
    rows = bench.measure_messy(tiny)
    ours = [r for r in rows if r["parser"] == "agentgraph"]
    assert len(ours) == len(bench.MESSY)
    assert all(r["recovered"] == r["docs"] == 3 and r["us"] > 0 for r in ours)
    (refusing,) = [r for r in rows if r["parser"] == "agentgraph, not streaming"]
    assert refusing["refused"] == 3  # a cut-off answer is refused outside streaming


def test_the_report_has_every_table(bench, tiny):
    clean = bench.measure_clean(tiny)
    assert [r["size"] for r in clean] == ["small", "medium", "large"]
    assert all(v is None or v > 0 for r in clean for v in r["us"].values())
    report = bench.render(clean, bench.measure_messy(tiny), bench.measure_streaming(tiny), tiny)
    assert report.startswith(bench.HEADING + "\n")
    for part in ("### Clean JSON", "### Messy model output", "### Streaming", "### Machine"):
        assert part in report
    assert "| `loads_lenient` ≤ 1.5x `orjson.loads` | small |" in report
    assert "| cut-off stream | agentgraph, not streaming | 0/3 | 0 | 3 |" in report


def test_the_section_is_replaced_and_the_rest_kept(bench, tmp_path):
    results = tmp_path / "RESULTS.md"
    results.write_text("# Engine overhead\n\n| a |\n\n## Targets\n\nkept\n")
    bench.write_section(results, f"{bench.HEADING}\n\nfirst\n")
    assert results.read_text() == (
        f"# Engine overhead\n\n| a |\n\n## Targets\n\nkept\n\n{bench.HEADING}\n\nfirst\n"
    )
    results.write_text(results.read_text() + "\n## Later\n\nalso kept\n")
    bench.write_section(results, f"{bench.HEADING}\n\nsecond\n### Sub\n\nx\n")
    assert results.read_text() == (
        "# Engine overhead\n\n| a |\n\n## Targets\n\nkept\n\n"
        f"{bench.HEADING}\n\nsecond\n### Sub\n\nx\n\n## Later\n\nalso kept\n"
    )
    fresh = tmp_path / "new.md"
    bench.write_section(fresh, f"{bench.HEADING}\n")
    assert fresh.read_text() == f"{bench.HEADING}\n"
