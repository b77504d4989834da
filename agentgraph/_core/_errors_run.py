"""Errors of a run (drawn in `agentgraph._core._errors`): `RunError` and the ways a run stops short
of `finish`, and `NodeTimeout`, one node attempt running past its own timeout."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._errors_root import AgentGraphError, masked

if TYPE_CHECKING:
    from ._context import AgentContext

__all__ = (
    "DeadEnd",
    "GraphCancelled",
    "GraphTimeout",
    "Interrupted",
    "NodeFailed",
    "NodeTimeout",
    "ReplayDiverged",
    "ResumeError",
    "RoutingError",
    "RunBusy",
    "RunError",
    "StepLimitExceeded",
    "UsageLimitExceeded",
)


def _path(path: Sequence[str]) -> str:
    return "/".join(path) or "<root>"


class RunError(AgentGraphError, RuntimeError):
    """A run that did not reach `finish`. Carries the last good context."""

    def __init__(
        self, message: str, *, context: AgentContext[Any], step: int, path: Sequence[str] = ()
    ) -> None:
        self.context = context
        self.step = step
        self.path = tuple(path)
        super().__init__(message)


class StepLimitExceeded(RunError):
    """The run executed `max_steps` node steps without reaching `finish`."""

    def __init__(self, *, context: AgentContext[Any], step: int, path: Sequence[str]) -> None:
        super().__init__(
            f"step limit of {step} reached before {_path(path)} could run; "
            "raise max_steps or check the graph for a loop that never exits",
            context=context,
            step=step,
            path=path,
        )


class UsageLimitExceeded(RunError):
    """A model call would have passed, or passed, a `UsageLimits` limit; `.reason` says which."""

    def __init__(
        self, reason: str, *, context: AgentContext[Any], step: int, path: Sequence[str]
    ) -> None:
        self.reason = masked(reason)
        super().__init__(
            f"usage limit reached at {_path(path)} (step {step}): {reason}",
            context=context,
            step=step,
            path=path,
        )


class NodeFailed(RunError):
    """A node raised. The original error is `__cause__`; `.context` is the node's input.

    The message repeats the original's with secrets masked; the original
    (`__cause__`, `.error`) is the node's own exception, untouched.
    """

    def __init__(
        self,
        *,
        context: AgentContext[Any],
        step: int,
        path: Sequence[str],
        attempts: int,
        error: BaseException,
    ) -> None:
        self.attempts = attempts
        self.error = error
        tries = "attempt" if attempts == 1 else "attempts"
        super().__init__(
            f"node {_path(path)} failed at step {step} after {attempts} {tries}: "
            f"{type(error).__name__}: {error}",
            context=context,
            step=step,
            path=path,
        )


class RoutingError(RunError):
    """A router returned something that is not a valid next node."""

    def __init__(
        self, reason: str, *, context: AgentContext[Any], step: int, path: Sequence[str]
    ) -> None:
        self.reason = masked(reason)
        super().__init__(
            f"routing after {_path(path)} (step {step}) failed: {reason}",
            context=context,
            step=step,
            path=path,
        )


class DeadEnd(RoutingError):
    """No transition fired at a node other than `finish`."""

    def __init__(self, *, context: AgentContext[Any], step: int, path: Sequence[str]) -> None:
        super().__init__(
            "no transition fired (every router returned None) and the node is not finish",
            context=context,
            step=step,
            path=path,
        )


class GraphCancelled(RunError):
    """The run was cancelled through its handle; `.context` is the last completed context."""

    def __init__(self, *, context: AgentContext[Any], step: int) -> None:
        super().__init__(f"run cancelled after step {step}", context=context, step=step, path=())


class GraphTimeout(RunError, TimeoutError):
    """The run's timeout elapsed; `.context` is the last completed context."""

    def __init__(self, *, context: AgentContext[Any], step: int, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(
            f"run timed out after {timeout:g}s (last completed step {step})",
            context=context,
            step=step,
            path=(),
        )


class Interrupted(RunError):
    """A node asked for outside input; the run stopped and can be resumed with the answer.

    `.question` is what the node asked (as asked; the message masks secrets in
    it), `.context` the node's input context and `.run_id` the run to pass to
    `GraphRunner.resume(..., answer=...)`.
    """

    def __init__(
        self,
        *,
        run_id: str,
        question: Any,
        context: AgentContext[Any],
        step: int,
        path: Sequence[str],
    ) -> None:
        self.run_id = run_id
        self.question = question
        super().__init__(
            f"run {run_id!r} is waiting for an answer at {_path(path)} (step {step}): "
            f"{question!r}; resume it with GraphRunner.resume(..., answer=...)",
            context=context,
            step=step,
            path=path,
        )


class ResumeError(RunError):
    """A run cannot be resumed as recorded; `.reason` says why and nothing was run again."""

    def __init__(
        self,
        reason: str,
        *,
        run_id: str,
        context: AgentContext[Any],
        step: int,
        path: Sequence[str] = (),
    ) -> None:
        self.reason = masked(reason)
        self.run_id = run_id
        super().__init__(
            f"cannot resume run {run_id!r} after step {step}: {reason}",
            context=context,
            step=step,
            path=path,
        )


class RunBusy(ResumeError):
    """Another runner holds the run's lease: nothing was run or written.

    Attributes:
        owner: the runner holding the lease (machine, process, and a tag).
        expires: wall-clock time its lease lapses unless renewed.
    """

    def __init__(self, run_id: str, owner: str, expires: float) -> None:
        self.owner = owner
        self.expires = expires
        self.run_id = run_id
        left = max(0.0, expires - time.time())
        self.reason = masked(
            f"another runner holds it ({owner}); its lease lapses in {left:.1f} s "
            "unless renewed, which its runner does while it is alive"
        )
        message = f"run {run_id!r} is already being run: {self.reason}"
        from ._context import AgentContext

        # Nothing was loaded yet: the error carries an empty context at step 0.
        RunError.__init__(self, message, context=AgentContext(None), step=0)


class VersionMissing(ResumeError):
    """The run started on a graph version this runner does not keep; nothing was run.

    Attributes:
        version: the version the run started on (None: a graph without a version).
    """

    def __init__(
        self,
        graph: str,
        version: int | None,
        have: tuple[int | None, ...],
        *,
        run_id: str,
        context: AgentContext[Any],
        step: int,
    ) -> None:
        self.version = version
        kept = ", ".join(str(v) for v in have) or "none"
        reason = (
            f"it started on version {version} of graph {graph!r}, which this runner does not "
            f"keep (versions kept: {kept}); add that graph to GraphVersions, or resume under "
            "policy 'latest' with migrations"
        )
        super().__init__(reason, run_id=run_id, context=context, step=step)


class MigrationFailed(ResumeError):
    """A context migration raised or returned something else than a context.

    The run is left as it was: nothing was written. The migration's error is `__cause__`.

    Attributes:
        version: the version the failing migration upgrades to.
    """

    def __init__(
        self,
        version: int,
        error: str,
        *,
        run_id: str,
        context: AgentContext[Any],
        step: int,
    ) -> None:
        self.version = version
        reason = f"the migration to version {version} failed ({error}); the run is unchanged"
        super().__init__(reason, run_id=run_id, context=context, step=step)


class ReplayDiverged(RunError):
    """A replayed run did something other than the recorded one; `.diff` shows how."""

    def __init__(
        self,
        what: str,
        *,
        diff: str = "",
        context: AgentContext[Any],
        step: int,
        path: Sequence[str],
    ) -> None:
        self.what = masked(what)
        self.diff = masked(diff)
        detail = f"\n{diff}" if diff else ""
        super().__init__(
            f"replay diverged at {_path(path)} (step {step}): {what}{detail}",
            context=context,
            step=step,
            path=path,
        )


class NodeTimeout(AgentGraphError, TimeoutError):
    """One attempt of a node exceeded the node's own timeout. Retryable."""

    retryable = True

    def __init__(self, node: str, timeout: float) -> None:
        self.node = node
        self.timeout = timeout
        super().__init__(f"node {node!r} exceeded its timeout of {timeout:g}s")
