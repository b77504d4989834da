"""Mermaid flowcharts of runs: a graph drawn with what a run did on it marked.

Graphs alone are drawn by the engine (`Graph.to_mermaid`); `graph_to_mermaid` is
re-exported here beside `run_to_mermaid`.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from .._core._mermaid import Drawing, times
from .._core._mermaid import graph_to_mermaid as graph_to_mermaid

if TYPE_CHECKING:
    from .._core._graph import Graph
    from ._trace import Trace

__all__ = ("RunMarks", "graph_to_mermaid", "run_to_mermaid", "times")

_CLASSES = (
    "classDef ran fill:#dff3e4,stroke:#2e9d5b,color:#123",
    "classDef retried fill:#fdf0d5,stroke:#e69b23,color:#321",
    "classDef failed fill:#fde2e2,stroke:#d64545,color:#400",
)


class RunMarks:
    """What a run did, keyed by names: how often each route fired and each node ran.

    Attributes:
        routes: `(graph path, source, transition position, target)` -> times taken.
        runs: node path -> times the node ran.
        failed: node paths where a step failed.
        retried: node paths where a step was retried.
    """

    def __init__(self, trace: Trace) -> None:
        self.routes: Counter[tuple[tuple[str, ...], str, int, str]] = Counter(
            (r.path, r.source, r.transition, r.target) for r in trace.routes
        )
        self.runs: Counter[tuple[str, ...]] = Counter()
        self.failed: set[tuple[str, ...]] = set()
        self.retried: set[tuple[str, ...]] = set()
        for step in trace.walk():
            self.runs[step.path] += 1
            if step.status == "failed":
                self.failed.add(step.path)
            if step.retries:
                self.retried.add(step.path)

    def node_class(self, path: tuple[str, ...]) -> str | None:
        if path in self.failed:
            return "failed"
        if path in self.retried:
            return "retried"
        return "ran" if self.runs[path] else None

    def fired(self, path: tuple[str, ...], source: str, position: int) -> Counter[str]:
        """Targets reached through transition `position` of `source`, with counts."""
        return Counter(
            {
                target: n
                for (p, s, t, target), n in self.routes.items()
                if p == path and s == source and t == position
            }
        )


def run_to_mermaid(graph: Graph[Any, Any], trace: Trace, *, direction: str = "TD") -> str:
    """A Mermaid `flowchart` of `graph` showing what the run in `trace` did.

    Edges the run took are thick (dotted for routers), coloured, and labelled
    with how many times they fired; nodes that ran are filled (amber when a
    step was retried, red when one failed) and show how often they ran when
    more than once. Everything else is drawn as `graph_to_mermaid` draws it.
    """
    drawing = Drawing(RunMarks(trace))
    drawing.lines.append(f"flowchart {direction}")
    drawing.draw(graph, "n", "    ", (graph.name,))
    lines = drawing.lines
    lines.extend(f"    {line}" for line in _CLASSES)
    for kind, node_ids in sorted(drawing.classes.items()):
        lines.append(f"    class {','.join(node_ids)} {kind}")
    if drawing.taken:
        taken = ",".join(str(i) for i in drawing.taken)
        lines.append(f"    linkStyle {taken} stroke:#2e9d5b,stroke-width:3px")
    return "\n".join(lines) + "\n"
