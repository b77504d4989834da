"""Mermaid flowcharts of graphs, with subgraphs drawn inside their boxes.

`Graph.to_mermaid` draws with `graph_to_mermaid`; `agentgraph.tracing` draws a run
over its graph with the same `Drawing`, given the marks of what the run did.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._graph import Graph, Transition
    from ._node import Node

__all__ = ("Drawing", "Marks", "graph_to_mermaid", "times")

_UNSAFE = re.compile(r'["<>#]')


def _label(text: str) -> str:
    return _UNSAFE.sub("_", text)


TIMES = "\u00d7"  # the multiplication sign, as in "double, 3 times"


def times(count: int) -> str:
    return f"{TIMES}{count}"


class Marks(Protocol):
    """What a run did, for a drawing of it (`agentgraph.tracing`'s `RunMarks` is one).

    Attributes:
        runs: node path -> times the node ran.
    """

    runs: Counter[tuple[str, ...]]

    def node_class(self, path: tuple[str, ...]) -> str | None:
        """The class the node at `path` is drawn with (`ran`, `retried`, `failed`), if any."""
        ...

    def fired(self, path: tuple[str, ...], source: str, position: int) -> Counter[str]:
        """Targets reached through transition `position` of `source`, with counts."""
        ...


class Drawing:
    def __init__(self, marks: Marks | None) -> None:
        self.lines: list[str] = []
        self.marks = marks
        self.links = 0
        self.taken: list[int] = []
        self.classes: dict[str, list[str]] = {}

    def draw(
        self, graph: Graph[Any, Any], prefix: str, indent: str, path: tuple[str, ...]
    ) -> tuple[str, str]:
        """Draw `graph`'s body; return the ids of its start and finish."""
        from ._graph import Graph

        ids: dict[Node[Any, Any], str] = {}
        for member in (graph.start, *graph.nodes, graph.finish):
            node_id = f"{prefix}{len(ids)}"
            ids[member] = node_id
            label = _label(member.name) + self._ran(path, member)
            if member is graph.start:
                self.lines.append(f"{indent}{node_id}([start])")
            elif member is graph.finish:
                self.lines.append(f"{indent}{node_id}([finish])")
            elif isinstance(member, Graph):
                self.lines.append(f'{indent}subgraph {node_id} ["{label}"]')
                self.draw(member, f"{node_id}_", indent + "    ", (*path, member.name))
                self.lines.append(f"{indent}end")
            else:
                self.lines.append(f'{indent}{node_id}["{label}"]')
            self._mark(path, member, node_id, graph)
        for source, transitions in graph.transitions.items():
            for position, t in enumerate(transitions):
                self._edges(ids, source, position, t, indent, path)
        for source, failures in graph.errors.items():
            for failure in failures:  # dashed: taken only when the step failed for good
                self.lines.append(f"{indent}{ids[source]} -. error .-> {ids[failure.target]}")
        return ids[graph.start], ids[graph.finish]

    def _ran(self, path: tuple[str, ...], member: Node[Any, Any]) -> str:
        if self.marks is None:
            return ""
        count = self.marks.runs[(*path, member.name)]
        return f" {times(count)}" if count > 1 else ""

    def _mark(
        self, path: tuple[str, ...], member: Node[Any, Any], node_id: str, graph: Graph[Any, Any]
    ) -> None:
        if self.marks is None or member is graph.start or member is graph.finish:
            return
        kind = self.marks.node_class((*path, member.name))
        if kind is not None:
            self.classes.setdefault(kind, []).append(node_id)

    def _edges(
        self,
        ids: dict[Node[Any, Any], str],
        source: Node[Any, Any],
        position: int,
        t: Transition,
        indent: str,
        path: tuple[str, ...],
    ) -> None:
        src = ids[source]
        fired = (
            self.marks.fired(path, source.name, position) if self.marks is not None else Counter()
        )
        if t.target is not None:
            self._link(indent, src, ids[t.target], None, fired[t.target.name])
            return
        label = _label(t.label)
        declared = t.targets if t.targets is not None else ()
        for target in declared:
            self._link(indent, src, ids[target], label, fired[target.name])
        if t.targets is None:
            self._link(indent, src, f"{src}_any{{{{any}}}}", label, 0)
            named = {member.name: member for member in ids}
            for name, count in fired.items():
                if name in named:
                    self._link(indent, src, ids[named[name]], label, count)

    def _link(self, indent: str, src: str, dst: str, label: str | None, count: int) -> None:
        if count:
            text = f"{label} {times(count)}" if label else times(count)
            arrow = f'==>|"{text}"|' if label is None else f'-.->|"{text}"|'
            self.taken.append(self.links)
        elif label is None:
            arrow = "-->"
        else:
            arrow = f"-. {label} .->"
        self.lines.append(f"{indent}{src} {arrow} {dst}")
        self.links += 1


def graph_to_mermaid(graph: Graph[Any, Any], *, direction: str = "TD") -> str:
    """A Mermaid `flowchart` of `graph`.

    Static edges are solid; routers are dotted and labelled with the router's
    name, one edge per declared target. A router without declared targets
    points at an `any` marker, since where it leads is decided at run time.
    A nested graph is drawn as a box holding its own nodes.
    """
    drawing = Drawing(None)
    drawing.lines.append(f"flowchart {direction}")
    drawing.draw(graph, "n", "    ", (graph.name,))
    return "\n".join(drawing.lines) + "\n"
