"""The checks `GraphBuilder.build()` runs: each refusal names the node and the fix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from ._errors import GraphDefinitionError
from ._node import Node

if TYPE_CHECKING:
    from ._failure import ErrorTransition
    from ._graph import Transition

__all__ = ("DEFAULT_NAMES", "Copy", "validate")


@attrs.frozen
class Copy:
    """A settings copy made inside a builder block: `original.<how>(...)` returned `copy`."""

    original: Node[Any, Any]
    copy: Node[Any, Any]
    how: str


def validate(
    name: str,
    start: Node[Any, Any],
    finish: Node[Any, Any],
    edges: Mapping[Node[Any, Any], tuple[Transition, ...]],
    members: tuple[Node[Any, Any], ...],
    errors: Mapping[Node[Any, Any], tuple[ErrorTransition, ...]],
    copies: Sequence[Copy] = (),
) -> None:
    """Raise `GraphDefinitionError` naming the node and the fix when the graph is unsound."""
    if not edges.get(start):
        raise GraphDefinitionError(name, "start has no outgoing edge")
    for source, transitions in edges.items():
        for t in transitions:
            if t.targets is not None and not t.targets:
                raise GraphDefinitionError(
                    name, f"the router after {source.name!r} declares an empty targets list"
                )
    _check_shadowed(name, edges)
    reachable = _reachable(start, edges, members, errors)
    if finish not in reachable:
        raise GraphDefinitionError(name, _unreachable_finish(reachable, members, copies))
    for member in members:
        if member not in reachable:
            raise GraphDefinitionError(
                name,
                f"node {member.name!r} cannot be reached from start"
                + _copy_hint(member, copies, members),
            )
        if member is not finish and not edges.get(member):
            raise GraphDefinitionError(
                name,
                f"node {member.name!r} has no outgoing edge, so a run would dead-end there"
                + _copy_hint(member, copies, members),
            )
    _check_names(name, tuple(m for m in members if m is not start and m is not finish))
    _check_copies(name, members, copies)


def _unreachable_finish(
    reachable: set[Node[Any, Any]], members: tuple[Node[Any, Any], ...], copies: Sequence[Copy]
) -> str:
    seen_nodes = [m for m in members if m in reachable]
    names = ", ".join(m.name for m in seen_nodes)
    problem = f"finish cannot be reached from start; start reaches {names} and no further"
    for node in seen_nodes:
        hint = _copy_hint(node, copies, members)
        if hint:
            return problem + hint
    return problem


def _copy_hint(
    node: Node[Any, Any], copies: Sequence[Copy], members: Sequence[Node[Any, Any]]
) -> str:
    """Why `node` may be stranded: it is one side of a settings copy wired with its original."""
    for copy in copies:
        both = copy.copy in members and copy.original in members
        if both and (node is copy.copy or node is copy.original):
            return (
                f". Note: {copy.original.name!r}.{copy.how}() made a copy, a different node; "
                "the original and the copy are both wired here, each with part of the edges. "
                f"Make the copy before wiring and wire only the copy "
                f"({copy.original.name} = {copy.original.name}.{copy.how}(...))"
            )
    return ""


def _check_names(name: str, members: tuple[Node[Any, Any], ...]) -> None:
    """Refuse two nodes of one graph with the same name: traces and resume tell steps by name."""
    seen: dict[str, Node[Any, Any]] = {}
    for member in members:
        other = seen.setdefault(member.name, member)
        if other is not member:
            raise GraphDefinitionError(
                name,
                f"two different nodes are named {member.name!r}; a graph's nodes need "
                "distinct names (traces, checkpoints and resume tell steps by name). Give one "
                f"a name of its own with name= (e.g. chat(..., name='draft')) or "
                f"node.with_name(...): the ready-made nodes share default names "
                f"({', '.join(DEFAULT_NAMES)})",
            )


DEFAULT_NAMES = ("generate", "chat", "tools", "answer", "retrieve", "summarize", "react_agent")
"""Default names of the ready-made nodes, which collide when one is used twice."""


def _check_copies(name: str, members: tuple[Node[Any, Any], ...], copies: Sequence[Copy]) -> None:
    """Refuse a settings copy made in the block and never used: the original runs without it."""
    held = set(members)
    for member in members:
        held.update(_children(member))
    for copy in copies:
        if copy.copy not in held and copy.original in held:
            raise GraphDefinitionError(
                name,
                f"{copy.original.name!r}.{copy.how}(...) returned a copy that was never wired, "
                f"so {copy.original.name!r} runs without that setting: {copy.how} returns a new "
                f"node; assign it and wire the copy ({copy.original.name} = "
                f"{copy.original.name}.{copy.how}(...))",
            )


def _children(node: Node[Any, Any]) -> list[Node[Any, Any]]:
    """Nodes held in `node`'s fields (a combinator's branches), which a copy may be among."""
    found: list[Node[Any, Any]] = []
    if not attrs.has(type(node)):
        return found
    for field in attrs.fields(type(node)):
        value = getattr(node, field.name, None)
        items = value if isinstance(value, tuple) else (value,)
        found.extend(item for item in items if isinstance(item, Node))
    return found


def _check_shadowed(name: str, edges: Mapping[Node[Any, Any], tuple[Transition, ...]]) -> None:
    """Refuse a transition that can never fire: a plain edge before it always does."""
    for source, transitions in edges.items():
        for position, t in enumerate(transitions[:-1]):
            if t.target is None:
                continue
            later = transitions[position + 1]
            what = repr(later.target.name) if later.target is not None else "a router"
            raise GraphDefinitionError(
                name,
                f"{source.name!r} has a plain edge to {t.target.name!r}, which always "
                f"fires, so its later transition to {what} never can. A node's "
                "transitions are tried in order: to choose between next nodes, give it "
                "one router (edge_to(lambda ctx: ..., targets=(...))); to run a node "
                "twice in a chain, use two nodes (node.with_name(...) makes a copy)",
            )


def _reachable(
    start: Node[Any, Any],
    edges: Mapping[Node[Any, Any], tuple[Transition, ...]],
    members: tuple[Node[Any, Any], ...],
    errors: Mapping[Node[Any, Any], tuple[ErrorTransition, ...]],
) -> set[Node[Any, Any]]:
    """Nodes reachable from start; a router without declared targets may reach any node."""
    seen: set[Node[Any, Any]] = set()
    todo = [start]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        for t in edges.get(node, ()):
            if t.target is not None:
                todo.append(t.target)
            elif t.targets is not None:
                todo.extend(t.targets)
            else:
                todo.extend(m for m in members if m is not start)
        todo.extend(t.target for t in errors.get(node, ()))
    return seen
