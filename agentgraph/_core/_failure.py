"""Failures as data: the record an error transition hands on, and what a retry rule sees.

`node.on_error(handler)` routes a step that failed for good (its retries
exhausted) to `handler`, whose input is a `Failure`: plain, frozen data that a
checkpoint stores and a trace shows. A `RetryRule` decides about one failed
attempt knowing the error, the node, the step's input context and the attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from .._util._public import stored_as
from ._context import AgentContext
from ._errors import NodeFailed, RunError

__all__ = ("Attempt", "ErrorTransition", "Failure", "RetryRule", "root_error", "routes_error")

_MESSAGE = 500
"""Characters of an error's message a `Failure` keeps."""


def root_error(error: BaseException) -> BaseException:
    """The error under any `NodeFailed` wrappers (a failure inside nested graphs)."""
    while isinstance(error, NodeFailed):
        error = error.error
    return error


@stored_as("agentgraph:Failure")
@attrs.frozen
class Failure:
    """A step that failed for good, as the input of the node its error transition chose.

    Attributes:
        node: the failed node's path, `/`-separated (`agent/chat`).
        step: the run-wide number of the failed step.
        attempts: how many times it was tried.
        error: the type name of the error that ended it (the root one, under
            any nested `NodeFailed`).
        message: the error's message, with secrets masked and clipped to a few
            hundred characters.
    """

    node: str
    step: int
    attempts: int
    error: str
    message: str

    @classmethod
    def of(cls, failed: NodeFailed) -> Failure:
        """The record of `failed`."""
        from .._util._redact import (
            Redactor,  # its patterns compile when a failure is first recorded
        )

        cause = root_error(failed)
        text = Redactor().mask(str(cause))
        if len(text) > _MESSAGE:
            text = text[: _MESSAGE - 1] + "…"
        return cls("/".join(failed.path), failed.step, failed.attempts, type(cause).__name__, text)


def _any_error(failure: Failure, error: BaseException) -> bool:
    return True


@attrs.frozen(eq=False)
class ErrorTransition:
    """An edge taken when its node fails for good and `when(failure, error)` says so."""

    target: Any  # a Node; typed loosely to keep this module below `_node`
    when: Callable[[Failure, BaseException], bool] = _any_error


def routes_error(error: BaseException) -> bool:
    """Whether an error transition may take `error`: never a run's own ending.

    Cancellation, timeouts of the run, step limits, usage limits and
    interrupts are not exceptions of this kind (or are `RunError`s), so a
    failure handler never swallows them.
    """
    return isinstance(error, NodeFailed) and not isinstance(root_error(error), RunError)


@attrs.frozen
class Attempt:
    """One failed attempt, as a retry rule sees it.

    Attributes:
        error: what the attempt raised (the root error, under any `NodeFailed`).
        node: the node's name.
        path: the node's path.
        context: the step's input context (the same for every attempt).
        attempt: which attempt failed, from 1.
    """

    error: BaseException
    node: str
    path: tuple[str, ...]
    context: AgentContext[Any]
    attempt: int


RetryRule = Callable[[Attempt], bool]
"""`rule(attempt) -> bool`: try again after this failed attempt? (see `RetryPolicy.rule`)."""
