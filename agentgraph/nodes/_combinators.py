"""`parallel` and `map_each`: explicit fan-out, as nodes that nest like any other."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

import anyio
import attrs

from .._core._context import AgentContext
from .._core._errors import CheckpointError, StepLimitExceeded
from .._core._node import Node
from .._core._runtime import Interrupt

if TYPE_CHECKING:
    from .._core._runner import Runtime

__all__ = ("MapEach", "Parallel", "map_each", "parallel")

In = TypeVar("In")
Out = TypeVar("Out")
X = TypeVar("X")
Y = TypeVar("Y")

Merge = Callable[[AgentContext[In], list[AgentContext[Any]]], AgentContext[Out]]


async def _fan_out(
    rt: Runtime,
    jobs: Sequence[tuple[Node[Any, Any], AgentContext[Any]]],
    limit: int | None,
) -> list[AgentContext[Any]]:
    """Run each (node, ctx) as a step; results in job order. One failure cancels the rest."""
    results: list[AgentContext[Any] | None] = [None] * len(jobs)
    failed: dict[int, BaseException] = {}
    limiter = anyio.CapacityLimiter(limit) if limit else None

    async def one(i: int) -> None:
        node, ctx = jobs[i]
        try:
            if limiter is None:
                results[i] = await rt.execute(node, ctx, i + 1, branch=True)
            else:
                async with limiter:
                    results[i] = await rt.execute(node, ctx, i + 1, branch=True)
        except Interrupt as stop:
            # Siblings go on to finish or ask their own questions, so every
            # question is on record and the one surfaced is always the first.
            failed[i] = stop
        except Exception as error:
            failed[i] = error
            raise

    try:
        async with anyio.create_task_group() as tg:
            for i in range(len(jobs)):
                tg.start_soon(one, i)
    except BaseExceptionGroup as group:
        _raise_one(group, failed)
    if failed:
        raise failed[min(failed)]
    return [r for r in results if r is not None]


def _raise_one(group: BaseExceptionGroup[BaseException], failed: dict[int, BaseException]) -> None:
    """Re-raise a fan-out's failure the way a single node's would read, when that is honest.

    - A cancellation from outside wins: the caller's scope must see it (trio
      puts it in the group beside the branches' errors); so does a fatal
      BaseException such as KeyboardInterrupt.
    - Otherwise real errors win over interrupts (the question is asked again on
      resume); a group of one error is unwrapped, and so is a step limit hit by
      several branches at once; a store failure (`CheckpointError`) wins over
      the rest; several distinct errors stay a group.
    - Only interrupts: the one from the first branch, so the question asked is
      deterministic; the others are asked on later resumes.
    """
    cancelled = group.subgroup(anyio.get_cancelled_exc_class())
    if cancelled is not None:
        raise _first_leaf(cancelled) from None
    fatal = group.subgroup(lambda e: not isinstance(e, Exception | Interrupt | BaseExceptionGroup))
    if fatal is not None:  # KeyboardInterrupt, SystemExit and the like end everything
        raise _first_leaf(fatal) from None
    errors = [e for _, e in sorted(failed.items()) if isinstance(e, Exception)]
    stored = [e for e in errors if isinstance(e, CheckpointError)]
    if stored:  # the run's record failed: the run stops with that, whatever else failed
        raise stored[0]
    if errors:
        if len(errors) == 1 or all(isinstance(e, StepLimitExceeded) for e in errors):
            raise errors[0]
        raise ExceptionGroup("several branches failed", errors)
    interrupts = [e for _, e in sorted(failed.items()) if isinstance(e, Interrupt)]
    if interrupts:
        raise interrupts[0]
    raise group


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    leaf: BaseException = group
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf


@attrs.frozen(eq=False, slots=True, repr=False)
class Parallel(Node[In, Out]):
    """Runs `branches` on the same context concurrently, then `merge`s their outputs."""

    composite: ClassVar[bool] = True

    branches: tuple[Node[In, Any], ...]
    merge: Merge[In, Out]
    limit: int | None = None

    def data_types(self) -> tuple[type[Any], ...]:
        return tuple(t for branch in self.branches for t in branch.data_types())

    async def run(self, ctx: AgentContext[In], rt: Runtime) -> AgentContext[Out]:
        outputs = await _fan_out(rt, [(b, ctx) for b in self.branches], self.limit)
        return self.merge(ctx, outputs)


@attrs.frozen(eq=False, slots=True, repr=False)
class MapEach(Node[In, Out]):
    """Runs `node` once per item taken from the context, then `merge`s the outputs."""

    composite: ClassVar[bool] = True

    node: Node[Any, Any]
    items: Callable[[AgentContext[In]], Iterable[Any]]

    def data_types(self) -> tuple[type[Any], ...]:
        return self.node.data_types()

    merge: Merge[In, Out]
    limit: int | None = None

    async def run(self, ctx: AgentContext[In], rt: Runtime) -> AgentContext[Out]:
        jobs = [(self.node, ctx.with_input(item)) for item in self.items(ctx)]
        outputs = await _fan_out(rt, jobs, self.limit)
        return self.merge(ctx, outputs)


def parallel(
    *branches: Node[In, Any],
    merge: Merge[In, Out],
    limit: int | None = None,
    name: str | None = None,
) -> Node[In, Out]:
    """A node that runs `branches` concurrently on its input context.

    Each branch is a step of the run, one level down. `merge(ctx, outputs)`
    receives the outputs in the order the branches were given. When a branch
    fails, its siblings are cancelled.

    ```python
    both = parallel(search_web, search_docs, merge=lambda ctx, outs: ctx.with_input(
        [o.input for o in outs]))
    ```
    """
    if not branches:
        raise ValueError("parallel() needs at least one branch")
    label = name or "parallel(" + ", ".join(b.name for b in branches) + ")"
    safe = all(b.retry_safe for b in branches)
    return Parallel(tuple(branches), merge, limit, name=label, retry_safe=safe)


def _collect(ctx: AgentContext[Any], outputs: list[AgentContext[Any]]) -> AgentContext[list[Any]]:
    return ctx.with_input([o.input for o in outputs])


@overload
def map_each(
    node: Node[X, Y],
    *,
    items: Callable[[AgentContext[In]], Iterable[X]],
    merge: None = None,
    limit: int | None = None,
    name: str | None = None,
) -> Node[In, list[Y]]: ...
@overload
def map_each(
    node: Node[X, Y],
    *,
    items: Callable[[AgentContext[In]], Iterable[X]],
    merge: Merge[In, Out],
    limit: int | None = None,
    name: str | None = None,
) -> Node[In, Out]: ...
def map_each(
    node: Node[Any, Any],
    *,
    items: Callable[[AgentContext[Any]], Iterable[Any]],
    merge: Merge[Any, Any] | None = None,
    limit: int | None = None,
    name: str | None = None,
) -> Node[Any, Any]:
    """Map-reduce: run `node` on each item of `items(ctx)`, at most `limit` at a time.

    Without `merge`, the output input is the list of the runs' inputs, in item order.
    """
    label = name or f"map_each({node.name})"
    return MapEach(node, items, merge or _collect, limit, name=label, retry_safe=node.retry_safe)
