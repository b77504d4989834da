"""Step events: everything observable about a run, as one stream of frozen records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs

from ._context import AgentContext
from .llm._messages import Message, ToolCall, Usage
from .llm._model import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from ._node import Node
    from .nodes._partial import Partial

__all__ = (
    "ContextEntry",
    "Embedded",
    "Event",
    "GuardDecided",
    "OutputAttempt",
    "PartialOutput",
    "StructuredOutput",
    "ModelRequested",
    "ModelResponded",
    "ModelStreamed",
    "ToolFinished",
    "NodeFailedEvent",
    "NodeFinished",
    "NodeStarted",
    "RetryScheduled",
    "RouteChosen",
    "RunFinished",
    "RunStarted",
    "StepInfo",
    "Retrieved",
    "RetrievedSource",
    "Summarized",
    "HandedOff",
)


class StepInfo(NamedTuple):
    """Where a finished step sits in its run.

    A named tuple rather than an attrs class: one is built for every step, and
    a tuple costs a quarter as much to build.

    Attributes:
        index: run-wide step number, from 1, counting nested steps too.
        local_index: step number within the graph (or combinator) that ran it, from 1.
        depth: 0 for nodes of the graph passed to the runner, +1 per nesting level.
        path: node names from the root graph down to this node.
        attempts: how many attempts the step took (1 when it succeeded first time).
        duration: seconds from the step's start to its end, retries included.
    """

    index: int  # type: ignore[assignment]  # the step's number, in place of tuple.index
    local_index: int
    depth: int
    path: tuple[str, ...]
    attempts: int
    duration: float


@attrs.frozen(slots=False)
class RunStarted:
    """A run began: its root graph's name, its first context, and its id.

    The run id is the one the handle, the checkpoint store and every sink use;
    `thread_id` names the thread the run is a turn of (None outside a thread).
    """

    graph: str
    context: AgentContext[Any]
    run_id: str = ""
    agent: bool = False
    """True when the root graph is an agent (`Graph.as_agent()`), as `react_agent`'s are."""
    thread_id: str | None = None


@attrs.frozen(slots=False)
class NodeStarted:
    """A step began. `parent` is the index of the step it runs inside (0 at the top).

    Concurrent branches share a path, so `parent` is what places a step in the tree.
    """

    index: int
    local_index: int
    depth: int
    path: tuple[str, ...]
    node: Node[Any, Any]
    context: AgentContext[Any]
    parent: int = 0


@attrs.frozen(slots=False)
class NodeFinished:
    """A step completed: its `StepInfo`, the node, and the context it returned."""

    step: StepInfo
    node: Node[Any, Any]
    context: AgentContext[Any]


@attrs.frozen(slots=False)
class RouteChosen:
    """Which transition fired after a node: `transition` is its position among the node's."""

    index: int
    path: tuple[str, ...]
    source: str
    target: str
    transition: int
    dynamic: bool
    on_error: bool = False
    """True when the step failed and an error transition (`Node.on_error`) fired."""


@attrs.frozen(slots=False)
class RetryScheduled:
    """A failed step will run again after `wait` seconds; `attempt` is the one that failed."""

    index: int
    path: tuple[str, ...]
    attempt: int
    wait: float
    error: BaseException


@attrs.frozen(slots=False)
class NodeFailedEvent:
    """A step failed for good: after `attempts` attempts, with `error` (retries exhausted)."""

    index: int
    path: tuple[str, ...]
    attempts: int
    error: BaseException


@attrs.frozen(slots=False)
class RunFinished:
    """The last event of a run: `error` is None when the run reached finish."""

    context: AgentContext[Any]
    steps: int
    error: BaseException | None = None


@attrs.frozen(slots=False)
class ModelRequested:
    """A node is about to call a model: the exact request, as rendered from the context."""

    index: int
    path: tuple[str, ...]
    model: str
    request: ChatRequest
    provider: str = ""
    """The provider's name (`openai`, `anthropic`, ...) when the client says it."""
    server: str = ""
    """The base URL the client talks to (credentials removed), when it says it."""


@attrs.frozen(slots=False)
class ModelResponded:
    """The model answered: the full response and how long it took."""

    index: int
    path: tuple[str, ...]
    model: str
    response: ChatResponse
    latency: float


@attrs.frozen(slots=False)
class ModelStreamed:
    """A streaming model call received more of its answer's text, as it arrived.

    Only streamed calls send these (`chat(..., stream=True)`, streaming
    `generate`); the whole answer is in the `ModelResponded` that follows.
    """

    index: int
    path: tuple[str, ...]
    text: str


@attrs.frozen(slots=False)
class ToolFinished:
    """A tool call ended: its call, the result message (maybe an error) and its duration."""

    index: int
    path: tuple[str, ...]
    call: ToolCall
    result: Message
    duration: float


@attrs.frozen(slots=False)
class GuardDecided:
    """A guard decided about a model's input, an answer or a tool call.

    Attributes:
        guard: the guard's name.
        stage: `"input"`, `"output"` or `"tool"`.
        action: `"allow"`, `"block"` or `"rewrite"`.
        reason: why, in the guard's words (empty for a plain allow).
        detail: the guard's structured findings (a judge's verdict, the
            matched rule, what was masked).
        replayed: True when the decision came from the run's record (a resume
            or replay), so the guard (a judge's model, say) was not asked again.
        usage: for a model call the guard cancelled, what the provider had
            reported before the cancel (`partial` is then True).
    """

    index: int
    path: tuple[str, ...]
    guard: str
    stage: str
    action: str
    reason: str = ""
    detail: Mapping[str, Any] = attrs.field(factory=dict)
    replayed: bool = False
    usage: Usage | None = None
    partial: bool = False


@attrs.frozen
class ContextEntry:
    """One labelled context section of a `generate` prompt.

    Attributes:
        label: the section's heading in the prompt.
        chars: the length of the section's full text.
        shown: how many of those characters the prompt shows.
        clipped: True when the budget cut the text (`shown < chars`).
        source: where the text came from: `state['key']`, or the function's name.
        text: the text the prompt shows (clipped as shown).
    """

    label: str
    chars: int
    shown: int
    clipped: bool
    source: str = ""
    text: str = ""


@attrs.frozen
class OutputAttempt:
    """One answer to a `generate` call: the raw text and what validation said of it.

    `repairs` names what the lenient parser repaired to read it (see
    `agentgraph.structured.Repaired`); empty for valid JSON.
    """

    number: int
    raw: str
    ok: bool
    errors: tuple[str, ...] = ()
    finish_reason: str | None = None
    usage: Usage = attrs.field(factory=Usage)
    repairs: tuple[str, ...] = ()


@attrs.frozen(slots=False)
class StructuredOutput:
    """A `generate` call ended: what it asked, every attempt, and the value (None on failure).

    `config` holds the node's own options (`attempts`, `strict`, `native`,
    `stream`, `temperature`, `max_output`, `think`); the full requests are in
    the `ModelRequested` events.
    """

    index: int
    path: tuple[str, ...]
    model: str
    output_type: str
    instruction: str
    config: Mapping[str, Any]
    context: tuple[ContextEntry, ...]
    attempts: tuple[OutputAttempt, ...]
    ok: bool
    value: Any
    usage: Usage


@attrs.frozen(slots=False)
class PartialOutput:
    """A streaming `generate` call received more of its answer (`attempt` counts from 1)."""

    index: int
    path: tuple[str, ...]
    attempt: int
    partial: Partial[Any]


@attrs.frozen(slots=False)
class Summarized:
    """A `summarize` node replaced older history with a summary.

    Attributes:
        strategy: `whole`, `keep_last` or `chunked`.
        summarized: how many messages the summary replaced.
        kept: how many messages after the summary were kept verbatim.
        tokens_before: estimated tokens of system prompt plus history before.
        tokens_after: the same, after.
        requests: model calls the summary took (more than one when chunked).
    """

    index: int
    path: tuple[str, ...]
    strategy: str
    summarized: int
    kept: int
    tokens_before: int
    tokens_after: int
    requests: int


@attrs.frozen(slots=False)
class HandedOff:
    """A team's conversation passed from one agent to another (`agentgraph.teams`).

    Attributes:
        source: the agent that held the conversation.
        target: the agent that holds it now.
        history: the policy the target read it by (`full`, `summary`, `none`,
            `function`); `return` when a sub-task handed back to its caller.
        messages: how many messages the target reads.
        task: what the source asked for (the handoff's `task`), or None.
    """

    index: int
    path: tuple[str, ...]
    source: str
    target: str
    history: str
    messages: int
    task: str | None = None


@attrs.frozen
class RetrievedSource:
    """One hit of a `retrieve` node and how much of it went into the context.

    Attributes:
        label: the source's label in the context.
        id: the record id in the vector store.
        score: cosine similarity to the query.
        chars: the length of the passage.
        shown: how many of its characters went in (0: left out by the budget).
        clipped: True when the budget cut or dropped it (`shown < chars`).
    """

    label: str
    id: str
    score: float
    chars: int
    shown: int
    clipped: bool


@attrs.frozen(slots=False)
class Retrieved:
    """A `retrieve` node searched a vector store: the query, every hit and what was clipped."""

    index: int
    path: tuple[str, ...]
    query: str
    k: int
    sources: tuple[RetrievedSource, ...]
    max_chars: int | None = None
    max_tokens: int | None = None


@attrs.frozen(slots=False)
class Embedded:
    """An embedder turned `texts` texts into vectors of `dimensions` numbers (`rt.embed`)."""

    index: int
    path: tuple[str, ...]
    embedder: str
    texts: int
    dimensions: int | None
    duration: float


Event = (
    RunStarted
    | NodeStarted
    | NodeFinished
    | RetryScheduled
    | RouteChosen
    | NodeFailedEvent
    | RunFinished
    | ModelRequested
    | ModelResponded
    | ModelStreamed
    | ToolFinished
    | GuardDecided
    | StructuredOutput
    | PartialOutput
    | Summarized
    | Retrieved
    | Embedded
    | HandedOff
)
