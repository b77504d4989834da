"""A graph as the clients see it: its drawing, its schemas and its subgraphs.

The schemas describe what the server's mapping (`_mapping`) does with a run:
`state_schema` is a thread's `values` (its messages, then the context's state
keys); `input_schema` is a run's `input` (messages, or a value of the graph's
input type when it has one); `output_schema` is the graph's output type, or the
values a run ends with for a graph that answers with text.
"""

from __future__ import annotations

from typing import Any

from .._core._errors import AgentGraphError
from .._core._graph import Graph, Transition
from .._core._node import Node
from ..structured._schema import json_schema
from ._api import Refused
from ._mapping import typed

__all__ = ("drawing", "schemas", "subgraphs", "xray_depth")

START = "__start__"
END = "__end__"
"""The ids the clients give a graph's start and finish."""

_TYPES = ["human", "ai", "tool", "system"]
_ROLES = ["user", "assistant", "tool", "system"]
_TEXT = {"type": "string"}
_TOOL_CALL = {
    "type": "object",
    "properties": {
        "id": _TEXT,
        "name": _TEXT,
        "args": {"type": "object"},
        "type": {"const": "tool_call"},
    },
    "required": ["id", "name", "args"],
}
_MESSAGE = {
    "type": "object",
    "description": "A message as a LangChain message dict; `id` is stable within the thread.",
    "properties": {
        "type": {"enum": _TYPES},
        "content": _TEXT,
        "id": _TEXT,
        "name": {"type": ["string", "null"]},
        "additional_kwargs": {"type": "object"},
        "response_metadata": {"type": "object"},
        "tool_calls": {"type": "array", "items": _TOOL_CALL},
        "invalid_tool_calls": {"type": "array"},
        "usage_metadata": {
            "type": ["object", "null"],
            "properties": {
                "input_tokens": {"type": "integer"},
                "output_tokens": {"type": "integer"},
                "total_tokens": {"type": "integer"},
            },
        },
        "tool_call_id": _TEXT,
        "status": {"enum": ["success", "error"]},
    },
    "required": ["type", "content", "id"],
}
_INPUT_MESSAGE = {
    "type": "object",
    "description": "A new message, named by `role` or by `type`.",
    "properties": {
        "role": {"enum": _ROLES + _TYPES},
        "type": {"enum": _ROLES + _TYPES},
        "content": {"anyOf": [_TEXT, {"type": "array"}]},
        "name": _TEXT,
        "tool_calls": {"type": "array", "items": _TOOL_CALL},
        "tool_call_id": _TEXT,
    },
    "required": ["content"],
}


def _values(title: str) -> dict[str, Any]:
    return {
        "title": title,
        "type": "object",
        "description": "The thread's messages, then the keys of the context's state.",
        "properties": {"messages": {"type": "array", "items": {"$ref": "#/$defs/Message"}}},
        "required": ["messages"],
        "additionalProperties": True,
        "$defs": {"Message": _MESSAGE},
    }


def _of_type(tp: Any) -> dict[str, Any] | None:
    """`tp`'s JSON Schema; None for a type that has none (the clients read it as unknown)."""
    try:
        return json_schema(tp)
    except AgentGraphError:
        return None


def _input(graph: Graph[Any, Any]) -> dict[str, Any] | None:
    if typed(graph.input_type):
        return _of_type(graph.input_type)
    return {
        "title": f"{graph.name} input",
        "type": "object",
        "description": (
            "The turn's new messages; the last user message's text is the graph's input. "
            "Other keys go into the context's state."
        ),
        "properties": {"messages": {"type": "array", "items": {"$ref": "#/$defs/InputMessage"}}},
        "additionalProperties": True,
        "$defs": {"InputMessage": _INPUT_MESSAGE},
    }


def schemas(graph: Graph[Any, Any], graph_id: str) -> dict[str, Any]:
    """`GET /assistants/{id}/schemas`: the graph's input, output, state, config and context."""
    output = (
        _of_type(graph.output_type) if typed(graph.output_type) else _values(f"{graph.name} output")
    )
    return {
        "graph_id": graph_id,
        "input_schema": _input(graph),
        "output_schema": output,
        "state_schema": _values(f"{graph.name} state"),
        "config_schema": {
            "title": f"{graph.name} config",
            "type": "object",
            "description": "`configurable`'s keys go into the context's state.",
            "properties": {"configurable": {"type": "object", "additionalProperties": True}},
        },
        "context_schema": {
            "title": f"{graph.name} context",
            "type": "object",
            "description": "Each key goes into the context's state.",
            "additionalProperties": True,
        },
    }


def _nested(graph: Graph[Any, Any]) -> list[Graph[Any, Any]]:
    return [member for member in graph.nodes if isinstance(member, Graph)]


def subgraphs(
    graph: Graph[Any, Any], graph_id: str, *, namespace: str | None, recurse: bool
) -> dict[str, Any]:
    """`GET /assistants/{id}/subgraphs[/{namespace}]`: the graphs nested in `graph` by
    namespace (node names joined by `|`), each with its schemas.

    Without `recurse`, only the graphs one level down (below `namespace` when given,
    and that namespace's own graph); with it, every level.
    """
    found: dict[str, Any] = {}

    def walk(inside: Graph[Any, Any], prefix: str, deep: bool) -> None:
        for member in _nested(inside):
            name = f"{prefix}{member.name}"
            within = namespace is None or name == namespace or name.startswith(namespace + "|")
            if within:
                found[name] = schemas(member, graph_id)
            if deep or (namespace is not None and namespace.startswith(name + "|")):
                walk(member, name + "|", deep)

    walk(graph, "", recurse)
    return found


def xray_depth(raw: str | None) -> int:
    """How many levels of subgraphs `?xray=` asks to open (true: all of them)."""
    if raw is None or raw.lower() in ("false", "0", ""):
        return 0
    if raw.lower() == "true":
        return 1 << 30
    try:
        depth = int(raw)
    except ValueError as exc:
        raise Refused(422, f"xray is true, false or a depth, not {raw!r}") from exc
    return max(depth, 0)


def drawing(graph: Graph[Any, Any], *, xray: int = 0) -> dict[str, Any]:
    """`GET /assistants/{id}/graph`: the graph's nodes and edges as the clients draw them.

    A nested graph is one node, or, `xray` levels deep, opened into its own nodes
    (ids prefixed with its name and `:`), its start and finish among them. A router's
    edges are `conditional`, labelled with the router's name, to each target it
    declares (to every node of the graph when it declares none).
    """
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    _draw(graph, "", xray, nodes, edges)
    return {"nodes": nodes, "edges": edges}


def _draw(
    graph: Graph[Any, Any],
    prefix: str,
    xray: int,
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
) -> None:
    ids: dict[Node[Any, Any], tuple[str, str]] = {}
    """Each member's id as an edge's target and as an edge's source."""
    for member in (graph.start, *graph.nodes, graph.finish):
        if member is graph.start or member is graph.finish:
            node_id = f"{prefix}{START if member is graph.start else END}"
            nodes.append({"id": node_id, "type": "schema", "data": node_id.rsplit(":", 1)[-1]})
            ids[member] = (node_id, node_id)
        elif isinstance(member, Graph) and xray > 0:
            inner = f"{prefix}{member.name}:"
            _draw(member, inner, xray - 1, nodes, edges)
            ids[member] = (inner + START, inner + END)
        else:
            node_id = f"{prefix}{member.name}"
            kind = "graph" if isinstance(member, Graph) else type(member).__name__
            nodes.append(
                {
                    "id": node_id,
                    "type": "runnable",
                    "data": {"id": ["agentgraph", kind], "name": member.name},
                }
            )
            ids[member] = (node_id, node_id)
    for source, transitions in graph.transitions.items():
        for t in transitions:
            for target, label in _targets(graph, t):
                edge: dict[str, Any] = {
                    "source": ids[source][1],
                    "target": ids[target][0],
                    "conditional": label is not None,
                }
                if label is not None:
                    edge["data"] = label
                edges.append(edge)
    for source, failures in graph.errors.items():
        for failure in failures:
            edges.append(
                {
                    "source": ids[source][1],
                    "target": ids[failure.target][0],
                    "conditional": True,
                    "data": "error",
                }
            )


def _targets(graph: Graph[Any, Any], t: Transition) -> list[tuple[Node[Any, Any], str | None]]:
    if t.target is not None:
        return [(t.target, None)]
    declared = t.targets if t.targets is not None else (*graph.nodes, graph.finish)
    return [(target, t.label or "router") for target in declared]
