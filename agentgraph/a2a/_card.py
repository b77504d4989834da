"""Agent Cards: the one a served graph publishes, and checking the one a remote agent sends."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from a2a.types import a2a_pb2
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol
from google.protobuf import json_format

from .._core._graph import Graph
from ._errors import A2AFormatError
from ._parts import field_of

__all__ = ("BINDINGS", "Skill", "agent_card", "parse_card")

BINDINGS = (TransportProtocol.JSONRPC.value, TransportProtocol.HTTP_JSON.value)
"""The protocol bindings a served graph speaks, in order of preference."""


@attrs.frozen
class Skill:
    """One thing the agent can do, as its card lists it."""

    id: str
    name: str
    description: str
    tags: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


def _modes(tp: Any) -> list[str]:
    return ["text/plain"] if tp is str else ["application/json", "text/plain"]


def agent_card(
    graph: Graph[Any, Any],
    *,
    url: str,
    name: str | None = None,
    description: str | None = None,
    version: str = "1.0.0",
    skills: Sequence[Skill] = (),
) -> a2a_pb2.AgentCard:
    """The Agent Card of `graph` served at `url`: both bindings, streaming, its skills.

    Without `skills` the card lists one: the graph itself, named after it.
    """
    shown = name or graph.name
    about = description or f"The agentgraph graph {graph.name!r}."
    listed = list(skills) or [Skill(graph.name, shown, about, tags=("agentgraph",))]
    base = url.rstrip("/")
    return a2a_pb2.AgentCard(
        name=shown,
        description=about,
        version=version,
        supported_interfaces=[
            a2a_pb2.AgentInterface(
                url=base, protocol_binding=binding, protocol_version=PROTOCOL_VERSION_CURRENT
            )
            for binding in BINDINGS
        ],
        capabilities=a2a_pb2.AgentCapabilities(streaming=True),
        default_input_modes=_modes(graph.input_type),
        default_output_modes=_modes(graph.output_type),
        skills=[
            a2a_pb2.AgentSkill(
                id=s.id,
                name=s.name,
                description=s.description,
                tags=list(s.tags),
                examples=list(s.examples),
            )
            for s in listed
        ],
    )


def parse_card(agent: str, data: Any) -> a2a_pb2.AgentCard:
    """A remote agent's card from its JSON; `A2AFormatError` naming the first bad field."""
    if not isinstance(data, Mapping):
        raise A2AFormatError(agent, "(card)", f"the card is a {type(data).__name__}, not an object")
    try:
        card = json_format.ParseDict(dict(data), a2a_pb2.AgentCard(), ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise A2AFormatError(agent, field_of(exc), str(exc)) from exc
    if not card.name:
        raise A2AFormatError(agent, "name", "the card has no name")
    if not card.supported_interfaces:
        raise A2AFormatError(agent, "supportedInterfaces", "the card lists no interface")
    for i, interface in enumerate(card.supported_interfaces):
        if not interface.url:
            raise A2AFormatError(agent, f"supportedInterfaces.{i}.url", "the interface has no url")
        if not interface.protocol_binding:
            where = f"supportedInterfaces.{i}.protocolBinding"
            raise A2AFormatError(agent, where, "the interface names no binding")
    return card
