"""Inline SVG: the laid-out graph diagram and the step timeline of a trace."""

from __future__ import annotations

from html import escape

from ._diagram import Box, Diagram, Edge
from ._layout import HEADER, PAD, layout
from ._mermaid import times
from ._text import handoff_text, seconds, step_text
from ._trace import Step, Trace

__all__ = (
    "BAR",
    "COLORS",
    "HANDOFF",
    "RETRY",
    "ROW_H",
    "STRIPE",
    "diagram_svg",
    "timeline_svg",
)

COLORS = {
    "ran": ("#dff3e4", "#2e9d5b"),
    "retried": ("#fdf0d5", "#e69b23"),
    "failed": ("#fde2e2", "#d64545"),
    None: ("#f4f5f7", "#b8bec6"),
    "pill": ("#e8ecf5", "#6b7a99"),
}
BAR = {"ok": "#2e9d5b", "failed": "#d64545", "running": "#8a8f98", "interrupted": "#8a8f98"}
TAKEN, IDLE = "#2e9d5b", "#a4abb5"
MODEL, TOOL, RETRY, HANDOFF = "#3b6fb6", "#8e5bd0", "#e69b23", "#1f7a8c"
STRIPE = "#f6f8fa"  # the background of every other timeline row


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def diagram_svg(diagram: Diagram) -> str:
    """The diagram as an `<svg>` element (laid out here)."""
    layout(diagram)
    width, height = diagram.w + 2 * PAD, diagram.h + 2 * PAD
    parts = [
        f'<svg id="graph-svg" xmlns="http://www.w3.org/2000/svg" width="{_num(width)}" '
        f'height="{_num(height)}" viewBox="0 0 {_num(width)} {_num(height)}" role="img">',
        "<defs>",
        *(
            f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" '
            f'markerHeight="9" markerUnits="userSpaceOnUse" orient="auto-start-reverse">'
            f'<path d="M0,0L10,5L0,10z" fill="{color}"/></marker>'
            for name, color in (("taken", TAKEN), ("idle", IDLE))
        ),
        "</defs>",
    ]
    _draw(diagram, PAD, PAD, parts)
    parts.append("</svg>")
    return "".join(parts)


def _draw(diagram: Diagram, ox: float, oy: float, parts: list[str]) -> None:
    for box in diagram.boxes.values():
        _box(box, ox, oy, parts)
        if box.inner is not None:
            _draw(box.inner, ox + box.x + PAD, oy + box.y + HEADER, parts)
    for edge in diagram.edges:
        _edge(diagram, edge, ox, oy, parts)


def _box(box: Box, ox: float, oy: float, parts: list[str]) -> None:
    x, y = ox + box.x, oy + box.y
    pill = box.kind in ("start", "finish")
    fill, stroke = COLORS["pill"] if pill else COLORS.get(box.status, COLORS[None])
    radius = box.h / 2 if pill else 6
    css = f"box box-{box.kind} status-{box.status or 'idle'}"
    opacity = ' fill-opacity="0.45"' if box.inner is not None else ""
    parts.append(
        f'<g class="{css}" data-node="{escape(box.label)}"><title>{escape(box.text)}</title>'
        f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(box.w)}" height="{_num(box.h)}" '
        f'rx="{_num(radius)}" fill="{fill}" stroke="{stroke}" stroke-width="1.6"{opacity}/>'
    )
    if box.inner is not None:
        tx, ty, anchor = x + 8, y + 15, "start"
    else:
        tx, ty, anchor = x + box.w / 2, y + box.h / 2 + 4.5, "middle"
    weight = "600" if box.inner is not None else "400"
    parts.append(
        f'<text x="{_num(tx)}" y="{_num(ty)}" text-anchor="{anchor}" font-weight="{weight}">'
        f"{escape(box.text)}</text></g>"
    )


def _edge(diagram: Diagram, edge: Edge, ox: float, oy: float, parts: list[str]) -> None:
    a, b = diagram.boxes[edge.source], diagram.boxes[edge.target]
    taken = edge.count > 0
    color = TAKEN if taken else IDLE
    if a is b:  # a loop under its box
        x1, x2, y = ox + a.x + a.w * 0.62, ox + a.x + a.w * 0.38, oy + a.y + a.h
        d = f"M{_num(x1)},{_num(y)} C{_num(x1)},{_num(y + 22)} {_num(x2)},{_num(y + 22)} "
        d += f"{_num(x2)},{_num(y + 1)}"
        lx, ly, anchor = x1 + 6, y + 15, "start"
    elif edge.lane is None:  # neighbouring columns
        x1, y1 = ox + a.x + a.w, oy + a.y + a.h / 2
        x2, y2 = ox + b.x, oy + b.y + b.h / 2
        bend = (x2 - x1) / 2
        d = f"M{_num(x1)},{_num(y1)} C{_num(x1 + bend)},{_num(y1)} {_num(x2 - bend)},{_num(y2)} "
        d += f"{_num(x2)},{_num(y2)}"
        lx, ly, anchor = (x1 + x2) / 2, (y1 + y2) / 2 - 5, "middle"
    else:
        points = _lane_points(diagram, edge, a, b)
        d = "M" + " L".join(f"{_num(ox + px)},{_num(oy + py)}" for px, py in points)
        lane_start, lane_end = points[2][0], points[3][0]
        lx, ly, anchor = ox + (lane_start + lane_end) / 2, oy + points[2][1] - 4, "middle"
    dash = ' stroke-dasharray="5 4"' if edge.dynamic and not taken else ""
    marker = "taken" if taken else "idle"
    parts.append(
        f'<path class="edge{" edge-taken" if taken else ""}" d="{d}" fill="none" '
        f'stroke="{color}" stroke-width="{2.4 if taken else 1.3}" stroke-linejoin="round"'
        f'{dash} marker-end="url(#arrow-{marker})"/>'
    )
    label = " ".join(part for part in (edge.label, times(edge.count) if taken else "") if part)
    if label:
        parts.append(
            f'<text class="edge-label" x="{_num(lx)}" y="{_num(ly)}" fill="{color}" '
            f'text-anchor="{anchor}">{escape(label)}</text>'
        )


def _lane_points(diagram: Diagram, edge: Edge, a: Box, b: Box) -> list[tuple[float, float]]:
    """A long edge: down (or up) to its lane, along it, and back to its target.

    It leaves a box that is the last in its column on the lane's side straight
    through that side; otherwise through the channel beside the column.
    """
    assert edge.lane is not None
    lane = edge.lane
    below = lane > a.y

    def port(box: Box, share: float, channel: float) -> list[tuple[float, float]]:
        if _outermost(diagram, box, below):
            x = box.x + box.w * share
            return [(x, box.y + box.h if below else box.y), (x, box.y + box.h if below else box.y)]
        return [
            (box.x + box.w if channel > box.x else box.x, box.y + box.h / 2),
            (channel, box.y + box.h / 2),
        ]

    leave = port(a, 0.7, diagram.gaps[a.layer + 1])
    enter = port(b, 0.3, diagram.gaps[b.layer])
    return [*leave, (leave[1][0], lane), (enter[1][0], lane), *reversed(enter)]


def _outermost(diagram: Diagram, box: Box, below: bool) -> bool:
    column = [other for other in diagram.boxes.values() if other.layer == box.layer]
    if below:
        return all(other.y <= box.y for other in column)
    return all(other.y >= box.y for other in column)


LABEL_W, CHART_W, ROW_H, TOP = 280.0, 820.0, 24.0, 28.0


def timeline_svg(trace: Trace) -> str:
    """Every step as a bar on a shared time axis, with its retries, model and tool calls,
    and a team's handoffs."""
    steps = list(trace.walk())
    ends = [s.start + (s.duration or 0.0) for s in steps]
    total = max([trace.duration or 0.0, *ends, 1e-6])
    scale = CHART_W / total
    width, height = LABEL_W + CHART_W + 20, TOP + ROW_H * max(len(steps), 1) + 8
    parts = [
        f'<svg id="timeline-svg" xmlns="http://www.w3.org/2000/svg" width="{_num(width)}" '
        f'height="{_num(height)}" viewBox="0 0 {_num(width)} {_num(height)}" role="img">'
    ]
    for i in range(5):
        x = LABEL_W + CHART_W * i / 4
        parts.append(
            f'<line x1="{_num(x)}" y1="{_num(TOP - 6)}" x2="{_num(x)}" y2="{_num(height)}" '
            f'stroke="#e3e6ea"/><text class="tick" x="{_num(x)}" y="{_num(TOP - 10)}" '
            f'text-anchor="{"start" if i == 0 else "end" if i == 4 else "middle"}">'
            f"{escape(seconds(total * i / 4))}</text>"
        )
    for row, step in enumerate(steps):
        parts.append(_row(step, row, scale))
    parts.append("</svg>")
    return "".join(parts)


def _row(step: Step, row: int, scale: float) -> str:
    y = TOP + row * ROW_H
    label = f"{step.name}"
    x0 = LABEL_W + step.start * scale
    width = max((step.duration or 0.0) * scale, 2.0)
    parts = [
        f'<g class="row status-{step.status}" data-index="{step.index}" tabindex="0">'
        f"<title>{escape(step_text(step))}</title>",
        f'<rect class="row-bg" x="0" y="{_num(y)}" width="{_num(LABEL_W + CHART_W + 20)}" '
        f'height="{_num(ROW_H)}" fill="{STRIPE if row % 2 else "#ffffff"}"/>',
        f'<text x="{_num(8 + 14 * step.depth)}" y="{_num(y + 16)}">'
        f'<tspan class="step-no">{step.index}</tspan> {escape(label)}</text>',
        f'<rect class="bar" x="{_num(x0)}" y="{_num(y + 5)}" width="{_num(width)}" '
        f'height="{_num(ROW_H - 10)}" rx="3" fill="{BAR.get(step.status, BAR["running"])}"/>',
    ]
    for call in step.model_calls:
        span = max((call.latency or 0.0) * scale, 2.0)
        parts.append(
            f'<rect class="model-call" x="{_num(LABEL_W + call.start * scale)}" '
            f'y="{_num(y + ROW_H - 8)}" width="{_num(span)}" height="4" fill="{MODEL}"/>'
        )
    for tool in step.tool_calls:
        parts.append(
            f'<rect class="tool-call" x="{_num(LABEL_W + tool.start * scale)}" '
            f'y="{_num(y + 2)}" width="{_num(max(tool.duration * scale, 2.0))}" height="4" '
            f'fill="{TOOL}"/>'
        )
    for retry in step.retries:
        cx = LABEL_W + retry.at * scale
        parts.append(
            f'<path class="retry" d="M{_num(cx)},{_num(y + 3)} l5,9 l-5,9 l-5,-9 z" '
            f'fill="{RETRY}" stroke="#fff"/>'
        )
    for handoff in step.handoffs:
        cx = LABEL_W + float(handoff.get("elapsed", step.start)) * scale
        parts.append(
            f'<path class="handoff" d="M{_num(cx - 6)},{_num(y + 4)} l12,8 l-12,8 z" '
            f'fill="{HANDOFF}" stroke="#fff"><title>{escape(handoff_text(handoff))}</title></path>'
        )
    parts.append("</g>")
    return "".join(parts)
