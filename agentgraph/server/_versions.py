"""Graph versions on the agent server: which version a run is on, and which worker claims it.

A run records, when it is created, the version of its graph it is on (a new
run: the version the API serves; a resume: the version of the run it
resumes) and its resume policy: the assistant's
(`config["configurable"]["resume_policy"]`), else the server's, else the
runner's `GraphVersions`' policy, else `"latest"`. A worker claims only runs
whose version it can resume under that policy, which the claim asks in SQL,
so a run is never claimed and given back: `"pinned"` the versions its
`GraphVersions` keeps (and its current graph's), `"latest"` its current
version and every older one its migrations reach, `"refuse"` its current
version alone; a run of a graph without versions, a worker that serves that
graph. A run no worker can resume stays pending, and the API says
which version it waits for. A worker that claims a run and still cannot
resume it (a node gone, say) ends it in error naming why, the stored run
untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._core._versions import POLICIES, GraphVersions, ResumePolicy

if TYPE_CHECKING:
    from .._core._graph import Graph
    from .._core._runner import GraphRunner
    from ._queue import QueuedRun

__all__ = (
    "claimable",
    "resume_policy_of",
    "run_graph",
    "run_versions",
    "version_fields",
)


def resume_policy_of(config: Any) -> ResumePolicy | None:
    """The resume policy an assistant's (or a run's) `config` names, if any.

    It is `config["configurable"]["resume_policy"]`, one of `"pinned"`,
    `"latest"`, `"refuse"`.

    Raises:
        ValueError: it names something else (the API answers 422).
    """
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    found = configurable.get("resume_policy") if isinstance(configurable, Mapping) else None
    if found is None:
        return None
    for policy in POLICIES:
        if found == policy:
            return policy
    raise ValueError(f"resume_policy is one of {', '.join(POLICIES)}, not {found!r}")


def _held(graph: Graph[Any, Any], versions: GraphVersions | None) -> list[int]:
    """The versions of `graph`'s name a worker runs: its own and those its registry keeps."""
    held = {graph.version} if graph.version is not None else set()
    if versions is not None:
        held |= {
            g.version for g in versions.graphs if g.name == graph.name and g.version is not None
        }
    return sorted(held)


def _oldest_migrated(graph: Graph[Any, Any]) -> int | None:
    """The oldest version `graph`'s migrations bring up to its own (None: any version,
    for a graph that declares no migration)."""
    assert graph.version is not None
    if not graph.migrations:
        return None
    oldest = graph.version
    while oldest in graph.migrations:
        oldest -= 1
    return oldest


def claimable(
    graphs: Mapping[str, Graph[Any, Any]], versions: GraphVersions | None
) -> tuple[str, list[Any]]:
    """The condition (on the run `r`, for `RunQueue.claim`) a worker running `graphs`,
    with the registry `versions`, claims under: runs of one of its graphs without
    versions, and runs of a version it can resume under the run's policy. A run of a
    graph it does not serve is left to the workers that do."""
    served = sorted(graphs)
    marks = ", ".join("?" for _ in served)
    parts = [f"(r.graph_version IS NULL AND r.graph_id IN ({marks}))" if served else "1 = 0"]
    params: list[Any] = list(served)
    for graph_id, graph in sorted(graphs.items()):
        if graph.version is None:
            continue
        held = _held(graph, versions)
        marks = ", ".join("?" for _ in held)
        parts.append(
            f"(r.graph_id = ? AND r.resume_policy = 'pinned' AND r.graph_version IN ({marks}))"
        )
        params += [graph_id, *held]
        parts.append("(r.graph_id = ? AND r.resume_policy = 'refuse' AND r.graph_version = ?)")
        params += [graph_id, graph.version]
        oldest = _oldest_migrated(graph)
        parts.append(
            "(r.graph_id = ? AND (r.resume_policy = 'latest' OR r.resume_policy IS NULL) "
            "AND r.graph_version <= ?"
            + (" AND r.graph_version >= ?)" if oldest is not None else ")")
        )
        params += [graph_id, graph.version, *([oldest] if oldest is not None else [])]
    return f"AND ({' OR '.join(parts)}) ", params


def run_versions(
    run: QueuedRun, runner: GraphRunner, graph: Graph[Any, Any]
) -> GraphVersions | None:
    """The registry and policy `run` resumes under, on a worker with `runner` whose
    current graph is `graph` (a worker without a registry keeps `graph` alone)."""
    versions = runner.versions
    if versions is None and graph.version is not None:
        versions = GraphVersions(graph, policy="latest")
    if versions is None:
        return None
    for policy in POLICIES:
        if run.resume_policy == policy:
            return versions.with_policy(policy)
    return versions


def run_graph(
    run: QueuedRun, graph: Graph[Any, Any], versions: GraphVersions | None
) -> Graph[Any, Any]:
    """The graph a worker starts `run` on: under `"pinned"`, the version the run was
    created for when the registry keeps it, else the worker's current graph."""
    if run.resume_policy == "pinned" and versions is not None and run.graph_version is not None:
        return versions.get(graph.name, run.graph_version) or graph
    return graph


def version_fields(run: QueuedRun) -> dict[str, Any]:
    """What the API shows of a run's version: the version, the policy, and for a
    pending run the worker it waits for."""
    if run.graph_version is None:
        return {}
    fields: dict[str, Any] = {
        "graph_version": run.graph_version,
        "resume_policy": run.resume_policy,
    }
    if run.status == "pending":
        fields["waiting_for"] = (
            f"a worker that can resume version {run.graph_version} of graph "
            f"{run.graph_id!r} under the {run.resume_policy!r} policy"
        )
    return fields
