"""The errors a team raises in a run (drawn in the tree of `agentgraph._core._errors`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._core._context import AgentContext
from .._core._errors import RunError, StepLimitExceeded

__all__ = ("HandoffError", "HandoffLoop")


class HandoffError(RunError):
    """A handoff that cannot happen: an agent the team does not have, or a history
    policy that returned a conversation no provider would take.

    Attributes:
        source: the agent handing off.
        target: the agent it handed to.
        problem: what is wrong.
    """

    def __init__(
        self,
        problem: str,
        *,
        source: str,
        target: str,
        context: AgentContext[Any],
        step: int,
        path: Sequence[str] = (),
    ) -> None:
        self.source = source
        self.target = target
        self.problem = problem
        super().__init__(
            f"handoff from {source!r} to {target!r}: {problem}",
            context=context,
            step=step,
            path=path,
        )


class HandoffLoop(StepLimitExceeded):
    """A team handed off more than its `max_handoffs` times in one run.

    A step limit of the team's own: agents handing the conversation back and
    forth end here, naming the chain, before the run's step cap.

    Attributes:
        chain: the agents in the order they held the conversation.
    """

    def __init__(
        self,
        *,
        chain: Sequence[str],
        limit: int,
        context: AgentContext[Any],
        step: int,
        path: Sequence[str] = (),
    ) -> None:
        self.chain = tuple(chain)
        self.limit = limit
        shown = " -> ".join(self.chain[-12:])
        more = "... -> " if len(self.chain) > 12 else ""
        RunError.__init__(
            self,
            f"the team handed off more than {limit} times ({more}{shown}); agents that hand "
            "the conversation back and forth never finish: check their instructions, or "
            "raise max_handoffs",
            context=context,
            step=step,
            path=path,
        )
