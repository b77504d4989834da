"""A graph (or the part of it a run touched) as boxes and edges.

The diagram comes from a `Graph` (every node and edge, marked with what the
run did) or, when only a trace is at hand, from the trace itself (the nodes
that ran and the routes they took). `_layout.py` places it; `_svg.py` draws it.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import attrs

from ._mermaid import RunMarks, times

if TYPE_CHECKING:
    from .._core._graph import Graph
    from ._trace import Trace

__all__ = ("Box", "Diagram", "Edge", "diagram_from_graph", "diagram_from_trace")


@attrs.define
class Box:
    """A node: `kind` is start, finish, node or graph (a subgraph, with `inner`)."""

    key: str
    label: str
    kind: str
    status: str | None = None
    runs: int = 0
    inner: Diagram | None = None
    layer: int = 0
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0
    h: float = 0.0

    @property
    def text(self) -> str:
        return f"{self.label} {times(self.runs)}" if self.runs > 1 else self.label


@attrs.define
class Edge:
    """A transition: `count` is how many times the run took it."""

    source: str
    target: str
    count: int = 0
    label: str = ""
    dynamic: bool = False
    lane: float | None = None
    """Where a long edge runs (a y between or beyond the boxes); None for a direct one."""


@attrs.define
class Diagram:
    """Boxes and edges; after layout, sizes and the x of the gap on each side of each column."""

    boxes: dict[str, Box] = attrs.field(factory=dict)
    edges: list[Edge] = attrs.field(factory=list)
    w: float = 0.0
    h: float = 0.0
    gaps: list[float] = attrs.field(factory=list)

    def add(self, box: Box) -> Box:
        return self.boxes.setdefault(box.key, box)


def diagram_from_graph(
    graph: Graph[Any, Any], trace: Trace | None = None, path: tuple[str, ...] | None = None
) -> Diagram:
    """Every node and transition of `graph`, marked with what the run in `trace` did."""
    from .._core._graph import Graph

    marks = RunMarks(trace) if trace is not None else None
    path = path or (graph.name,)
    diagram = Diagram()
    keys: dict[Any, str] = {}
    for member in (graph.start, *graph.nodes, graph.finish):
        key = keys[member] = f"{len(keys)}"
        kind = (
            "start"
            if member is graph.start
            else "finish"
            if member is graph.finish
            else "graph"
            if isinstance(member, Graph)
            else "node"
        )
        box = diagram.add(Box(key, member.name, kind))
        if marks is not None and kind in ("node", "graph"):
            box.status = marks.node_class((*path, member.name))
            box.runs = marks.runs[(*path, member.name)]
        if isinstance(member, Graph):
            box.inner = diagram_from_graph(member, trace, (*path, member.name))
    by_name = {member.name: key for member, key in keys.items()}
    for source, transitions in graph.transitions.items():
        for position, t in enumerate(transitions):
            fired = marks.fired(path, source.name, position) if marks else Counter[str]()
            targets = (
                (t.target,) if t.target is not None else t.targets if t.targets is not None else ()
            )
            drawn = {target.name for target in targets}
            for target in targets:
                diagram.edges.append(
                    Edge(
                        keys[source],
                        keys[target],
                        fired[target.name],
                        t.label,
                        t.router is not None,
                    )
                )
            for name, count in fired.items():  # routers without declared targets
                if name not in drawn and name in by_name:
                    diagram.edges.append(Edge(keys[source], by_name[name], count, t.label, True))
    return diagram


def diagram_from_trace(trace: Trace, path: tuple[str, ...] | None = None) -> Diagram:
    """The nodes that ran in graph `path` (the root by default) and the routes between them."""
    path = path or (trace.graph,)
    diagram = Diagram()
    diagram.add(Box("start", "start", "start"))
    for step in trace.walk():
        if step.path[:-1] != path:
            continue
        kind = "graph" if step.kind == "graph" else "node"
        box = diagram.add(Box(f"n:{step.name}", step.name, kind))
        box.runs += 1
        status = "failed" if step.status == "failed" else "retried" if step.retries else "ran"
        box.status = max(box.status, status, key=_RANK.__getitem__)
        if kind == "graph" and box.inner is None:
            box.inner = diagram_from_trace(trace, step.path)
    counts = Counter((r.source, r.target) for r in trace.routes if r.path == path)
    labels = {(r.source, r.target): r.dynamic for r in trace.routes if r.path == path}
    for (source, target), count in counts.items():
        src = "start" if source == "start" else f"n:{source}"
        if target == "finish":
            diagram.add(Box("finish", "finish", "finish"))
            dst = "finish"
        else:
            dst = f"n:{target}"
        if src in diagram.boxes and dst in diagram.boxes:
            diagram.edges.append(Edge(src, dst, count, "", labels[(source, target)]))
    return diagram


_RANK: dict[str | None, int] = {None: 0, "ran": 1, "retried": 2, "failed": 3}
