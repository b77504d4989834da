"""The errors of A2A's client side (drawn in the tree of `agentgraph._core._errors`).

A remote agent is reached like a model provider, so its errors are
`ProviderError`s: the runner's retry policy reads `.retryable` on them as it
does on a provider's.
"""

from __future__ import annotations

from .._core._errors import ProviderError, ResponseFormatError
from .._util._redact import masked

__all__ = ("A2AFormatError", "RemoteTaskFailed")


class A2AFormatError(ResponseFormatError):
    """An Agent Card, or a remote agent's answer, that breaks A2A's schema.

    Attributes:
        agent: the remote agent (its URL or card name).
        field: the field that is missing or wrong, as a dotted path (`supportedInterfaces.0.url`).
        problem: what is wrong with it.
    """

    def __init__(self, agent: str, field: str, problem: str) -> None:
        self.agent = agent
        self.field = field
        self.problem = masked(problem)
        super().__init__(f"field {field!r}: {problem}", provider=f"A2A agent {agent!r}")


class RemoteTaskFailed(ProviderError):
    """A remote agent's task ended failed, rejected or cancelled.

    Attributes:
        agent: the remote agent.
        task_id: the remote task.
        state: how it ended (`failed`, `rejected`, `canceled`).
        detail: the agent's own words on it, masked.
    """

    def __init__(self, agent: str, task_id: str, state: str, detail: str = "") -> None:
        self.agent = agent
        self.task_id = task_id
        self.state = state
        self.detail = masked(detail)
        said = f": {detail}" if detail else ""
        super().__init__(f"task {task_id!r} ended {state}{said}", provider=f"A2A agent {agent!r}")
