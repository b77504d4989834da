"""The errors of long-term memory, under agentgraph's one root.

```
AgentGraphError
└── LongTermMemoryError                 a memory store refused or failed a request
    ├── MemoryInputError (ValueError)   a namespace, key, value, ttl or limit that cannot be stored
    ├── MemoryEmbedError (RuntimeError) the embedder failed during a put: nothing was stored
    ├── MemoryDataError (ValueError)    a stored row that cannot be read back (damaged)
    └── MemoryBackendError (OSError)    the database itself failed (locked, gone, refused)
```
"""

from __future__ import annotations

from collections.abc import Sequence

from .._core._errors import AgentGraphError

__all__ = (
    "LongTermMemoryError",
    "MemoryBackendError",
    "MemoryDataError",
    "MemoryEmbedError",
    "MemoryInputError",
)


class LongTermMemoryError(AgentGraphError):
    """A memory store refused or failed a request."""


class MemoryInputError(LongTermMemoryError, ValueError):
    """A namespace, key, value, ttl or limit that cannot be stored or asked for.

    `.what` names the argument (`"namespace"`, `"value['tags'][2]"`), `.reason` says why.
    """

    def __init__(self, what: str, reason: str) -> None:
        self.what = what
        self.reason = reason
        super().__init__(f"memory: {what} {reason}")


class MemoryEmbedError(LongTermMemoryError, RuntimeError):
    """The embedder failed (or answered wrongly) during a put; nothing was stored.

    `.keys` are the keys of the batch; the embedder's error is `__cause__`.
    """

    def __init__(self, namespace: Sequence[str], keys: Sequence[str], reason: str) -> None:
        self.namespace = tuple(namespace)
        self.keys = tuple(keys)
        self.reason = reason
        shown = ", ".join(repr(k) for k in self.keys[:5]) + (", ..." if len(self.keys) > 5 else "")
        super().__init__(
            f"memory: embedding {shown} in {self.namespace!r} failed, nothing was stored: {reason}"
        )


class MemoryDataError(LongTermMemoryError, ValueError):
    """A stored row that cannot be read back: damaged value, vector or namespace."""

    def __init__(self, namespace: Sequence[str] | str, key: str, reason: str) -> None:
        self.namespace = namespace
        self.key = key
        self.reason = reason
        super().__init__(f"memory: the stored item {key!r} in {namespace!r} is damaged: {reason}")


class MemoryBackendError(LongTermMemoryError, OSError):
    """The database behind a memory store failed; the driver's error is `__cause__`."""

    def __init__(self, store: str, action: str, error: BaseException) -> None:
        self.store = store
        self.action = action
        super().__init__(f"memory: {store} could not {action}: {type(error).__name__}: {error}")
