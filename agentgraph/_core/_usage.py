"""Usage limits: requests, tokens and cost a run (or a subgraph) may spend on models.

A `Meter` counts what the model calls inside its scope used; the runtime asks
every active meter before each model call (would one more request, or the
tokens already spent, pass a limit?) and adds the response's usage after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from ..llm._messages import Usage

__all__ = ("Meter", "OverLimit", "Price", "UsageLimits")


@attrs.frozen
class Price:
    """What a model costs, per million tokens.

    Input tokens read from the prompt cache cost `cached_input` and tokens
    written to it cost `cache_write` when those are given; otherwise they cost
    `input` like the rest.
    """

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def of(self, usage: Usage) -> float:
        """The cost of `usage` at this price."""
        fresh = usage.input_tokens
        cost = 0.0
        if self.cached_input is not None:
            fresh -= usage.cache_read_tokens
            cost += usage.cache_read_tokens * self.cached_input
        if self.cache_write is not None:
            fresh -= usage.cache_write_tokens
            cost += usage.cache_write_tokens * self.cache_write
        return (cost + fresh * self.input + usage.output_tokens * self.output) / 1e6


def _prices(value: Mapping[str, Price]) -> Mapping[str, Price]:
    return MappingProxyType(dict(value))


@attrs.frozen
class UsageLimits:
    """The most a run, or a subgraph each time it runs, may spend on model calls.

    Every limit is optional. `cost` needs `prices`, by model name as the
    request names it; a model missing from the table makes a cost limit fail
    the call rather than guess. Limits are checked before each model call
    (one more request, or tokens already at the limit, stops it) and after it
    with the real usage; passing one ends the run with `UsageLimitExceeded`.
    """

    requests: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None
    prices: Mapping[str, Price] = attrs.field(factory=dict, converter=_prices)


class OverLimit(Exception):
    """A model call would pass, or passed, a usage limit (becomes `UsageLimitExceeded`)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class Meter:
    """What the model calls within one scope have used, against its limits."""

    __slots__ = ("cost", "limits", "used")

    def __init__(self, limits: UsageLimits) -> None:
        self.limits = limits
        self.used = Usage()
        self.cost = 0.0

    def before(self, model: str) -> None:
        """Refuse a call that would pass a limit before it is made."""
        limits, used = self.limits, self.used
        if limits.requests is not None and used.requests + 1 > limits.requests:
            raise OverLimit(f"the request limit of {limits.requests} would be passed")
        for name, spent in (
            ("input_tokens", used.input_tokens),
            ("output_tokens", used.output_tokens),
            ("total_tokens", used.total_tokens),
        ):
            limit = getattr(limits, name)
            if limit is not None and spent >= limit:
                raise OverLimit(f"{spent} {name.replace('_', ' ')} spent, the limit is {limit}")
        if limits.cost is not None:
            if model not in limits.prices:
                raise OverLimit(f"a cost limit is set but model {model!r} has no price")
            if self.cost >= limits.cost:
                raise OverLimit(f"{self.cost:.6f} spent, the cost limit is {limits.cost}")

    def after(self, model: str, usage: Usage) -> None:
        """Add a call's usage; refuse to go on when it passed a limit."""
        self.used = self.used + usage
        price = self.limits.prices.get(model)
        if price is not None:
            self.cost += price.of(usage)
        limits, used = self.limits, self.used
        for name, spent in (
            ("input_tokens", used.input_tokens),
            ("output_tokens", used.output_tokens),
            ("total_tokens", used.total_tokens),
        ):
            limit: Any = getattr(limits, name)
            if limit is not None and spent > limit:
                raise OverLimit(f"{spent} {name.replace('_', ' ')} spent, the limit is {limit}")
        if limits.cost is not None and self.cost > limits.cost:
            raise OverLimit(f"{self.cost:.6f} spent, the cost limit is {limits.cost}")
