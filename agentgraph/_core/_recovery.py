"""What a failed step comes to: retries under policy, error transitions, the error the run sees.

Functions of the `Runtime` whose step failed (in `_runtime.py`, with the step
loop); the loop reaches them only once a step has raised, so a step that
succeeds never enters this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import anyio
import attrs

from ._context import AgentContext
from ._errors import (
    CheckpointError,
    GuardrailTripped,
    NodeFailed,
    NodeTimeout,
    RunError,
    StepLimitExceeded,
    UsageLimitExceeded,
)
from ._events import NodeFailedEvent, RetryScheduled, RouteChosen
from ._failure import Attempt, root_error
from ._retry import RetryPolicy
from ._usage import OverLimit

if TYPE_CHECKING:
    from ._graph import Graph
    from ._node import Node
    from ._runtime import Runtime

__all__ = ("failed", "placed", "recover")

Out = TypeVar("Out")


async def failed(
    rt: Runtime,
    graph: Graph[Any, Any],
    source: Node[Any, Any],
    failed: NodeFailed,
    given: AgentContext[Any],
    where: tuple[int, int],
) -> tuple[Node[Any, Any], AgentContext[Any]]:
    """Where `source`'s error transitions send a failed step, and with what; else re-raise."""
    route = graph.error_route(source, failed)
    if route is None:
        raise failed
    target, position, failure = route
    step = where[0]
    out = given.with_input(failure)
    run = rt._run
    if run.routed is not None:
        chosen = RouteChosen(
            step, rt.path, source.name, target.name, position, False, on_error=True
        )
        told = run.routed(chosen)
        if told is not None:
            await told
    if run.journal is not None:
        rt._commit(run.journal, source, target, out, *where)
    return target, out


async def recover(
    rt: Runtime, node: Node[Any, Out], ctx: AgentContext[Any], index: int, error: Exception
) -> tuple[AgentContext[Out], int]:
    run = rt._run
    policy = node.retry
    if policy is None and not node.composite:
        policy = rt.node_retry or run.retry
    attempts = 1
    try:
        if (
            policy is None
            or not node.retry_safe
            or isinstance(error, StepLimitExceeded | OverLimit | CheckpointError)
            # Not retried (a mistake in the code, not a transient failure): said at
            # once, without the retry machinery's frames in the traceback.
            or (policy.rule is None and not policy.retry_on(root_error(error)))
        ):
            raise error

        async def on_retry(attempt: int, wait: float, err: BaseException) -> None:
            nonlocal attempts
            attempts = attempt + 1
            if run.emit is not None:
                await run.emit(RetryScheduled(index, rt.path, attempt, wait, err))

        async def again() -> AgentContext[Out]:
            if run.journal is not None:
                run.journal.new_attempt(rt)
            if node.timeout is None:
                return await node.run(ctx, rt)
            return await _with_timeout(node, ctx, rt)

        return await _guarded(policy, node, ctx, rt.path).call(again, error, on_retry=on_retry)
    except Exception as final:
        await _failed_for_good(rt, node, ctx, index, attempts, final)
        raise AssertionError("unreachable: the failure was raised") from None


async def _failed_for_good(
    rt: Runtime,
    node: Node[Any, Any],
    ctx: AgentContext[Any],
    index: int,
    attempts: int,
    final: Exception,
) -> NoReturn:
    """Report a step that failed after its retries, and raise what the run should see."""
    run = rt._run
    if isinstance(final, OverLimit):  # the run's limit, not the node's failure
        limit = UsageLimitExceeded(final.reason, context=ctx, step=index, path=rt.path)
        if run.emit is not None:
            await run.emit(NodeFailedEvent(index, rt.path, attempts, limit))
        raise limit from None
    if run.emit is not None:
        await run.emit(NodeFailedEvent(index, rt.path, attempts, final))
    if isinstance(final, RunError):
        raise final
    if isinstance(final, CheckpointError):  # the run's record failed, not the node
        raise placed(final, ctx, index, rt.path)
    raise NodeFailed(
        context=ctx, step=index, path=rt.path, attempts=attempts, error=final
    ) from final


def placed(
    error: CheckpointError, context: AgentContext[Any], step: int, path: tuple[str, ...]
) -> CheckpointError:
    """`error` saying where the run was when its store failed, unless a deeper step said so."""
    if error.context is None:
        error.context, error.step, error.path = context, step, path
    return error


def _guarded(
    policy: RetryPolicy, node: Node[Any, Any], ctx: AgentContext[Any], path: tuple[str, ...]
) -> RetryPolicy:
    """`policy` judging a nested failure by its root cause, and never retrying a BaseException.

    Cancellation and `Interrupt` must pass whatever predicate the user wrote,
    and so must a guard's block: asking again would ask the guard again (and
    send a request it blocked beside the call), so it is never retried.
    A policy's `rule` sees each failed attempt in turn, with its number.
    """
    rule, inner = policy.rule, policy.retry_on
    failed = 0

    def retry_on(error: BaseException) -> bool:
        nonlocal failed
        failed += 1
        if not isinstance(error, Exception) or isinstance(error, OverLimit | CheckpointError):
            return False
        cause = root_error(error)
        if isinstance(cause, GuardrailTripped):
            return False
        if rule is None:
            return inner(cause)
        return rule(Attempt(cause, node.name, path, ctx, failed))

    return attrs.evolve(policy, retry_on=retry_on, rule=None)


async def _with_timeout(
    node: Node[Any, Out], ctx: AgentContext[Any], rt: Runtime
) -> AgentContext[Out]:
    """One attempt within the node's timeout; only our own deadline becomes `NodeTimeout`.

    A `TimeoutError` the node raised itself (a provider timeout its client
    already retried, say) passes through unchanged.
    """
    assert node.timeout is not None
    with anyio.move_on_after(node.timeout) as scope:
        return await node.run(ctx, rt)
    if scope.cancelled_caught:
        raise NodeTimeout(node.name, node.timeout)
    raise AssertionError("a node attempt neither returned nor timed out")  # pragma: no cover
