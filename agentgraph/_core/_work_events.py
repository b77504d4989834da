"""Events a step sends about its work: model and tool calls, guards, structured
output, summaries, handoffs, retrieval and embeddings (`agentgraph._core._events` holds
the run and step events, and re-exports these)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..llm._messages import Message, ToolCall, Usage
from ..llm._model import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from ..structured._partial import Partial

__all__ = (
    "ContextEntry",
    "Embedded",
    "GuardDecided",
    "HandedOff",
    "ModelRequested",
    "ModelResponded",
    "ModelStreamed",
    "OutputAttempt",
    "PartialOutput",
    "Retrieved",
    "RetrievedSource",
    "StructuredOutput",
    "Summarized",
    "ToolFinished",
)


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
    """A guard decided about a model's input, an answer, a tool call or a tool's result.

    Attributes:
        guard: the guard's name.
        stage: `"input"`, `"output"`, `"tool"` or `"result"`.
        action: `"allow"`, `"block"` or `"rewrite"`.
        reason: why, in the guard's words (empty for a plain allow).
        detail: the guard's structured findings (a judge's verdict, the
            matched rule, what was masked).
        replayed: True when the decision came from the run's record (a resume
            or replay), so the guard (a judge's model, say) was not asked again.
        usage: for a model call the guard cancelled, what the provider had
            reported before the cancel (`partial` is then True).
        spent: what the guard itself spent on models to decide (a judge's
            calls), counted in the run's usage and limits; None if it asked none.
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
    spent: Usage | None = None


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
