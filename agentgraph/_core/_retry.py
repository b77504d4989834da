"""`RetryPolicy`: when and how a failed node is tried again, built on tenacity."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import anyio
import attrs
import tenacity

from ._errors import ProviderError, RunError

if TYPE_CHECKING:
    from ._failure import Attempt

__all__ = ("RetryPolicy", "is_transient")

T = TypeVar("T")


def is_transient(error: BaseException) -> bool:
    """The default retry predicate: errors that trying again can fix.

    Errors that say so with a `retryable` attribute (provider errors, node
    timeouts), timeouts and connection errors. Never cancellation, never a
    run error from a nested graph, never a bug such as `TypeError`, and never a
    provider error its client already retried.
    """
    if not isinstance(error, Exception) or isinstance(error, RunError):
        return False
    if isinstance(error, ProviderError) and error.attempts > 1:
        return False  # the provider client already retried it under its own policy
    retryable = getattr(error, "retryable", None)
    if isinstance(retryable, bool):
        return retryable
    if isinstance(error, TimeoutError | ConnectionError):
        return True
    # An httpx error exists only once httpx was imported; the engine does not import it.
    httpx = sys.modules.get("httpx")
    return httpx is not None and isinstance(error, httpx.TransportError)


@attrs.frozen
class RetryPolicy:
    """How many times to try a node, how long to wait between tries, and for which errors.

    Waits grow exponentially from `initial` up to `max_wait`, with up to
    `jitter` seconds of random jitter. An error carrying `retry_after` (a
    provider's `retry-after` header) waits at least that long, still capped by
    `max_wait`. `sleep` is injectable so tests can record waits instead of
    sleeping.

    Which failures are retried: `retry_on(error)` (transient errors by
    default), or, when given, `rule(attempt)`, which sees the error, the node,
    the step's input context and the attempt number (an `Attempt`) and
    decides alone:

    ```python
    def rule(failed: Attempt) -> bool:
        return failed.attempt < 2 or isinstance(failed.error, RateLimitError)

    policy = RetryPolicy(attempts=5, rule=rule)
    ```
    """

    attempts: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    initial: float = 0.5
    max_wait: float = 30.0
    jitter: float = 0.5
    retry_on: Callable[[BaseException], bool] = is_transient
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep
    rule: Callable[[Attempt], bool] | None = attrs.field(default=None, kw_only=True)

    def wait_for(self, state: tenacity.RetryCallState) -> float:
        """Seconds to wait before the next attempt."""
        backoff = tenacity.wait_exponential(multiplier=self.initial, max=self.max_wait)
        wait = (backoff + tenacity.wait_random(0, self.jitter))(state)
        error = state.outcome.exception() if state.outcome is not None else None
        retry_after = getattr(error, "retry_after", None)
        if isinstance(retry_after, int | float) and retry_after > 0:
            wait = max(wait, float(retry_after))
        return min(wait, self.max_wait)

    async def call(
        self,
        fn: Callable[[], Awaitable[T]],
        first_error: Exception,
        *,
        on_retry: Callable[[int, float, BaseException], Awaitable[None]] | None = None,
    ) -> tuple[T, int]:
        """Retry `fn` after its first attempt failed with `first_error`.

        Returns the result and the number of attempts it took, or raises the last
        error. The first attempt ran outside tenacity (the fast path); it is
        replayed here so that the policy sees every attempt.
        """

        async def before_sleep(state: tenacity.RetryCallState) -> None:
            if on_retry is not None and state.outcome is not None and state.next_action:
                error = state.outcome.exception()
                assert error is not None
                await on_retry(state.attempt_number, state.next_action.sleep, error)

        retrying: tenacity.AsyncRetrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(self.attempts),
            wait=self.wait_for,
            retry=tenacity.retry_if_exception(self.retry_on),
            sleep=self.sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        result = await retry_after_first(retrying, fn, first_error)
        return result, attempts_made(retrying)


async def retry_after_first(
    retrying: tenacity.AsyncRetrying, fn: Callable[[], Awaitable[T]], first_error: BaseException
) -> T:
    """Run `fn` under `retrying` for the attempts after a first one that failed.

    The first attempt ran outside tenacity (the fast path pays nothing for it);
    replaying its error here lets the policy judge and count every attempt.
    """
    replayed = False

    async def attempt() -> T:
        nonlocal replayed
        if not replayed:
            replayed = True
            raise first_error
        return await fn()

    result: T = await retrying(attempt)
    return result


def attempts_made(retrying: tenacity.AsyncRetrying) -> int:
    """How many attempts the last call of `retrying` made, the replayed first one included."""
    return int(retrying.statistics.get("attempt_number", 1))
