"""The durability benchmark runs end to end at tiny sizes and writes only its own section."""

import pytest

from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("durability")


@pytest.fixture(scope="module")
def tiny(bench):
    return bench.Sizes(runs=2, slow_runs=1, steps=40, half=20)


@pytest.mark.parametrize("case", ["agentgraph:none", "agentgraph:memory", "agentgraph:sqlite"])
def test_agentgraph_cases_measure_time_and_bytes(bench, tiny, case):
    result = bench.run_case(case, tiny)
    assert result["case"] == case and result["steps"] == 41 and result["half_steps"] == 21
    assert result["us_per_step"] > 0
    if case == "agentgraph:none":
        assert result["bytes"] == 0 and result["added_us"] is None
    else:
        assert result["bytes"] > result["half_bytes"] > 0
        assert isinstance(result["added_us"], float)
    assert result["messages_bytes"] == bench.messages_bytes(41)


@pytest.mark.parametrize("case", ["langgraph:memory", "langgraph:sqlite"])
def test_langgraph_cases_measure_bytes_that_grow_faster_than_the_run(bench, tiny, case):
    pytest.importorskip("langgraph.checkpoint.sqlite")
    result = bench.run_case(case, tiny)
    assert result["us_per_step"] > 0 and result["bytes"] > result["half_bytes"] > 0
    if case == "langgraph:memory":  # the whole history again at every step
        assert result["bytes"] > 2.5 * result["half_bytes"]


def test_unknown_cases_are_refused(bench, tiny):
    with pytest.raises(ValueError, match="unknown case"):
        bench.run_case("agentgraph:tape", tiny)


def test_the_section_replaces_only_itself(bench, tiny, tmp_path):
    results = [bench.run_case(c, tiny) for c in ("agentgraph:none", "agentgraph:sqlite")]
    results.append({"case": "langgraph:sqlite", "error": "ModuleNotFoundError: langgraph"})
    section = bench.render_section(results, sizes=tiny, load=(0.5, 0.75))
    assert section.startswith("## Durability\n")
    assert "| langgraph | SQLite | not measured: ModuleNotFoundError: langgraph |" in section
    assert "| SQLite checkpointing adds ≤ 50 µs/step |" in section
    assert "fixed pages plus" in section and "load average 0.50 before, 0.75 after" in section

    results_file = tmp_path / "RESULTS.md"
    results_file.write_text("# Engine overhead\n\nbody\n\n## Targets\n\nrows\n")
    bench.write_section(results_file, section)
    text = results_file.read_text()
    assert text.startswith("# Engine overhead\n\nbody\n\n## Targets\n\nrows\n\n## Durability\n")
    # Written again (and followed by someone else's section), it is replaced in place.
    results_file.write_text(text + "\n## Other\n\nkept\n")
    bench.write_section(results_file, section.replace("What recording", "What checkpointing"))
    again = results_file.read_text()
    assert again.count("## Durability") == 1 and "What checkpointing" in again
    assert again.endswith("\n## Other\n\nkept\n") and again.startswith("# Engine overhead\n")


def test_the_postgres_case_measures_time_and_bytes(bench, postgres_server, monkeypatch):
    monkeypatch.setenv("AGENTGRAPH_BENCH_POSTGRES", postgres_server.dsn)
    # Longer runs than the others': the shorter must fill fewer of the tables' 8 KiB pages.
    tiny = bench.Sizes(runs=2, slow_runs=1, steps=400, half=20)
    result = bench.run_case("agentgraph:postgres", tiny)
    assert result["case"] == "agentgraph:postgres" and result["us_per_step"] > 0
    assert result["bytes"] > result["half_bytes"] > 0 and isinstance(result["added_us"], float)
    section = bench.render_section([result], sizes=tiny)
    assert "| agentgraph | Postgres | " in section and "Its Postgres tables are" in section


@pytest.fixture(scope="module")
def driver():
    yield from load_benchmark("postgres_driver")


def test_the_driver_benchmark_runs_both_designs_and_says_which_is_faster(driver, postgres_server):
    import asyncio

    dsn = postgres_server.dsn
    results = {}
    for design in driver.DESIGNS:
        per_step = asyncio.run(driver.one_run(design, dsn, 41))
        rate = asyncio.run(driver.many_runs(design, dsn, 5, 5))
        results[design] = {"us_per_step": per_step * 1e6, "runs_per_s": rate}
        assert per_step > 0 and rate > 0
    section = driver.render(results, 1, (0.5, 0.75))
    assert section.startswith("## Postgres driver\n") and "load average 0.50 before" in section
    slower = {"us_per_step": 2.0, "runs_per_s": 1.0}
    faster = {"us_per_step": 1.0, "runs_per_s": 2.0}
    text = driver.render({"thread": slower, "async": faster}, 1, (0.0, 0.0))
    assert "The async design is faster on asyncio" in text
    text = driver.render({"thread": faster, "async": slower}, 1, (0.0, 0.0))
    assert "The thread is not slower" in text
