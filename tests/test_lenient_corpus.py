"""The corpus of broken model answers: every one recovered or refused as intended, none wrong."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentgraph import OutputError, loads_lenient
from agentgraph.structured._prefix import PrefixParser
from tests.helpers import load_benchmark
from tests.test_lenient import same
from tests.test_prefix import assert_agrees

CORPUS = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "lenient_corpus.jsonl"


def cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]


def test_the_corpus_has_every_kind_and_enough_cases() -> None:
    kinds = Counter(case["kind"] for case in cases())
    assert kinds["refusal"] == 150
    assert sum(kinds.values()) - kinds["refusal"] >= 500
    for kind in ("missing commas", "inner quotes", "smart quotes", "comments", "stray text"):
        assert kinds[kind] >= 30
    for kind in ("cased literals", "doubled quotes"):  # shapes from json_repair's tests
        assert kinds[kind] >= 30


def test_every_broken_answer_is_recovered_and_every_refusal_refused() -> None:
    outcomes: Counter[str] = Counter()
    for case in cases():
        try:
            value = loads_lenient(case["text"], partial=case["partial"])
        except OutputError:
            outcomes["refused" if case["kind"] == "refusal" else "missed"] += 1
            continue
        right = case["kind"] != "refusal" and same(value, case["expected"])
        outcomes["recovered" if right else "wrong"] += 1
    assert outcomes["wrong"] == 0
    assert outcomes == Counter({"recovered": 646, "refused": 150})


def test_the_three_modes_agree_on_the_corpus() -> None:
    for case in cases():
        if case["kind"] == "refusal":
            with pytest.raises(OutputError):
                loads_lenient(case["text"])
            continue
        value = case["expected"]
        assert same(loads_lenient(case["text"], partial=True), value), case["id"]
        assert same(PrefixParser().parse(case["text"]), value), case["id"]


def test_streamed_corpus_answers_agree_at_every_prefix() -> None:
    for case in cases()[::15]:
        assert_agrees(case["text"], 5)


def test_the_generator_writes_the_stored_corpus() -> None:
    for module in load_benchmark("make_lenient_corpus"):
        built = [json.loads(json.dumps(case, sort_keys=True)) for case in module.build()]
        assert built == cases()


def test_the_benchmark_reports_zero_wrong_answers(tmp_path: Path) -> None:
    for module in load_benchmark("lenient"):
        tiny = module.Sizes(rounds=1, shape_sizes=(1_000,), repair_sizes=())
        corpus = cases()[::10]
        results = module.measure_corpus(corpus, tiny)
        report = module.render(
            results, module.measure_shapes(tiny), {"orjson.loads": 1.0}, (0.0, 0.0)
        )
        assert report.startswith(module.HEADING + "\n")
        mine = results["agentgraph"]["counts"]
        assert sum(v for (_, verdict), v in mine.items() if verdict == "wrong") == 0
        assert "### Adversarial shapes" in report and "| **all** |" in report
