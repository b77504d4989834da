"""`worker(client, graphs=[...])`: a Temporal worker that runs agentgraph runs."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio._backends._asyncio  # noqa: F401 - loaded here, not first inside the sandbox
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import VersioningBehavior
from temporalio.worker import Replayer, Worker, WorkerDeploymentConfig
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from .._core._errors import UsageError
from .._core._events import Event, StepInfo
from .._core._json import Types
from .._core._runner import GraphRunner, Sink
from .._core._runtime import StepCallback
from ._activities import Activities
from ._convert import BLOB_THRESHOLD, BlobStore, data_converter
from ._deployment import deployment_config
from ._registry import (
    DEFAULT_HISTORY_EVENTS,
    REPLAY,
    ActivityPolicy,
    Registry,
    nodes_of,
    register,
)
from ._workflow import GraphWorkflow

if TYPE_CHECKING:
    from .._core._context import AgentContext
    from .._core._node import Node
    from ..guards._guard import Guard
    from ..llm._embed import Embedder
    from ..llm._model import ChatModel
    from ..tools._tool import Tool

__all__ = ("client_for", "replayer", "worker")

# Shared with the worker rather than imported afresh for each run inside the
# sandbox: agentgraph itself (the graphs are objects the worker already holds)
# and the libraries it runs on.
_PASSTHROUGH = ("agentgraph", "anyio", "sniffio", "attrs", "orjson", "tenacity", "httpx")


def client_for(
    client: Client, types: Types, blobs: BlobStore | None, threshold: int = BLOB_THRESHOLD
) -> Client:
    """`client` on the same connection, converting payloads as agentgraph does."""
    config = client.config()
    config["data_converter"] = data_converter(types, blobs=blobs, threshold=threshold)
    return Client(**config)


def _live_sink(sink: Sink) -> Sink:
    def live(event: Event) -> Any:
        if workflow.unsafe.is_replaying():
            return None
        return sink(event)

    return live


def _live_step(callback: StepCallback) -> StepCallback:
    def live(info: StepInfo, node: Node[Any, Any], ctx: AgentContext[Any]) -> Any:
        if workflow.unsafe.is_replaying():
            return None
        return callback(info, node, ctx)

    return live


def _live(runner: GraphRunner) -> GraphRunner:
    """`runner` with sinks and step callbacks called only while the workflow runs live."""
    return runner.evolve(
        sinks=[_live_sink(s) for s in runner.sinks],
        on_step=[_live_step(c) for c in runner.on_step],
    )


def worker(
    client: Client,
    *,
    task_queue: str,
    graphs: Sequence[Any],
    models: Mapping[str, ChatModel] | Sequence[ChatModel] = (),
    tools: Sequence[Tool[..., Any]] = (),
    embedders: Mapping[str, Embedder] | Sequence[Embedder] = (),
    functions: Sequence[Callable[..., Any]] = (),
    guards: Sequence[Guard] = (),
    runner: GraphRunner | None = None,
    policy: ActivityPolicy | Mapping[str, ActivityPolicy] | None = None,
    history_events: int = DEFAULT_HISTORY_EVENTS,
    blobs: BlobStore | None = None,
    threshold: int = BLOB_THRESHOLD,
    deployment: str | None = None,
    **options: Any,
) -> Worker:
    """A Temporal worker for `task_queue` that runs `graphs` and makes their effects.

    Run it with `async with worker(...):` or `await worker(...).run()`. A run
    names its graph; the worker runs only the graphs given here, and its
    activities call only the models, tools, embedders and functions (for
    `rt.once`) given here: an effect of anything else fails the run with a
    `UsageError`. Every worker of a task queue needs the same ones; in one
    process, a later worker for a task queue replaces the earlier one's graphs
    (unless the two are different versions of a deployment).

    With `deployment=`, the worker is a version of that Temporal worker
    deployment, its build id made of its graphs' names and versions
    (`build_id(graphs)`, `approval.2`), and its runs are pinned to it: a run
    is served only by workers of the version it started on, to its end, even
    after a newer version is made current (`make_current`); new runs go to the
    current version. Without it the worker is unversioned: any worker of the
    queue takes any run, replaying its history on the graph it has.

    The workflow runs in Temporal's sandbox with agentgraph, the libraries it
    runs on and the graphs' own modules passed through (shared with the
    worker, not imported again for each run): node code must be deterministic,
    making every effect through its runtime, as it must for checkpointed runs.

    Args:
        client: a connected Temporal client; the worker uses its connection
            with agentgraph's payload conversion.
        task_queue: the queue the worker polls.
        graphs: the graphs it may run, each by its name.
        models: chat models, by `model.name` or by the keys of a mapping.
        tools: every tool the graphs' nodes may call, by name.
        embedders: embedders, by the keys of a mapping or by position.
        functions: the functions nodes pass to `rt.once`.
        guards: guards asked in an activity that the worker cannot find
            itself; it finds those of `runner` and of `check_output` nodes
            in `graphs`.
        runner: the policy runs are driven under (retries, step cap, sinks,
            callbacks, usage limits, guards, types); its sinks and step
            callbacks are called only while the workflow runs live, never on
            replay. Its guard rounds run in the workflow: a deterministic guard
            (`Guard.deterministic`) is asked there, any other (a judge) in an
            activity.
        policy: timeouts and retries of the activities: one `ActivityPolicy`
            for all, or a mapping from a kind of effect ("model", "tool",
            "embed", "once", "guard") to its own, the others keeping the default.
        history_events: history length after which a run continues as new at
            its next committed step (or sooner, when Temporal suggests it).
        blobs: where payloads of `threshold` bytes or more are kept (the
            client's `TemporalRunner` needs the same store).
        deployment: the name of the worker deployment this worker is a version
            of (no "."); every graph then needs a version.
        options: passed on to `temporalio.worker.Worker`.
    """
    if deployment is not None:
        if "deployment_config" in options:
            raise UsageError(
                "give deployment= or deployment_config=, not both: deployment= builds "
                "the config from the graphs' versions"
            )
        options["deployment_config"] = deployment_config(deployment, graphs)
    config: WorkerDeploymentConfig | None = options.get("deployment_config")
    version = None
    # Only a pinned run's tasks all come from its own version; an auto-upgrading run's
    # history holds the versions it moved from, so its worker is found by queue alone.
    if config is not None and config.default_versioning_behavior == VersioningBehavior.PINNED:
        version = config.version.to_canonical_string()
    registry, types = _register(
        task_queue,
        graphs,
        models,
        tools,
        embedders,
        functions,
        guards,
        runner,
        policy,
        history_events,
        version=version,
    )
    return Worker(
        client_for(client, types, blobs, threshold),
        task_queue=task_queue,
        workflows=[GraphWorkflow],
        activities=Activities(registry).methods,
        workflow_runner=_sandbox(registry),
        **options,
    )


def replayer(
    *,
    graphs: Sequence[Any],
    models: Mapping[str, ChatModel] | Sequence[ChatModel] = (),
    tools: Sequence[Tool[..., Any]] = (),
    embedders: Mapping[str, Embedder] | Sequence[Embedder] = (),
    functions: Sequence[Callable[..., Any]] = (),
    guards: Sequence[Guard] = (),
    runner: GraphRunner | None = None,
    blobs: BlobStore | None = None,
    threshold: int = BLOB_THRESHOLD,
) -> Replayer:
    """Temporal's `Replayer` for histories of agentgraph runs, set up as `worker` is.

    `await replayer(...).replay_workflow(history)` runs the workflow again
    from its recorded history and raises if the code now makes different
    decisions (nondeterminism). Nothing is called: activities come from the history.
    """
    registry, types = _register(
        REPLAY,
        graphs,
        models,
        tools,
        embedders,
        functions,
        guards,
        runner,
        None,
        DEFAULT_HISTORY_EVENTS,
    )
    return Replayer(
        workflows=[GraphWorkflow],
        data_converter=data_converter(types, blobs=blobs, threshold=threshold),
        workflow_runner=_sandbox(registry),
    )


def _register(
    task_queue: str,
    graphs: Sequence[Any],
    models: Mapping[str, ChatModel] | Sequence[ChatModel],
    tools: Sequence[Tool[..., Any]],
    embedders: Mapping[str, Embedder] | Sequence[Embedder],
    functions: Sequence[Callable[..., Any]],
    guards: Sequence[Guard],
    runner: GraphRunner | None,
    policy: ActivityPolicy | Mapping[str, ActivityPolicy] | None,
    history_events: int,
    *,
    version: str | None = None,
) -> tuple[Registry, Types]:
    """The worker's registry, registered for `task_queue` and its deployment `version`
    (`name.build_id`, None for an unversioned worker), and the types its payloads hold."""
    base = runner or GraphRunner()
    registry = Registry.build(
        graphs=graphs,
        models=models,
        tools=tools,
        embedders=embedders,
        functions=functions,
        guards=guards,
        runner=_live(base),
        policy=policy,
        history_events=history_events,
    )
    types = base.types.with_types(*(t for g in registry.graphs.values() for t in g.data_types()))
    register(task_queue, registry, version=version)
    return registry, types


def _sandbox(registry: Registry) -> SandboxedWorkflowRunner:
    restrictions = SandboxRestrictions.default.with_passthrough_modules(
        *_PASSTHROUGH, *_graph_modules(registry)
    )
    return SandboxedWorkflowRunner(restrictions=restrictions)


def _graph_modules(registry: Registry) -> list[str]:
    """The modules the graphs' nodes were written in (shared with the sandbox, too)."""
    found: dict[str, None] = {}
    for node in nodes_of(registry.graphs.values()):
        for value in (node, getattr(node, "fn", None)):
            module = inspect.getmodule(value) if value is not None else None
            if module is not None and not module.__name__.startswith("agentgraph"):
                found[module.__name__] = None
    return list(found)
