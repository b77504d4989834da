"""Placing a diagram: columns left to right, long edges in lanes that no box is in.

A box's column is the longest path to it from start over forward edges (a
depth-first search from start tells loops apart), and finish comes last. An
edge between neighbouring columns is drawn directly; any other edge (one that
skips columns or goes back) leaves through the channel beside its column,
runs along a lane above or below all the boxes, and comes back down the
channel beside its target's column, so it never crosses a box. A subgraph is
laid out first and becomes a box holding its layout.
"""

from __future__ import annotations

from ._diagram import Box, Diagram, Edge

__all__ = ("CHAR", "HEADER", "LANE", "PAD", "layout")

CHAR = 7.4
NODE_H = 34.0
PILL_H = 26.0
GAP_X = 56.0
GAP_Y = 30.0
PAD = 14.0
HEADER = 22.0
LANE = 18.0
LOOP = 24.0
MARGIN = 16.0


def layout(diagram: Diagram) -> Diagram:
    """Size and place every box, and give long edges their lanes."""
    for box in diagram.boxes.values():
        _size(box)
    columns = _columns(diagram)
    if not columns:
        return diagram
    lanes = [e for e in diagram.edges if _long(diagram, e)]
    margin = MARGIN if lanes else 0.0
    widths = [max(box.w for box in column) for column in columns]
    gaps = [_gap(diagram, column) for column in columns[:-1]]
    height = max(_height(column) for column in columns)
    x, channels = margin, [margin / 2]
    for number, column in enumerate(columns):
        y = (height - _height(column)) / 2
        for box in column:
            box.x, box.y = x + (widths[number] - box.w) / 2, y
            y += box.h + GAP_Y
        x += widths[number]
        gap = gaps[number] if number < len(gaps) else margin
        channels.append(x + gap / 2)
        x += gap
    lanes.sort(key=lambda e: abs(diagram.boxes[e.target].layer - diagram.boxes[e.source].layer))
    top = [e for e in lanes if _middle(diagram, e) < height / 2]
    bottom = [e for e in lanes if e not in top]
    top_room = LANE * len(top) + 6 if top else 0.0
    loops = any(e.source == e.target for e in diagram.edges)
    bottom_room = max(LANE * len(bottom) if bottom else 0.0, LOOP if loops else 0.0)
    for box in diagram.boxes.values():
        box.y += top_room
    for k, edge in enumerate(top):
        edge.lane = top_room - 8 - LANE * k
    for k, edge in enumerate(bottom):
        edge.lane = top_room + height + 12 + LANE * k
    diagram.gaps = channels
    diagram.w = x
    diagram.h = top_room + height + bottom_room
    return diagram


def _size(box: Box) -> None:
    if box.inner is not None:
        layout(box.inner)
        box.w = max(box.inner.w + 2 * PAD, CHAR * len(box.text) + 2 * PAD)
        box.h = box.inner.h + HEADER + PAD
    elif box.kind in ("start", "finish"):
        box.w, box.h = 58.0, PILL_H
    else:
        box.w, box.h = max(72.0, CHAR * len(box.text) + 24), NODE_H


def _height(column: list[Box]) -> float:
    return sum(box.h for box in column) + GAP_Y * (len(column) - 1)


def _long(diagram: Diagram, edge: Edge) -> bool:
    source, target = diagram.boxes[edge.source], diagram.boxes[edge.target]
    return source is not target and target.layer != source.layer + 1


def _middle(diagram: Diagram, edge: Edge) -> float:
    a, b = diagram.boxes[edge.source], diagram.boxes[edge.target]
    return (a.y + a.h / 2 + b.y + b.h / 2) / 2


def _gap(diagram: Diagram, column: list[Box]) -> float:
    """Room after `column`: enough for the labels of the edges that cross it directly."""
    keys = {box.key for box in column}
    labels = [
        len(e.label) + 3
        for e in diagram.edges
        if e.source in keys and not _long(diagram, e) and e.source != e.target
    ]
    return max(GAP_X, CHAR * 0.8 * max(labels, default=0) + 26)


def _columns(diagram: Diagram) -> list[list[Box]]:
    boxes = diagram.boxes
    after: dict[str, list[str]] = {}
    for edge in diagram.edges:
        after.setdefault(edge.source, []).append(edge.target)
    start = next((k for k, b in boxes.items() if b.kind == "start"), None)
    order: list[str] = []  # reverse post-order: a topological order of the forward edges
    back: set[tuple[str, str]] = set()
    on_path: set[str] = set()
    seen: set[str] = set()

    def visit(key: str) -> None:
        seen.add(key)
        on_path.add(key)
        for target in after.get(key, ()):
            if target in on_path:
                back.add((key, target))
            elif target not in seen:
                visit(target)
        on_path.discard(key)
        order.append(key)

    roots = [start] if start is not None else []
    for key in [*roots, *boxes]:
        if key not in seen:
            visit(key)
    order.reverse()
    level = dict.fromkeys(boxes, 0)
    for key in order:
        for target in after.get(key, ()):
            if (key, target) not in back and target != key:
                level[target] = max(level[target], level[key] + 1)
    last = max((level[k] for k, b in boxes.items() if b.kind != "finish"), default=-1)
    columns: dict[int, list[Box]] = {}
    for key in order:
        box = boxes[key]
        box.layer = last + 1 if box.kind == "finish" else level[key]
        columns.setdefault(box.layer, []).append(box)
    return [columns[number] for number in sorted(columns)]
