"""What scoring costs as runs grow, counted rather than timed.

Scoring many runs must hold a bounded number of them at once: a run read
back from its journal carries every context and model request of the run,
and outcomes piling up until the end make each further run slower (the
garbage collector scans all of them, again and again).
"""

import math

import anyio
import pytest

from agentgraph.evals import Case, Report, RunResult, evaluate, pass_at_k, pass_hat_k, score_runs
from tests.checkpoint.conftest import store as store  # the three stores, as a fixture
from tests.evals.agents import EVALUATORS, agent

pytestmark = pytest.mark.anyio

RUNS = 60
AT_ONCE = 4


def sums(count: int) -> list[Case]:
    return [
        Case(f"c{i}", f"What is {i} + 1?", expected=f"The answer is {i + 1}.") for i in range(count)
    ]


async def test_score_runs_holds_no_more_runs_than_its_concurrency(store):
    live = await evaluate(agent(), sums(RUNS), store=store, progress=False)
    runs = {r.run_id: c for r, c in zip(live.results, sums(RUNS), strict=True)}
    loaded = scored = most = 0
    load = store.load

    async def counting_load(run_id):
        nonlocal loaded
        loaded += 1
        return await load(run_id)

    def held(outcome):
        nonlocal scored, most
        most = max(most, loaded - scored)  # read from the store, not yet scored
        scored += 1
        return True

    store.load = counting_load
    report = await score_runs(store, [*EVALUATORS, held], runs=runs, concurrency=AT_ONCE)
    assert loaded == scored == len(report.results) == RUNS  # one read per run, no more
    assert most <= AT_ONCE
    assert report.pass_at(1) == 1.0


async def test_evaluate_keeps_a_task_per_worker_not_per_case():
    most = 0

    def tasks(outcome):
        nonlocal most
        most = max(most, len(anyio.get_running_tasks()))
        return True

    report = await evaluate(agent(), sums(RUNS), [tasks], concurrency=AT_ONCE, progress=False)
    assert report.pass_at(1) == 1.0
    # the test's own task and the workers (and what a run starts for itself), not one per case
    assert most <= 2 * AT_ONCE + 2 < RUNS


def test_a_case_of_many_runs_computes_no_binomial_of_their_number(monkeypatch):
    # With n runs of a case, C(n, k) for every k <= n is an integer of up to n/3 digits:
    # dividing two for each k makes a summary cost more than quadratic in n.
    big: list[tuple[int, int]] = []
    comb = math.comb

    def counting(n, k):
        if n > 64:
            big.append((n, k))
        return comb(n, k)

    monkeypatch.setattr(math, "comb", counting)
    n = 2000
    results = [RunResult("one", i, None, (), error=None if i % 4 else "failed") for i in range(n)]
    (case,) = Report("many", results).cases()
    assert not big
    assert (case.runs, case.passes) == (n, 1500)
    for k in (1, 2, 3, 50, n):
        exact_at = 1 - comb(n - 1500, k) / comb(n, k)
        exact_hat = comb(1500, k) / comb(n, k)
        assert case.pass_at[k - 1] == pytest.approx(exact_at, rel=1e-12, abs=1e-300)
        assert case.pass_hat[k - 1] == pytest.approx(exact_hat, rel=1e-12, abs=1e-300)
        assert pass_at_k(n, 1500, k) == case.pass_at[k - 1]
        assert pass_hat_k(n, 1500, k) == case.pass_hat[k - 1]
    assert case.pass_at[-1] == 1.0 and case.pass_hat[-1] == 0.0
    assert not big
