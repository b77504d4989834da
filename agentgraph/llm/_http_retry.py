"""How a provider client retries one HTTP exchange: `ProviderRetry`.

Which errors are retryable, and the delay a server asked for, is decided
where the error is built (`_http`); this module decides how long to wait and
when to give up.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import attrs
import tenacity

from .._core._errors import ProviderError, RateLimitError
from .._core._retry import attempts_made, retry_after_first

__all__ = ("ProviderRetry",)

T = TypeVar("T")

_log = logging.getLogger("agentgraph.llm")


def _throttled(error: BaseException | None) -> bool:
    """A retryable refusal that waiting out will clear: rate limits and overload."""
    if not isinstance(error, ProviderError) or not error.retryable:
        return False
    return isinstance(error, RateLimitError) or error.status in (503, 529)


@attrs.frozen
class ProviderRetry:
    """How a provider client retries one HTTP exchange before any output reached the caller.

    Up to `1 + max_retries` attempts, for retryable errors only. A delay the
    server asks for (`retry-after-ms`, `retry-after`) is slept exactly when it
    is at most `max_retry_after`; a longer one is not retried at all. Otherwise
    the wait is `min(initial * 2**n, max_delay)` with 75-100 % jitter, starting
    from `overload_initial` after a 529 overload. `sleep` is injectable so tests
    can record the waits.

    A service that throttles (429 that can clear, 503, 529) is given time as
    well as attempts: past `max_retries`, such a request is tried again while
    the waits add up to at most `max_elapsed` seconds (and never past the
    caller's deadline, such as a run's timeout), so a brownout shorter than
    that costs latency instead of runs. `max_elapsed=None` counts attempts only.

    A server-given delay is never shortened, but up to `retry_after_jitter`
    of it is added at random: clients told to come back at the same moment
    (a limit's window resets, a brownout ends) then return spread out over
    that margin instead of all at once. `0` sleeps exactly the delay.
    """

    max_retries: int = attrs.field(default=2, validator=attrs.validators.ge(0))
    initial: float = 0.5
    max_delay: float = 8.0
    overload_initial: float = 2.0
    max_retry_after: float = 60.0
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep
    max_elapsed: float | None = 30.0
    retry_after_jitter: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))

    def wait_for(self, error: BaseException | None, retries: int) -> float:
        """Seconds to wait after `error`, when `retries` retries were already made."""
        retry_after = getattr(error, "retry_after", None)
        if isinstance(retry_after, float | int) and 0 < retry_after <= self.max_retry_after:
            return float(retry_after) * (1.0 + self.retry_after_jitter * random.random())
        base = self.overload_initial if getattr(error, "status", None) == 529 else self.initial
        return min(base * 2.0**retries, self.max_delay) * (1.0 - 0.25 * random.random())

    async def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run `fn`, retrying retryable `ProviderError`s; the first try skips tenacity."""
        try:
            return await fn()
        except ProviderError as exc:
            if not (exc.retryable and self.max_retries):
                raise
            first = exc
        return await self._retry(fn, first)

    async def _retry(self, fn: Callable[[], Awaitable[T]], first: ProviderError) -> T:
        def wait(state: tenacity.RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome is not None else None
            return self.wait_for(error, state.attempt_number - 1)

        def log(state: tenacity.RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            delay = state.next_action.sleep if state.next_action is not None else 0.0
            _log.debug(
                "%s; retry %d of %d in %.2fs", error, state.attempt_number, self.max_retries, delay
            )

        waited = [0.0]

        def wait_and_count(state: tenacity.RetryCallState) -> float:
            seconds = wait(state)
            waited[0] += seconds
            return seconds

        def stop(state: tenacity.RetryCallState) -> bool:
            if state.attempt_number < 1 + self.max_retries:
                return False
            error = state.outcome.exception() if state.outcome is not None else None
            if self.max_elapsed is None or not _throttled(error):
                return True
            # tenacity computes the wait before asking to stop: `waited` includes it already.
            if waited[0] > self.max_elapsed:
                return True
            deadline = anyio.current_effective_deadline()
            return anyio.current_time() + state.upcoming_sleep >= deadline

        retrying = tenacity.AsyncRetrying(
            stop=stop,
            wait=wait_and_count,
            retry=tenacity.retry_if_exception(
                lambda e: isinstance(e, ProviderError) and e.retryable
            ),
            sleep=self.sleep,
            before_sleep=log,
            reraise=True,
        )
        try:
            return await retry_after_first(retrying, fn, first)
        except ProviderError as exc:
            # The runner reads this and does not retry the node on top of us.
            exc.attempts = attempts_made(retrying)
            raise
