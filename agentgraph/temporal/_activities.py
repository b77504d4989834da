"""The activities that make a run's effects: model calls, tool calls, embeddings, `once`.

Each runs in the worker outside the workflow sandbox, finds what it calls by
name in the worker's registry, and beats while it runs so that a lost worker
is noticed within the heartbeat timeout. A provider error reaches Temporal as
non-retryable: the provider client already spent its own retries on it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from .._core._context import AgentContext
from .._core._errors import GuardError, ProviderError, UsageError
from .._core._journal import ToolAnswer
from .._util._clip import MAX_RESULT_CHARS
from ..guards._check import ask_one, decide
from ..guards._effects import result_outcome
from ..llm._messages import ToolCall
from ..llm._model import ChatRequest, ChatResponse
from ..tools._execute import run_tool_calls
from ._registry import Registry, guards_of
from ._workflow import EMBED, GUARD, MODEL, ONCE, TOOL

__all__ = ("Activities",)


@asynccontextmanager
async def _beating() -> AsyncIterator[None]:
    """Heartbeat three times per heartbeat timeout while the block runs.

    A task of its own rather than a task group, so that the block's own error
    leaves it as it is, not wrapped in an exception group.
    """
    timeout = activity.info().heartbeat_timeout
    if timeout is None:
        yield
        return
    period = max(timeout.total_seconds() / 3, 0.05)

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(period)

    beating = asyncio.create_task(beat())
    try:
        yield
    finally:
        beating.cancel()
        await asyncio.wait([beating])  # never swallows a cancellation of this task


def _final(error: Exception) -> ApplicationError:
    return ApplicationError(str(error), type=type(error).__name__, non_retryable=True)


class Activities:
    """The worker's activities over its registry (`methods` lists them for the `Worker`)."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry

    @property
    def methods(self) -> list[Any]:
        return [self.model, self.tool, self.embed, self.once, self.guard]

    def _lookup(self, kind: str, name: str) -> Any:
        try:
            return self._registry.lookup(kind, name)
        except UsageError as error:
            raise _final(error) from None

    @activity.defn(name=MODEL)
    async def model(self, name: str, request: ChatRequest) -> ChatResponse:
        model = self._lookup("models", name)
        async with _beating():
            try:
                response: ChatResponse = await model.request(request)
            except ProviderError as error:
                raise _final(error) from error
        return response

    @activity.defn(name=TOOL)
    async def tool(
        self,
        allowed: Sequence[str],
        call: ToolCall,
        timeout: float | None,  # noqa: ASYNC109 - each call's limit, passed on
        context: AgentContext[Any] | None,
        max_result_chars: int | None = MAX_RESULT_CHARS,
        checked: bool = False,
    ) -> Any:
        """The call's answer; with `checked`, as the runner's result guards left it, and
        their records after it (the raw result never leaves the activity)."""
        tools = [self._lookup("tools", name) for name in allowed]
        async with _beating():
            (outcome,) = await run_tool_calls(
                tools, [call], timeout=timeout, context=context, max_result_chars=max_result_chars
            )
            answer: ToolAnswer = (outcome.call, outcome.message, outcome.duration)
            guards = guards_of(self._registry.runner.guards)
            if not checked or guards is None:
                return answer
            try:
                records = await decide(guards.results, "result", answer[1], guards.timeout)
            except GuardError as error:  # a guard that cannot work as written
                raise _final(error) from error
        return [*result_outcome(guards, answer, records), records]

    @activity.defn(name=EMBED)
    async def embed(self, name: str, texts: list[str]) -> list[list[float]]:
        embedder = self._lookup("embedders", name)
        async with _beating():
            try:
                vectors: list[list[float]] = await embedder.embed(texts)
            except ProviderError as error:
                raise _final(error) from error
        return vectors

    @activity.defn(name=ONCE)
    async def once(self, name: str, args: list[Any]) -> Any:
        fn = self._lookup("functions", name)
        async with _beating():
            result = fn(*args)
            if inspect.isawaitable(result):
                result = await result
        return result

    @activity.defn(name=GUARD)
    async def guard(
        self,
        stage: str,
        name: str,
        value: Any,
        limit: float,
    ) -> dict[str, Any]:
        """One guard's decision about `value` (a guard that is not deterministic: a judge)."""
        found = self._lookup("guards", name)
        async with _beating():
            try:
                decision = await ask_one(found, stage, value, limit)  # type: ignore[arg-type]
            except GuardError as error:  # a guard that cannot work as written
                raise _final(error) from error
        return {
            "action": decision.action,
            "reason": decision.reason,
            "value": decision.value,
            "detail": dict(decision.detail),
            "usage": decision.usage,
        }
