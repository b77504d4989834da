"""What every level of one run shares (`_Run`), the handle a caller holds on it, and run ids.

The step loop (`Runtime`, in `_runtime.py`) reads and counts on these; the
runner (`_runner.py`) builds them when a run starts.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from ._context import AgentContext
from ._events import Event, StepInfo
from ._gate import ModelGate
from ._journal import Journal
from ._layers import GuardLayers, Stack
from ._retry import RetryPolicy
from ._usage import UsageLimits

if TYPE_CHECKING:
    from ._node import Node

__all__ = ("Deliver", "Emit", "RunHandle", "StepCallback", "new_run_id")

StepCallback = Callable[[StepInfo, "Node[Any, Any]", AgentContext[Any]], Awaitable[None] | None]
"""`on_step(step, node, ctx)`: called after each node; may be sync or async."""

Emit = Callable[[Event], Awaitable[None]]
Deliver = Callable[[Event], Awaitable[None] | None]
"""Hands an event to the sinks that take it: None when all did at once, else what to await."""


class RunHandle:
    """A handle on a run: cancel it, and read the last completed context at any time.

    Create one, pass it to `GraphRunner.run(..., handle=...)` and call
    `cancel()` from anywhere; the run then ends with `GraphCancelled`.
    """

    __slots__ = ("_cancelled", "_ids", "_scope", "context", "step")

    def __init__(self) -> None:
        self.context: AgentContext[Any] | None = None
        self.step = 0
        self._ids: list[str | None] | None = None  # the run's id, shared with the run
        self._scope: anyio.CancelScope | None = None
        self._cancelled = False

    @property
    def run_id(self) -> str | None:
        """The run's id (given to `run`, or made when it starts); None before it starts."""
        ids = self._ids
        if ids is None:
            return None
        if ids[0] is None:
            ids[0] = new_run_id()
        return ids[0]

    @run_id.setter
    def run_id(self, value: str | None) -> None:
        self._ids = [value]

    def cancel(self) -> None:
        """End the run at its next checkpoint of cancellation (any await)."""
        self._cancelled = True
        if self._scope is not None:
            self._scope.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancelled


class _RunIds:
    """Run ids: 16 random hex digits per process, then a counter (32 hex digits in all).

    As unique as a random UUID across processes and machines, at a tenth of its
    cost, which matters for short runs; a forked child draws its own prefix.
    """

    def __init__(self) -> None:
        self.reset()
        os.register_at_fork(after_in_child=self.reset)

    def reset(self) -> None:
        self.prefix = os.urandom(8).hex()
        self.count = itertools.count()

    def __call__(self) -> str:
        return f"{self.prefix}{next(self.count):016x}"


new_run_id = _RunIds()
"""A fresh run id."""


_BARE = Stack(())
"""No layers: every effect goes straight to its call."""


class _Run:
    """What every level of one run shares: the step counter, policy and listeners."""

    __slots__ = (
        "_ids",
        "custom",
        "emit",
        "finished",
        "gate",
        "guards",
        "handle",
        "journal",
        "limits",
        "max_steps",
        "on_step",
        "retry",
        "root",
        "routed",
        "stack",
        "started",
        "steps",
        "watch",
    )

    def __init__(  # positional: one is built for every run
        self,
        ids: list[str | None],
        retry: RetryPolicy,
        max_steps: int,
        on_step: tuple[tuple[StepCallback, bool], ...],
        emit: Emit | None,
        handle: RunHandle,
        watch: bool,
        journal: Journal | None,
        limits: UsageLimits | None = None,
        gate: ModelGate | None = None,
        guards: GuardLayers | None = None,
    ) -> None:
        self.limits = limits
        self.gate = gate
        self.guards = guards
        # A one-item list the handle shares: the id is drawn by whichever asks first,
        # and the run and its handle hold no reference to each other (no cycle to collect).
        self._ids = ids
        self.steps = 0
        self.watch = watch
        self.retry = retry
        self.max_steps = max_steps
        self.on_step = on_step
        self.emit = emit
        # A node's `CustomEvent`s: None when nobody takes them (the runner narrows it).
        self.custom: Emit | None = emit
        # The step events' own deliveries, None when nobody takes that kind.
        self.started: Deliver | None = None
        self.finished: Deliver | None = None
        self.routed: Deliver | None = None
        self.handle = handle
        self.journal = journal
        self.root: Any = None  # the graph the run drives, for `Runtime.patched`
        self.stack = _BARE  # the runner's stack for this kind of run, set as it starts

    @property
    def run_id(self) -> str:
        """The run's id: the one given, or a new one made when something first asks
        (a run with no store, sink or reader never needs one)."""
        ids = self._ids
        found = ids[0]
        if found is None:
            found = ids[0] = new_run_id()
        return found
