"""`check_output`: a node that shows what passes through it to output guards."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from .._core._context import AgentContext
from .._core._node import Node
from ._effects import output_checked
from ._guard import DEFAULT_TIMEOUT, Guard, _guards

if TYPE_CHECKING:
    from .._core._runtime import Runtime

__all__ = ("CheckOutput", "check_output")

T = TypeVar("T")


@attrs.frozen(eq=False, slots=True, repr=False)
class CheckOutput(Node[T, T]):
    """Passes its input (an answer: text or a `Message`) through output guards."""

    guards: tuple[Guard, ...]
    limit: float = DEFAULT_TIMEOUT

    async def run(self, ctx: AgentContext[T], rt: Runtime) -> AgentContext[T]:
        value, spent = await output_checked(rt, self.guards, ctx.input, self.limit)
        out = ctx if value is ctx.input else ctx.with_input(value)
        return out if spent is None else out.add_usage(spent)


def check_output(
    *guards: Guard, name: str = "check_output", timeout: float = DEFAULT_TIMEOUT
) -> CheckOutput[Any]:
    """A node that checks the answer about to leave a graph: put it before `finish`.

    Each guard is shown the node's input as the `"output"` stage; a block
    fails the step with `GuardrailTripped` (routable with `on_error`), a
    rewrite replaces the input. Decisions are events and, with a checkpoint
    store, recorded, like those of a runner's guards.

    ```python
    reply.edge_to(check_output(MaskPII(), MaxLength(2000))).edge_to(g.finish)
    ```
    """
    found = _guards(guards)
    for item in found:
        if "output" not in item.stages:
            raise ValueError(f"guard {item.name!r} does not look at the output stage")
    if not timeout > 0:
        raise ValueError(f"timeout must be positive, not {timeout!r}")
    # A guard that rewrites changes what the step returns: not safe to repeat blindly,
    # but deterministic guards are; a judge's verdict is recorded, so a retry is fine.
    return CheckOutput(found, timeout, name=name)
