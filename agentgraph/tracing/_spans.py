"""What each kind of work is called in OpenTelemetry: one place for the GenAI span vocabulary.

The OpenTelemetry semantic conventions for generative AI name an operation
(`gen_ai.operation.name`) and build the span's name from it and its target:
`invoke_workflow {graph}`, `invoke_agent {agent}`, `chat {model}`,
`execute_tool {tool}`, `retrieval {source}`, `embeddings {model}`. Sinks and
features that add spans (teams of agents, say) take names from here, so a
trace keys the same way whoever made the span.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = (
    "AGENT",
    "CHAT",
    "EMBEDDINGS",
    "RETRIEVAL",
    "TOOL",
    "WORKFLOW",
    "Operation",
    "conversation_id",
    "graph_operation",
    "operation_attributes",
    "span_name",
    "step_operation",
    "turn_agent",
)

Operation = Literal[
    "invoke_workflow", "invoke_agent", "chat", "execute_tool", "retrieval", "embeddings"
]

WORKFLOW: Operation = "invoke_workflow"
AGENT: Operation = "invoke_agent"
CHAT: Operation = "chat"
TOOL: Operation = "execute_tool"
RETRIEVAL: Operation = "retrieval"
EMBEDDINGS: Operation = "embeddings"


def span_name(operation: Operation, target: str) -> str:
    """`{operation} {target}`, as the conventions name spans (the operation alone without one)."""
    return f"{operation} {target}" if target else operation


def graph_operation(agent: bool) -> Operation:
    """A graph's run: an agent's invocation, or a workflow's."""
    return AGENT if agent else WORKFLOW


def step_operation(node: Any) -> Operation | None:
    """The GenAI operation a step is, if any: a nested graph, an agent, a retrieval.

    Other steps (plain nodes, combinators) are agentgraph's own spans, named
    after the node.
    """
    from .._core._graph import Graph
    from ..nodes._retrieve import Retrieve

    if isinstance(node, Graph):
        return graph_operation(node.agent)
    if isinstance(node, Retrieve):
        return RETRIEVAL
    return None


def operation_attributes(
    operation: Operation, name: str, conversation: str | None
) -> dict[str, Any]:
    """The GenAI attributes of a workflow, agent or retrieval span named `name`."""
    attributes: dict[str, Any] = {"gen_ai.operation.name": operation}
    if operation == AGENT:
        attributes["gen_ai.agent.name"] = name
    elif operation == WORKFLOW:
        attributes["gen_ai.workflow.name"] = name
    elif operation == RETRIEVAL:
        attributes["gen_ai.data_source.id"] = name
    if conversation is not None and operation in (AGENT, WORKFLOW, CHAT):
        attributes["gen_ai.conversation.id"] = conversation
    return attributes


def conversation_id(run_id: str, thread_id: str | None = None) -> str:
    """`gen_ai.conversation.id`: the thread a run belongs to, else the run itself.

    A run started on a conversation thread passes its thread id, so every run
    of the conversation shares one id; a run on its own is its own conversation.
    """
    return thread_id or run_id


def turn_agent(node: Any, path: tuple[str, ...], ctx: Any) -> str | None:
    """The team agent whose turn a starting step is part of (`agentgraph.teams`), or None.

    Each turn of an agent in a team is one `invoke_agent` span: its chat and
    tool steps, and the handoff step that ends it, nest under that span.
    """
    from ..teams._nodes import turn_agent as of_team

    return of_team(node, path, ctx)
