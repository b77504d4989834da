"""benchmarks/web.py runs end to end at tiny sizes; its figures are checked for sanity only."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "web.py"


@pytest.fixture(scope="module")
def bench():
    # Loaded under its own name: `web` is this test package's.
    spec = importlib.util.spec_from_file_location("bench_web", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_web"] = module
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(SCRIPT.parent))
        spec.loader.exec_module(module)
        yield module
    del sys.modules["bench_web"]


@pytest.mark.timeout(120)
def test_every_kind_of_case_gives_sane_figures(bench):
    tiny = bench.Sizes(steps=30, repeats=1, stalled_steps=300)
    results = [bench.run_case(case, tiny) for case in ("plain", "sink", "server:1", "stalled:1")]
    assert all(r["us_per_step"] > 0 for r in results)
    served = results[2]
    # Three events a step, the gate's two, the run's start and end and the first state.
    assert served["events"] == 3 * 30 + 2 + 2 + 1
    assert served["events_per_s"] > 0
    assert "rss_growth_mib" in results[3] and results[1]["events"] == 95
    section = bench.render(results, tiny, (0.5, 0.6))
    assert section.startswith("## Web serving\n")
    assert "| served, 50 reading clients | not measured: None |" in section
    with pytest.raises(ValueError, match="unknown case"):
        bench.run_case("server:sideways", tiny)
