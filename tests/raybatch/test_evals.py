"""Evaluations on Ray give the reports `agentgraph.evals` gives locally."""

import functools

import pytest

from agentgraph.checkpoint import SQLiteStore
from agentgraph.evals import RecordedRunError, evaluate, score_runs
from agentgraph.ray import evaluate_on_ray, score_runs_on_ray
from tests.evals.agents import EVALUATORS, agent, cases

pytestmark = [pytest.mark.timeout(240), pytest.mark.anyio]


def shown(report):
    return [(r.case, r.repeat, r.output, r.scores, r.usage, r.error) for r in report.results]


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_evaluate_and_score_runs_on_ray_give_the_local_reports(ray_cluster, tmp_path):
    store = functools.partial(SQLiteStore, tmp_path / "runs.db")
    on_ray = await evaluate_on_ray(
        "tests.raybatch.graphs:calculator",
        cases(),
        EVALUATORS,
        store=store,
        repeat=2,
        concurrency=2,
        progress=False,
    )
    local = await evaluate(agent(), cases(), EVALUATORS, repeat=2, progress=False)
    assert shown(on_ray) == shown(local)
    assert on_ray.pass_hat(2) == local.pass_hat(2)

    runs = {
        r.run_id: c for r, c in zip(on_ray.results, [c for c in cases() for _ in "ab"], strict=True)
    }
    spread = score_runs_on_ray(store, EVALUATORS, runs, tasks=2, name=on_ray.name)
    opened = store()
    try:
        here = await score_runs(opened, EVALUATORS, runs=runs, name=on_ray.name)
    finally:
        await opened.aclose()
    assert shown(spread) == shown(here) == shown(on_ray)
    (missing,) = score_runs_on_ray(store, EVALUATORS, ["nope"], tasks=1).results
    assert missing.case == "nope" and "no such run" in missing.error
    with pytest.raises(RecordedRunError, match="'nope'"):
        score_runs_on_ray(store, EVALUATORS, ["nope"], tasks=1, fail_fast=True)
