"""`evaluate`: every case and repeat is run and scored; failures are results, not errors."""

import itertools

import anyio
import pytest

from agentgraph import AgentContext, GraphRunner, Price, node
from agentgraph.checkpoint import MemoryStore
from agentgraph.evals import (
    Case,
    Contains,
    Dataset,
    EqualsExpected,
    MaxCost,
    MaxModelRequests,
    MaxSteps,
    MaxTokens,
    Outcome,
    Score,
    Trajectory,
    evaluate,
    pass_at_k,
    pass_hat_k,
)
from agentgraph.llm import Usage
from tests.helpers import chain

from .agents import agent, cases

pytestmark = pytest.mark.anyio


async def test_each_case_runs_repeat_times_and_every_result_is_scored():
    report = await evaluate(
        agent(), cases(), [EqualsExpected(), Trajectory(["calculate"], order="exact")], repeat=3
    )
    assert [(r.case, r.repeat) for r in report.results] == [
        (name, rep) for name in ("add", "mul", "div") for rep in range(3)
    ]
    assert len({r.run_id for r in report.results}) == 9
    first = report.results[0]
    assert first.output == "The answer is 5." and first.error is None and first.passed
    assert [s.name for s in first.scores] == ["equals_expected", "trajectory"]
    assert first.usage.requests == 2 and first.duration > 0
    div = [r for r in report.results if r.case == "div"]
    assert all(not r.passed for r in div)
    assert div[0].score("trajectory").value is False
    summaries = {c.name: c for c in report.cases()}
    assert summaries["add"].pass_at == (1.0, 1.0, 1.0)
    assert summaries["div"].pass_hat == (0.0, 0.0, 0.0)
    assert report.pass_at(1) == pytest.approx(2 / 3)
    assert report.means() == pytest.approx({"equals_expected": 2 / 3, "trajectory": 2 / 3})


async def test_a_failing_run_and_a_raising_evaluator_do_not_stop_the_evaluation():
    def broken(outcome: Outcome) -> bool:
        raise KeyError("no such thing")

    dataset = [*cases(), Case("boom", "boom")]
    report = await evaluate(agent(), dataset, [Contains("answer"), broken], concurrency=2)
    assert len(report.results) == 4
    boom = report.results[-1]
    assert boom.output is None and boom.scores == () and not boom.passed
    assert boom.error.startswith("NodeFailed: ")
    assert "sk-test" not in boom.error and "***" in boom.error  # masked as in traces
    add = report.results[0]
    assert add.score("contains").passed is True
    assert add.score("broken") == Score("broken", None, None, False, "KeyError: 'no such thing'")
    assert not add.passed


async def test_plain_functions_may_return_numbers_labels_and_mappings():
    def length(outcome: Outcome) -> int:
        return len(outcome.output)

    def labels(outcome: Outcome) -> dict[str, object]:
        return {"kind": "short", "ok": True}

    report = await evaluate(agent(), cases()[:1], [length, labels])
    assert [(s.name, s.value, s.passed) for s in report.results[0].scores] == [
        ("length", 16, None),
        ("kind", "short", None),
        ("ok", True, True),
    ]


async def test_limits_on_steps_tokens_requests_and_cost():
    prices = {"scripted": Price(input=1.0, output=2.0)}
    evaluators = [MaxSteps(4), MaxTokens(10), MaxModelRequests(2), MaxCost(1e-4)]
    report = await evaluate(agent(), cases()[:1], evaluators, prices=prices)
    result = report.results[0]
    usage = result.usage
    assert result.cost == pytest.approx((usage.input_tokens + 2 * usage.output_tokens) / 1e6)
    assert [(s.name, s.value) for s in result.scores] == [
        ("max_steps", False),  # start, chat, tools, chat, finish...
        ("max_tokens", usage.total_tokens <= 10),
        ("max_model_requests", True),
        ("max_cost", True),
    ]
    unpriced = await evaluate(agent(), cases()[:1], [MaxCost(1.0)])
    assert unpriced.results[0].cost is None
    assert unpriced.results[0].scores[0].error.startswith("the run's cost is unknown")


async def test_runs_are_recorded_in_the_store_under_their_run_ids():
    store = MemoryStore()
    report = await evaluate(agent(), cases()[:2], store=store, runner=GraphRunner(max_steps=50))
    for result in report.results:
        assert await store.load(result.run_id) is not None


async def test_concurrency_is_bounded():
    running = peak = 0

    @node
    async def slow(ctx: AgentContext[str]) -> AgentContext[str]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.01)
        running -= 1
        return ctx

    graph = chain("slow", slow)
    many = [Case(f"c{i}", f"q{i}") for i in range(12)]
    seen: list[tuple[int, int]] = []
    await evaluate(graph, many, concurrency=3, progress=lambda d, t: seen.append((d, t)))
    assert peak == 3
    assert seen == [(d, 12) for d in range(1, 13)]


def test_the_estimators_are_the_unbiased_ones():
    for n in range(1, 7):
        for c in range(n + 1):
            runs = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                draws = list(itertools.combinations(runs, k))
                assert pass_at_k(n, c, k) == pytest.approx(sum(any(d) for d in draws) / len(draws))
                assert pass_hat_k(n, c, k) == pytest.approx(sum(all(d) for d in draws) / len(draws))
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


async def test_a_datasets_own_evaluators_score_every_case():
    dataset = Dataset(cases()[:1], name="one", evaluators=[Contains("5")])
    report = await evaluate(agent(), dataset, [EqualsExpected()])
    assert report.name == "one"
    assert [s.name for s in report.results[0].scores] == ["contains", "equals_expected"]
    assert report.usage == sum((r.usage for r in report.results), Usage())


async def test_the_progress_bar_counts_runs_on_standard_error(capsys):
    await evaluate(agent(), cases(), repeat=2, progress=True, concurrency=1)
    err = capsys.readouterr().err
    assert err.startswith("\rreact_agent [#####.........................] 1/6")
    assert err.endswith("\rreact_agent [##############################] 6/6\n")
