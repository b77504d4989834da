"""A run that waits days, on Temporal's time-skipping test server (the registry's binary)."""

import os

import anyio
import pytest

from agentgraph import AgentContext, GraphBuilder, Message, node
from agentgraph.temporal import TemporalRunner, time_skipping_server_path, worker

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

THREE_DAYS = 3 * 24 * 3600.0


@pytest.fixture
async def skipping_env():
    from temporalio.testing import WorkflowEnvironment

    try:
        binary = time_skipping_server_path()
    except FileNotFoundError as missing:
        if os.environ.get("CI"):
            pytest.fail(f"the Temporal test server is required in CI: {missing}")
        pytest.skip(f"no Temporal test server binary (outside CI only): {missing}")
    with anyio.fail_after(60):
        env = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=binary)
    try:
        yield env
    finally:
        with anyio.move_on_after(20, shield=True):
            await env.shutdown()


async def test_a_run_sleeping_three_days_finishes_at_once_when_time_skips(skipping_env):
    @node(name="wait_three_days")
    async def wait(ctx: AgentContext[str]) -> AgentContext[str]:
        await anyio.sleep(THREE_DAYS)  # a durable timer in the workflow
        return ctx.append(Message.user("three days later"))

    with GraphBuilder[str, str]("reminder") as g:
        g.start.edge_to(wait).edge_to(g.finish)
    graph = g.build()
    client = skipping_env.client
    started = await skipping_env.get_current_time()
    async with worker(client, task_queue="reminders", graphs=[graph]):
        with anyio.fail_after(30):
            out = await TemporalRunner(client, task_queue="reminders").run(graph, AgentContext("x"))
    assert out.history.last().content == "three days later"
    assert (await skipping_env.get_current_time() - started).total_seconds() >= THREE_DAYS
