"""Pinned runs on Temporal: the graphs' versions as a worker deployment version.

A worker given `deployment=` is a version of that Temporal worker deployment
whose build id names its graphs and their versions (`approval.2`). Its
workflows are `VersioningBehavior.PINNED`: a run started on a version is
served only by that version's workers until it ends, even after a newer
version becomes the deployment's current one; new runs go to the current
version, chosen with `make_current` (or Temporal's CLI).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
from temporalio.api.workflowservice.v1 import SetWorkerDeploymentCurrentVersionRequest
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import WorkerDeploymentConfig

from .._core._errors import UsageError
from .._core._runner import as_graph

__all__ = ("build_id", "deployment_config", "make_current")

# Statuses the server answers with while the version's workers have not polled it yet.
_NOT_YET = (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION)


def build_id(graphs: Sequence[Any]) -> str:
    """The build id of a worker running `graphs`: each graph's `name.version`, sorted,
    joined by `+` (`approval.2`, or `approval.2+triage.5` for two graphs).

    Every graph needs a version (`GraphBuilder(..., version=N)`): the build id
    is what pins a run to the graphs it started on.
    """
    parts: list[str] = []
    for graph in (as_graph(g) for g in graphs):
        if graph.version is None:
            raise UsageError(
                f"graph {graph.name!r} has no version: a worker of a deployment pins runs "
                "to their graph's version, so build it with GraphBuilder(..., version=N)"
            )
        parts.append(f"{graph.name}.{graph.version}")
    if not parts:
        raise UsageError("a worker needs at least one graph: worker(client, graphs=[...])")
    return "+".join(sorted(parts))


def _version(deployment: str, graphs: Sequence[Any]) -> WorkerDeploymentVersion:
    if not deployment or "." in deployment:
        raise UsageError(
            f"a deployment name is non-empty and has no '.' (Temporal writes a version as "
            f"name.build_id), not {deployment!r}"
        )
    return WorkerDeploymentVersion(deployment, build_id(graphs))


def deployment_config(deployment: str, graphs: Sequence[Any]) -> WorkerDeploymentConfig:
    """The worker's deployment version, its runs pinned to it."""
    return WorkerDeploymentConfig(
        version=_version(deployment, graphs),
        use_worker_versioning=True,
        default_versioning_behavior=VersioningBehavior.PINNED,
    )


async def make_current(
    client: Client, deployment: str, graphs: Sequence[Any], *, wait: float = 30.0
) -> str:
    """Make the version of `deployment` running `graphs` its current one; return its build id.

    New runs go to the current version's workers; runs already started stay
    on the version they started on. The server knows a version once one of
    its workers has polled it, so this waits up to `wait` seconds for that
    (start the workers first), then raises `UsageError`. The same as
    `temporal worker deployment set-current-version --deployment-name
    <deployment> --build-id <build_id(graphs)>`.
    """
    version = _version(deployment, graphs)
    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace,
        deployment_name=version.deployment_name,
        build_id=version.build_id,
        identity=client.identity,
    )
    last: RPCError | None = None
    with anyio.move_on_after(wait):
        while True:
            try:
                await client.workflow_service.set_worker_deployment_current_version(request)
            except RPCError as error:
                if error.status not in _NOT_YET:
                    raise
                last = error
            else:
                return version.build_id
            await anyio.sleep(0.2)
    said = "" if last is None else f" ({last.message})"
    raise UsageError(
        f"no worker of deployment {deployment!r} with build id {version.build_id!r} reached "
        f"the server within {wait:g}s{said}: start its workers before making it current"
    ) from last
