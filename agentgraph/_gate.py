"""A gate every model call passes through before it reaches the provider.

`GraphRunner(model_gate=...)` hands each run a gate: the runtime awaits
`admit` before a model call is sent (a call served from a checkpoint record
is not sent, so it is not admitted) and calls `settle` once the call ended,
with its usage or the error it raised. Rate limits shared by many processes
(`agentgraph.ray`) are one such gate. Without a gate, a model call costs
nothing extra.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .llm._messages import Usage
from .llm._model import ChatModel, ChatRequest

__all__ = ("ModelGate", "provider_of")


@runtime_checkable
class ModelGate(Protocol):
    """Admits model calls: `admit` may wait (a rate limit) or raise (a refusal).

    `provider` is the client's provider name (`openai`, `anthropic`, ...; empty
    for a model that names none) and `model` the model the request goes to.
    `settle` must not block: it is called on the event loop after each
    admitted call, with the response's usage, or with the error instead.
    """

    async def admit(self, provider: str, model: str, request: ChatRequest) -> None: ...

    def settle(
        self,
        provider: str,
        model: str,
        request: ChatRequest,
        usage: Usage | None,
        error: Exception | None,
    ) -> None: ...


def provider_of(model: ChatModel) -> str:
    """The provider name a model's client gives, or an empty string."""
    provider = getattr(model, "provider", "")
    return provider if isinstance(provider, str) else ""
