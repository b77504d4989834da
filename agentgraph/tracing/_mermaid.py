"""Mermaid flowcharts of graphs, with subgraphs drawn inside their boxes."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._graph import Graph
    from .._node import Node

__all__ = ("graph_to_mermaid",)

_UNSAFE = re.compile(r'["<>#]')


def _label(text: str) -> str:
    return _UNSAFE.sub("_", text)


class _Drawing:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def draw(self, graph: Graph[Any, Any], prefix: str, indent: str) -> tuple[str, str]:
        """Draw `graph`'s body; return the ids of its start and finish."""
        from .._graph import Graph

        ids: dict[Node[Any, Any], str] = {}
        for member in (graph.start, *graph.nodes, graph.finish):
            node_id = f"{prefix}{len(ids)}"
            ids[member] = node_id
            if member is graph.start:
                self.lines.append(f"{indent}{node_id}([start])")
            elif member is graph.finish:
                self.lines.append(f"{indent}{node_id}([finish])")
            elif isinstance(member, Graph):
                self.lines.append(f'{indent}subgraph {node_id} ["{_label(member.name)}"]')
                self.draw(member, f"{node_id}_", indent + "    ")
                self.lines.append(f"{indent}end")
            else:
                self.lines.append(f'{indent}{node_id}["{_label(member.name)}"]')
        for source, transitions in graph.transitions.items():
            for t in transitions:
                if t.target is not None:
                    self.lines.append(f"{indent}{ids[source]} --> {ids[t.target]}")
                elif t.targets is not None:
                    label = _label(t.label)
                    for target in t.targets:
                        self.lines.append(f"{indent}{ids[source]} -. {label} .-> {ids[target]}")
                else:
                    anywhere = f"{ids[source]}_any{{{{any}}}}"
                    self.lines.append(f"{indent}{ids[source]} -. {_label(t.label)} .-> {anywhere}")
        return ids[graph.start], ids[graph.finish]


def graph_to_mermaid(graph: Graph[Any, Any], *, direction: str = "TD") -> str:
    """A Mermaid `flowchart` of `graph`.

    Static edges are solid; routers are dotted and labelled with the router's
    name, one edge per declared target. A router without declared targets
    points at an `any` marker, since where it leads is decided at run time.
    A nested graph is drawn as a box holding its own nodes.
    """
    drawing = _Drawing()
    drawing.lines.append(f"flowchart {direction}")
    drawing.draw(graph, "n", "    ")
    return "\n".join(drawing.lines) + "\n"
