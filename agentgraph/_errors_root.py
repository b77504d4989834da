"""The root of agentgraph's errors (the whole tree is drawn in `agentgraph._errors`)."""

from __future__ import annotations

from typing import Any

__all__ = ("AgentGraphError",)


def _rebuild(cls: type[AgentGraphError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    # OSError (under TimeoutError and ConnectionError) lays instances out its own way.
    make = OSError.__new__ if issubclass(cls, OSError) else Exception.__new__
    error = make(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class AgentGraphError(Exception):
    """Root of every error agentgraph raises.

    Errors pickle with their attributes (for transport between your own
    processes; never unpickle data you did not write).
    """

    def __reduce__(self) -> tuple[Any, ...]:
        # The constructors take keyword-only context: rebuild from the state instead.
        return _rebuild, (type(self), self.args, self.__dict__)
