"""A graph's version and fingerprint, and the registry of versions a runner can resume on.

A run records the version and fingerprint of the graph it started on. When
the graph changes while runs are in flight, `GraphVersions` says what a resume
does: `"pinned"` continues each run on the version it started with (kept in
the registry), `"latest"` on the current graph (after the graph's context
migrations, the changes named when a node is gone), `"refuse"` refuses a run
that started on another version.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs
import orjson

from ._context import AgentContext
from ._errors import GraphDefinitionError, UsageError

if TYPE_CHECKING:
    from ._graph import Graph
    from ._node import Node

__all__ = (
    "POLICIES",
    "GraphVersions",
    "Migration",
    "ResumePolicy",
    "check_versioning",
    "declared_patches",
    "edges_of",
    "fingerprint",
    "new_name",
    "shape",
)

Migration = Callable[[AgentContext[Any]], AgentContext[Any]]
"""Upgrades a stored context to the next version of its graph."""

ResumePolicy = Literal["pinned", "latest", "refuse"]
"""What resuming a run that started on another version of its graph does."""

POLICIES: tuple[ResumePolicy, ...] = ("pinned", "latest", "refuse")


def _io(node: Node[Any, Any]) -> list[str]:
    """The input and output types `node` declares, as text (annotations are never evaluated)."""
    fn = getattr(node, "fn", None)
    if callable(fn):
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):
            return ["?", "?"]
        params = list(signature.parameters.values())
        given = params[0].annotation if params else inspect.Parameter.empty
        return [_text(given), _text(signature.return_annotation)]
    if hasattr(node, "transitions"):
        return [_text(getattr(node, "input_type", Any)), _text(getattr(node, "output_type", Any))]
    return [type(node).__qualname__, ""]


def _text(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty or annotation is inspect.Signature.empty:
        return ""
    if isinstance(annotation, str):
        return annotation.replace(" ", "")
    return repr(annotation).replace("typing.", "").replace(" ", "")


def edges_of(graph: Graph[Any, Any]) -> dict[str, list[str]]:
    """The names each node's transitions may lead to, in order (`*` for a router that may
    return any node), by the source node's name."""
    edges: dict[str, list[str]] = {}
    for source, transitions in graph.transitions.items():
        targets: list[str] = []
        for t in transitions:
            if t.target is not None:
                targets.append(t.target.name)
            elif t.targets is not None:
                targets.extend(n.name for n in t.targets)
            else:
                targets.append("*")  # a router that may return any node
        edges[source.name] = targets
    return edges


def shape(graph: Graph[Any, Any]) -> dict[str, Any]:
    """What the fingerprint covers: node names, their input and output types, edges, subgraphs."""
    edges = edges_of(graph)
    for source, errors in graph.errors.items():
        edges.setdefault(source.name, []).extend(f"!{t.target.name}" for t in errors)
    return {
        "graph": graph.name,
        "nodes": {n.name: _io(n) for n in graph.nodes},
        "edges": edges,
        "subgraphs": {n.name: shape(n) for n in graph.nodes if hasattr(n, "transitions")},  # type: ignore[arg-type]
    }


def fingerprint(graph: Graph[Any, Any]) -> str:
    """A digest of `shape(graph)`: equal for graphs of the same structure and node types."""
    import hashlib  # loaded when first asked, so that importing the package stays cheap

    data = orjson.dumps(shape(graph), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest()[:16]


def new_name(renamed: Mapping[str, str], name: str) -> str:
    """`name` through `renamed`, followed on: `{"review": "approve", "approve": "check"}`
    takes `review` to `check`, so one map keeps every rename since the first version."""
    seen = {name}
    while name in renamed:
        name = renamed[name]
        if name in seen:  # refused when the graph is built; a guard for maps made by hand
            break
        seen.add(name)
    return name


def declared_patches(graph: Graph[Any, Any]) -> frozenset[str]:
    """The patches `graph` and every subgraph inside it declare."""
    found = set(graph.patches)
    for member in graph.nodes:
        if hasattr(member, "transitions"):
            found |= declared_patches(member)  # type: ignore[arg-type]
    return frozenset(found)


def check_versioning(
    name: str,
    version: int | None,
    migrations: Mapping[int, Migration],
    renamed: Mapping[str, str],
) -> None:
    """Refuse migrations or renames without a version, and migrations to no version before it."""
    if version is None and (migrations or renamed):
        raise GraphDefinitionError(
            name, "migrations= and renamed= need a version= (migrations are keyed by version)"
        )
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise GraphDefinitionError(name, f"version= takes an int, not {version!r}")
    for old in renamed:
        seen, now = [old], old
        while now in renamed:
            now = renamed[now]
            if now in seen:
                loop = " -> ".join([*seen, now])
                raise GraphDefinitionError(
                    name, f"renamed= goes round in a circle ({loop}): a name is renamed once"
                )
            seen.append(now)
    for to in migrations:
        if isinstance(to, bool) or not isinstance(to, int) or not 1 < to <= (version or 0):
            raise GraphDefinitionError(
                name,
                f"migrations= is keyed by the version each migration upgrades to, from 2 up to "
                f"this graph's version {version}; {to!r} is none of those",
            )


@attrs.frozen(init=False)
class GraphVersions:
    """The versions of graphs a runner keeps, and what resuming a run of an older one does.

    ```python
    runner = GraphRunner(versions=GraphVersions(v1, v2, policy="pinned"))
    ```

    Args:
        *graphs: graphs built with `GraphBuilder(..., version=N)`; one per name and version.
        policy: `"pinned"` (default) resumes each run on the version it started
            with, or refuses it (`VersionMissing`) when the registry lacks it;
            `"latest"` resumes on the graph given to `resume`, applying its
            migrations; `"refuse"` refuses a run that started on another version.
    """

    graphs: tuple[Graph[Any, Any], ...]
    policy: ResumePolicy

    def __init__(self, *graphs: Graph[Any, Any], policy: ResumePolicy = "pinned") -> None:
        if policy not in POLICIES:
            raise UsageError(f"policy= is one of {', '.join(POLICIES)}, not {policy!r}")
        seen: set[tuple[str, int]] = set()
        for graph in graphs:
            if graph.version is None:
                raise UsageError(
                    f"graph {graph.name!r} has no version: build it with "
                    "GraphBuilder(..., version=N) to keep it in GraphVersions"
                )
            if (graph.name, graph.version) in seen:
                raise UsageError(f"graph {graph.name!r} version {graph.version} is given twice")
            seen.add((graph.name, graph.version))
        self.__attrs_init__(graphs, policy)

    def get(self, name: str, version: int | None) -> Graph[Any, Any] | None:
        """The graph called `name` at `version`, if the registry keeps it."""
        for graph in self.graphs:
            if graph.name == name and graph.version == version:
                return graph
        return None

    def with_policy(self, policy: ResumePolicy) -> GraphVersions:
        """The same graphs under another policy."""
        return GraphVersions(*self.graphs, policy=policy)
