"""Provider rate limits shared by every actor of a batch: one named Ray actor keeps the buckets.

Each limited provider (or model) has a request bucket and a token bucket that
refill continuously up to one minute's allowance. A call takes one request
and its estimated input tokens before it is sent, waiting as long as the
buckets say; once it ended, the difference between the estimate and the real
usage is settled, so a long answer slows the calls after it. A 429 with
`retry-after` pauses its bucket for every actor until then.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import anyio
import attrs

from .._core._errors import ProviderError
from ..llm._messages import Usage
from ..llm._model import ChatRequest

__all__ = ("Buckets", "RateLimit", "SharedRateLimits", "estimate_tokens")

_DEFAULT_PAUSE = 1.0
"""Seconds a 429 without `retry-after` pauses its bucket."""


def _positive_or_none(_: Any, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{attribute.name} is a positive number or None, not {value!r}")


@attrs.frozen
class RateLimit:
    """What one provider (or one model) allows per minute, shared by every actor of a batch.

    Args:
        requests_per_minute: requests sent per minute; None for no limit.
        tokens_per_minute: tokens (input and output) per minute; None for no limit.
    """

    requests_per_minute: float | None = attrs.field(default=None, validator=_positive_or_none)
    tokens_per_minute: float | None = attrs.field(default=None, validator=_positive_or_none)


def estimate_tokens(request: ChatRequest) -> int:
    """The input tokens of `request`, estimated high enough to reserve: characters / 4."""
    chars = sum(len(m.content or "") + len(m.reasoning or "") for m in request.messages)
    return max(1, chars // 4)


class _Bucket:
    """Refills at `per_minute / 60` a second up to `per_minute`; may go below zero (a debt)."""

    __slots__ = ("level", "per_minute", "stamp")

    def __init__(self, per_minute: float, now: float) -> None:
        self.per_minute = per_minute
        self.level = per_minute
        self.stamp = now

    def take(self, amount: float, now: float) -> float:
        """Take `amount` and return the seconds until the bucket is out of debt."""
        rate = self.per_minute / 60.0
        self.level = min(self.per_minute, self.level + (now - self.stamp) * rate)
        self.stamp = now
        self.level -= amount
        return 0.0 if self.level >= 0 else -self.level / rate


class Buckets:
    """The state behind a batch's rate limits; runs as one named Ray actor.

    `take` reserves a call's share and answers how long the caller must wait
    first; `settle` adds what the call really used beyond its estimate;
    `pause` holds a bucket closed until `retry-after` has passed.
    """

    def __init__(self, limits: Mapping[str, RateLimit]) -> None:
        now = time.monotonic()
        self._requests = {
            key: _Bucket(limit.requests_per_minute, now)
            for key, limit in limits.items()
            if limit.requests_per_minute is not None
        }
        self._tokens = {
            key: _Bucket(limit.tokens_per_minute, now)
            for key, limit in limits.items()
            if limit.tokens_per_minute is not None
        }
        self._paused: dict[str, float] = {}

    def take(self, key: str, tokens: int) -> float:
        now = time.monotonic()
        wait = self._paused.get(key, now) - now
        requests = self._requests.get(key)
        if requests is not None:
            wait = max(wait, requests.take(1, now))
        bucket = self._tokens.get(key)
        if bucket is not None:
            wait = max(wait, bucket.take(tokens, now))
        return max(0.0, wait)

    def settle(self, key: str, extra_tokens: int) -> None:
        bucket = self._tokens.get(key)
        if bucket is not None and extra_tokens:
            bucket.take(extra_tokens, time.monotonic())

    def pause(self, key: str, seconds: float) -> None:
        until = time.monotonic() + seconds
        self._paused[key] = max(self._paused.get(key, 0.0), until)


@attrs.define
class SharedRateLimits:
    """A `ModelGate` that consults the batch's `Buckets` actor before each limited call.

    A call is limited by its model's name when `limits` has it, else by its
    provider's name; any other call passes without asking the actor.
    """

    keys: frozenset[str]
    actor: Any  # a handle to the Buckets actor

    def key(self, provider: str, model: str) -> str | None:
        if model in self.keys:
            return model
        return provider if provider in self.keys else None

    async def admit(self, provider: str, model: str, request: ChatRequest) -> None:
        key = self.key(provider, model)
        if key is None:
            return
        wait: float = await self.actor.take.remote(key, estimate_tokens(request))
        if wait > 0:
            await anyio.sleep(wait)

    def settle(
        self,
        provider: str,
        model: str,
        request: ChatRequest,
        usage: Usage | None,
        error: Exception | None,
    ) -> None:
        key = self.key(provider, model)
        if key is None:
            return
        if isinstance(error, ProviderError) and error.status == 429:
            after = error.retry_after
            self.actor.pause.remote(
                key, after if after is not None and after > 0 else _DEFAULT_PAUSE
            )
        if usage is not None:
            self.actor.settle.remote(key, usage.total_tokens - estimate_tokens(request))
