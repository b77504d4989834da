"""The root of agentgraph's errors (the whole tree is drawn in `agentgraph._core._errors`).

An error's text is kept by whoever logs it (`logging.exception`, an error
tracker), so what agentgraph composes is masked as the error is built: the
root's constructor passes every string argument through the one redactor
(`agentgraph._util._redact`), and constructors mask the attributes that repeat the
message's account of the problem (`reason`, `problem`, `detail`, ...). The
user's own exception, kept as `__cause__`, is never touched.
"""

from __future__ import annotations

from typing import Any

__all__ = ("AgentGraphError", "masked")


def masked(text: str) -> str:
    """`text` with secrets masked, for the message or an attribute of an error being built."""
    # The redactor's patterns compile when the first error is built, never at import.
    from .._util._redact import masked as mask

    return mask(text)


def _rebuild(cls: type[AgentGraphError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    # OSError (under TimeoutError and ConnectionError) lays instances out its own way.
    make = OSError.__new__ if issubclass(cls, OSError) else Exception.__new__
    error = make(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class AgentGraphError(Exception):
    """Root of every error agentgraph raises.

    Its message, `str`, `repr` and traceback line have secrets (keys, tokens,
    the values of secret-named environment variables) masked; the exception
    it wraps, if any, stays the `__cause__` as it was raised. Errors pickle
    with their attributes (for transport between your own processes; never
    unpickle data you did not write).
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*[masked(a) if isinstance(a, str) else a for a in args])

    def __reduce__(self) -> tuple[Any, ...]:
        # The constructors take keyword-only context: rebuild from the state instead.
        return _rebuild, (type(self), self.args, self.__dict__)
