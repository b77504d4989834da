"""A run's id: one per run, the same wherever it is read, and drawn only when something reads it."""

from __future__ import annotations

import gc
from typing import Any

import pytest

import agentgraph._core._run_state
import agentgraph._core._runtime
from agentgraph import AgentContext, GraphRunner, RunHandle, RunStarted, Runtime, node

pytestmark = pytest.mark.anyio


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids drawn during the test."""
    made: list[str] = []
    real = agentgraph._core._runtime.new_run_id

    def counted() -> str:
        made.append(real())
        return made[-1]

    monkeypatch.setattr(agentgraph._core._run_state, "new_run_id", counted)
    return made


@node
async def plain(ctx: AgentContext[int]) -> AgentContext[int]:
    return ctx.with_input(ctx.input + 1)


async def test_a_run_nobody_identifies_draws_no_id(drawn):
    handle = RunHandle()
    assert handle.run_id is None  # before a run starts
    await GraphRunner().run(plain, AgentContext(0), handle=handle)
    assert drawn == []
    assert handle.run_id is not None and drawn == [handle.run_id]
    assert handle.run_id == drawn[0]  # read again: the same id


async def test_the_id_is_the_same_for_the_node_the_handle_and_the_events(drawn):
    seen: list[str] = []

    @node
    async def reads(ctx: AgentContext[int], rt: Runtime) -> AgentContext[int]:
        seen.append(rt.run_id)
        return ctx

    started: list[Any] = []
    handle = RunHandle()
    await GraphRunner(sinks=[started.append]).run(reads, AgentContext(0), handle=handle)
    first = next(e for e in started if isinstance(e, RunStarted))
    assert len(drawn) == 1 and seen == drawn and first.run_id == drawn[0] == handle.run_id


async def test_a_given_id_is_kept_and_none_is_drawn(drawn):
    handle = RunHandle()
    await GraphRunner().run(plain, AgentContext(0), handle=handle, run_id="mine")
    assert handle.run_id == "mine" and drawn == []


async def test_each_run_gets_its_own_id(drawn):
    handle = RunHandle()
    runner = GraphRunner()
    await runner.run(plain, AgentContext(0), handle=handle)
    first = handle.run_id
    await runner.run(plain, AgentContext(0), handle=handle)
    assert handle.run_id != first and len(drawn) == 2


async def test_a_finished_run_is_freed_without_the_cycle_collector():
    # The id the run and its handle share must not tie them in a cycle: a run's
    # state would then live on until a collection, for every run.
    runner = GraphRunner()
    gc.collect()
    # Runs of earlier tests that something still holds (a kept error, say) are not ours.
    before = {id(o) for o in gc.get_objects() if type(o) is agentgraph._core._runtime._Run}
    gc.disable()
    try:
        for _ in range(5):
            await runner.run(plain, AgentContext(0), handle=RunHandle())
        left = [
            o
            for o in gc.get_objects()
            if type(o) is agentgraph._core._runtime._Run and id(o) not in before
        ]
    finally:
        gc.enable()
    assert left == []
