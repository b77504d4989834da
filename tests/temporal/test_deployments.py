"""Pinned runs on Temporal: workers of a deployment are versions named by their graphs'
versions, a run stays on the version it started on, new runs go to the current one."""

import uuid

import anyio
import pytest
from temporalio.api.enums.v1 import EventType, VersioningBehavior
from temporalio.client import WorkflowExecutionStatus

from agentgraph import AgentContext, GraphBuilder, Message, UsageError, node
from agentgraph.temporal import TemporalRunner, build_id, make_current, replayer, worker
from tests.temporal.graphs import echo

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@node
async def review(ctx: AgentContext[str], rt) -> AgentContext[str]:
    answer = await rt.interrupt(f"review {ctx.input}?")
    return ctx.with_input(f"v1 reviewed {ctx.input}: {answer}")


@node
async def approve(ctx: AgentContext[str], rt) -> AgentContext[str]:
    answer = await rt.interrupt(f"approve {ctx.input}?")
    short = "short" if rt.patched("short") else "long"
    return ctx.with_input(f"v2 approved {ctx.input}: {answer} ({short})")


with GraphBuilder[str, str]("approval", version=1) as g:
    g.start.edge_to(review).edge_to(g.finish)
V1 = g.build()

# v2 renames the node and declares a patch: a v1 run replayed on it could not go on.
with GraphBuilder[str, str]("approval", version=2, patches={"short"}) as g:
    g.start.edge_to(approve).edge_to(g.finish)
V2 = g.build()


@pytest.fixture
def deployment() -> str:
    return f"approvals-{uuid.uuid4().hex[:8]}"


async def _version_of(run):
    """The build id and versioning behaviour the server holds for `run`'s workflow."""
    info = (await run.workflow.describe()).raw_description.workflow_execution_info
    return info.versioning_info.deployment_version.build_id, info.versioning_info.behavior


async def _builds(run) -> set[str]:
    """The build ids of the workers that completed the run's workflow tasks."""
    history = await run.workflow.fetch_history()
    return {
        e.workflow_task_completed_event_attributes.deployment_version.build_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    }


async def _markers(run) -> list[str]:
    history = await run.workflow.fetch_history()
    return [
        e.marker_recorded_event_attributes.marker_name
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
    ]


def test_the_build_id_names_each_graph_and_its_version():
    assert build_id([V1]) == "approval.1"
    with GraphBuilder[str, str]("triage", version=5) as g:
        g.start.edge_to(g.finish)
    assert build_id([g.build(), V2]) == "approval.2+triage.5"


def test_a_deployment_needs_versioned_graphs_and_a_name_without_a_dot():
    with GraphBuilder[str, str]("plain") as g:
        g.start.edge_to(g.finish)
    with pytest.raises(UsageError, match=r"'plain' has no version.*version=N"):
        build_id([g.build()])
    with pytest.raises(UsageError, match="at least one graph"):
        build_id([])


async def test_worker_refuses_a_bad_deployment(client, queue):
    with pytest.raises(UsageError, match=r"no '\.'.*'approvals\.eu'"):
        worker(client, task_queue=queue, graphs=[V1], deployment="approvals.eu")
    with pytest.raises(UsageError, match="not both"):
        worker(client, task_queue=queue, graphs=[V1], deployment="a", deployment_config=object())


async def test_make_current_waits_for_the_version_and_names_it(client, deployment):
    with pytest.raises(UsageError, match=r"build id 'approval\.1'.*start its workers"):
        await make_current(client, deployment, [V1], wait=1.0)


async def test_a_run_started_on_v1_finishes_on_v1_after_v2_is_made_current(
    client, queue, deployment
):
    temporal = TemporalRunner(client, task_queue=queue)
    async with worker(client, task_queue=queue, graphs=[V1], deployment=deployment):
        assert await make_current(client, deployment, [V1]) == "approval.1"
        old = await temporal.start(V1, AgentContext("invoice 7"))
        with anyio.fail_after(30):
            assert (await old.asked(poll=0.05)).question == "review invoice 7?"
    # v1's workers are gone; v2's are deployed and made current.
    async with worker(client, task_queue=queue, graphs=[V2], deployment=deployment):
        assert await make_current(client, deployment, [V2]) == "approval.2"
        await old.answer("yes")  # a task v2's workers must not take
        new = await temporal.start(V2, AgentContext("invoice 8"))
        with anyio.fail_after(30):
            assert (await new.asked(poll=0.05)).question == "approve invoice 8?"
        await new.answer("yes")
        assert (await new.result()).input == "v2 approved invoice 8: yes (short)"
        description = await old.workflow.describe()
        assert description.status == WorkflowExecutionStatus.RUNNING
        assert await _builds(old) == {"approval.1"}  # the answer waits for a v1 worker
    # A v1 worker is back (an older deployment kept running until its runs drain).
    async with worker(client, task_queue=queue, graphs=[V1], deployment=deployment):
        with anyio.fail_after(30):
            out = await old.result()
    assert out.input == "v1 reviewed invoice 7: yes"
    pinned = VersioningBehavior.VERSIONING_BEHAVIOR_PINNED
    assert await _version_of(old) == ("approval.1", pinned)
    assert await _version_of(new) == ("approval.2", pinned)
    assert await _builds(old) == {"approval.1"} and await _builds(new) == {"approval.2"}
    # rt.patched is workflow.patched: only the run on v2 asked, and only its history marks it.
    assert await _markers(old) == [] and await _markers(new) == ["core_patch"]
    # Each pinned history replays on its own version's graphs.
    await replayer(graphs=[V1]).replay_workflow(await old.workflow.fetch_history())
    await replayer(graphs=[V2]).replay_workflow(await new.workflow.fetch_history())


async def test_v1_and_v2_workers_in_one_process_keep_their_own_graphs(client, queue, deployment):
    temporal = TemporalRunner(client, task_queue=queue)
    # No cache: every workflow task replays the run's history on the graph its worker finds.
    common = dict(task_queue=queue, deployment=deployment, max_cached_workflows=0)
    async with worker(client, graphs=[V1], **common), worker(client, graphs=[V2], **common):
        await make_current(client, deployment, [V1])
        old = await temporal.start(V1, AgentContext("invoice 7"))
        with anyio.fail_after(30):
            await old.asked(poll=0.05)
        await make_current(client, deployment, [V2])
        new = await temporal.start(V2, AgentContext("invoice 8"))
        with anyio.fail_after(30):
            await new.asked(poll=0.05)
        await old.answer("yes")
        await new.answer("no")
        with anyio.fail_after(30):
            assert (await old.result()).input == "v1 reviewed invoice 7: yes"
            assert (await new.result()).input == "v2 approved invoice 8: no (short)"
    assert await _builds(old) == {"approval.1"} and await _builds(new) == {"approval.2"}


def _auto(version: int):
    @node
    async def check(ctx: AgentContext[str], rt) -> AgentContext[str]:
        answer = await rt.interrupt("check?")
        return ctx.with_input(f"checked on v{version}: {answer}")

    with GraphBuilder[str, str]("auto", version=version) as g:
        g.start.edge_to(check).edge_to(g.finish)
    return g.build()


async def test_an_auto_upgrading_run_moves_to_the_current_version(client, queue, deployment):
    """Under a user's own AUTO_UPGRADE config a run replays on the newest version's graph,
    as on unversioned workers: the worker finds its graphs by queue alone."""
    from temporalio.common import VersioningBehavior as Behavior
    from temporalio.common import WorkerDeploymentVersion
    from temporalio.worker import WorkerDeploymentConfig

    def config(graph):
        return WorkerDeploymentConfig(
            version=WorkerDeploymentVersion(deployment, build_id([graph])),
            use_worker_versioning=True,
            default_versioning_behavior=Behavior.AUTO_UPGRADE,
        )

    v1, v2 = _auto(1), _auto(2)
    temporal = TemporalRunner(client, task_queue=queue)
    async with worker(client, task_queue=queue, graphs=[v1], deployment_config=config(v1)):
        await make_current(client, deployment, [v1])
        run = await temporal.start(v1, AgentContext("x"))
        with anyio.fail_after(30):
            await run.asked(poll=0.05)
    async with worker(client, task_queue=queue, graphs=[v2], deployment_config=config(v2)):
        await make_current(client, deployment, [v2])
        await run.answer("ok")
        with anyio.fail_after(30):
            assert (await run.result()).input == "checked on v2: ok"
    assert await _builds(run) == {"auto.1", "auto.2"}


def _looper(version: int):
    """Asks, then ticks 8 times with an activity each: long enough to continue as new."""

    @node
    async def ask(ctx: AgentContext[int], rt) -> AgentContext[int]:
        await rt.interrupt("go?")
        return ctx

    @node(name="tick")
    async def tick(ctx: AgentContext[int], rt) -> AgentContext[int]:
        n = await rt.once("echo", echo, ctx.input)
        return ctx.append(Message.user(f"v{version} tick {n}")).with_input(n + 1)

    with GraphBuilder[int, int]("looper", version=version) as g:
        g.start.edge_to(ask).edge_to(tick)
        tick.edge_to(lambda ctx: tick if ctx.input < 8 else g.finish, targets=(tick, g.finish))
    return g.build()


async def test_a_pinned_run_continues_as_new_on_its_own_version(client, queue, deployment):
    v1, v2 = _looper(1), _looper(2)
    temporal = TemporalRunner(client, task_queue=queue)
    common = dict(task_queue=queue, deployment=deployment, functions=[echo], history_events=20)
    async with worker(client, graphs=[v1], **common), worker(client, graphs=[v2], **common):
        await make_current(client, deployment, [v1])
        run = await temporal.start(v1, AgentContext(0))
        with anyio.fail_after(30):
            await run.asked(poll=0.05)
        await make_current(client, deployment, [v2])
        await run.answer("go")
        with anyio.fail_after(60):
            out = await run.result()
    assert [m.content for m in out.history] == [f"v1 tick {i}" for i in range(8)]
    first = client.get_workflow_handle(run.run_id, run_id=run.workflow.first_execution_run_id)
    events = [e async for e in first.fetch_history_events()]
    assert events[-1].HasField("workflow_execution_continued_as_new_event_attributes")
    assert await _builds(run) == {"looper.1"}  # the last run of the chain
