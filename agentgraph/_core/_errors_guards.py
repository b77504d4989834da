"""Errors of guardrails (drawn in `agentgraph._core._errors`): a guard that tripped, and one that
cannot work as written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._errors_root import AgentGraphError, masked

__all__ = ("GuardError", "GuardrailTripped")


def _where(path: Sequence[str]) -> str:
    return "/".join(path) or "<root>"


class GuardrailTripped(AgentGraphError):
    """A guard blocked what it was shown: a model's input, an answer, or a tool call.

    Raised inside the node whose effect was blocked, so the run reports it as
    that node's `NodeFailed` (whose `.context` is the node's input) and an
    error transition can take it (`node.on_error(handler, when=...)`, the
    `Failure`'s `error` being `"GuardrailTripped"`). Never retried.

    Attributes:
        guard: the name of the guard that blocked.
        stage: `"input"`, `"output"` or `"tool"`.
        reason: why, in the guard's words (masked).
        subject: what it was shown (the `ChatRequest`, the answer, the `ToolCall`).
        detail: the guard's structured findings (a judge's verdict, say).
        step: the run-wide step it happened in; path: that step's node path.
        usage: what the model call the guard ran beside used: for a call it
            cancelled in flight, what the provider had reported before the
            cancel, with `partial` True; None when no call was made.
    """

    retryable = False

    def __init__(
        self,
        guard: str,
        stage: str,
        reason: str,
        *,
        subject: Any = None,
        detail: Mapping[str, Any] | None = None,
        step: int = 0,
        path: Sequence[str] = (),
        usage: Any = None,
        partial: bool = False,
    ) -> None:
        self.guard = guard
        self.stage = stage
        self.reason = masked(reason)
        self.subject = subject
        self.detail = dict(detail) if isinstance(detail, Mapping) else {}
        self.step = step
        self.path = tuple(path)
        self.usage = usage
        self.partial = partial
        super().__init__(
            f"guard {guard!r} blocked the {stage} at {_where(path)} (step {step}): {reason}"
        )


class GuardError(AgentGraphError, TypeError):
    """A guard that cannot work as written: a rewrite of the wrong type, say.

    A bug in the guard, not a decision: it ends the step like any other error
    of the node, and `.guard`, `.stage` and `.problem` say which and why.
    """

    def __init__(self, guard: str, stage: str, problem: str) -> None:
        self.guard = guard
        self.stage = stage
        self.problem = masked(problem)
        super().__init__(f"guard {guard!r} ({stage}): {problem}")
