"""The effects a step has on the world, each kind one small frozen value.

`Runtime`'s effect methods (`call_model`, `stream_model`, `call_tools`,
`embed`, `once`, `interrupt`, and the calls of `memory`) each build one of these
and hand it to the run's stack of layers (`_layers.py`); a layer may read it, pass
on a changed copy (`attrs.evolve`), refuse it (raise), or answer it without passing
it on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import attrs

from ..llm._embedder import Embedder
from ..llm._messages import ToolCall
from ..llm._model import ChatModel, ChatRequest
from ._context import AgentContext

__all__ = (
    "EmbedEffect",
    "Effect",
    "InterruptEffect",
    "MemoryEffect",
    "ModelCallEffect",
    "ModelStreamEffect",
    "OnceEffect",
    "ToolCallsEffect",
    "ToolLike",
)


class ToolLike(Protocol):
    """What the engine reads of a tool (`agentgraph.tools.Tool` is one); running it is
    the tools' own business (`agentgraph.tools` answers every `ToolCallsEffect`)."""

    @property
    def name(self) -> str:
        """The name the model calls the tool by."""
        ...

    @property
    def retry_safe(self) -> bool:
        """False for a tool with side effects that must not be repeated."""
        ...


@attrs.frozen(slots=True)
class ModelCallEffect:
    """A request to a model, answered by one `ChatResponse` (`Runtime.call_model`).

    Attributes:
        model: the client the request goes to.
        request: what is sent.
    """

    model: ChatModel
    request: ChatRequest

    @property
    def name(self) -> str:
        """The model the request goes to: the request's own, else the client's."""
        return self.request.model or self.model.name


@attrs.frozen(slots=True)
class ModelStreamEffect:
    """A request to a model, answered as a stream of events ending in `ResponseDone`
    (`Runtime.stream_model`).

    Attributes:
        model: the client the request goes to.
        request: what is sent.
    """

    model: ChatModel
    request: ChatRequest

    @property
    def name(self) -> str:
        """The model the request goes to: the request's own, else the client's."""
        return self.request.model or self.model.name


@attrs.frozen(slots=True)
class ToolCallsEffect:
    """A model's tool calls, run with `tools` only and answered in call order
    (`Runtime.call_tools`): a list of `(call, message, duration)`.

    Attributes:
        tools: the tools the calls may use.
        calls: the calls to answer.
        limit: how many run at once.
        timeout: seconds each call may take, or None.
        context: the step's context, for tools that take it.
        max_result_chars: where a result is clipped, or None.
    """

    tools: Sequence[ToolLike]
    calls: Sequence[ToolCall]
    limit: int = 8
    timeout: float | None = None
    context: AgentContext[Any] | None = None
    max_result_chars: int | None = None


@attrs.frozen(slots=True)
class EmbedEffect:
    """Texts to embed, answered by one vector per text (`Runtime.embed`).

    Attributes:
        embedder: what embeds them.
        texts: the texts.
    """

    embedder: Embedder
    texts: Sequence[str]


@attrs.frozen(slots=True)
class OnceEffect:
    """A node's own I/O, made once per run (`Runtime.once`): `fn(*args)`, sync or async.

    Attributes:
        name: the name the node gave the value.
        fn: what makes it.
        args: its arguments.
    """

    name: str
    fn: Callable[..., Any | Awaitable[Any]]
    args: tuple[Any, ...] = ()


@attrs.frozen(slots=True)
class InterruptEffect:
    """A question for outside input (`Runtime.interrupt`), answered on resume.

    Attributes:
        question: what the node asks.
    """

    question: Any


@attrs.frozen(slots=True)
class MemoryEffect:
    """A call to a long-term memory store (`agentgraph.memory`) through `Runtime.memory`,
    answered by what the store returns.

    The journal records it under `name` and serves the record back on resume and
    replay; a write reaches the store with the id the journal gives it, which the
    store applies once, so a write is never made twice.

    Attributes:
        memory: the store.
        operation: the store's method called (`put`, `put_many`, `delete`, `get`,
            `search`, `list_namespaces`).
        name: the call with where it reads or writes (`put user/42:diet`).
        call: makes the call, given `effect_id`.
        encode: the result as the record keeps it.
        decode: a record back into the result, given it and the key it was found under.
        write: True for a call that changes the store.
        effect_id: the call's id in the run (set by the run's journal, None without
            one): a write is applied once under it.
    """

    memory: Any
    operation: str
    name: str
    call: Callable[[str | None], Awaitable[Any]]
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes, str], Any]
    write: bool = False
    effect_id: str | None = None


Effect = (
    ModelCallEffect
    | ModelStreamEffect
    | ToolCallsEffect
    | EmbedEffect
    | MemoryEffect
    | OnceEffect
    | InterruptEffect
)
"""Every kind of effect a layer may see."""
