"""Errors of the toolkit around the engine: schemas, tools and MCP, structured output,
vector stores, traces and run requests (drawn in `agentgraph._core._errors`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._errors_root import AgentGraphError, masked

__all__ = (
    "DatasetError",
    "DimensionMismatch",
    "JudgeError",
    "MCPAnswerError",
    "MCPConnectionError",
    "MCPToolError",
    "OutputError",
    "RunInputError",
    "ToolError",
    "TraceFormatError",
    "UnsupportedCase",
    "UnsupportedType",
    "VectorStoreError",
)


class UnsupportedType(AgentGraphError, TypeError):
    """A type annotation that has no JSON Schema (or none in the requested mode)."""

    def __init__(self, annotation: Any, reason: str) -> None:
        self.annotation = annotation
        self.reason = masked(reason)
        if isinstance(annotation, str):
            name = annotation
        elif isinstance(annotation, type):
            name = annotation.__qualname__
        else:
            name = repr(annotation)
        super().__init__(f"cannot describe {name} as JSON: {reason}")


class ToolError(AgentGraphError):
    """A tool could not be defined, or a tool call could not be carried out."""


class MCPConnectionError(ToolError, ConnectionError):
    """An MCP server could not be started or reached, or its connection was lost.

    `.server` names the server (its label); the transport's own error is `__cause__`.
    """

    def __init__(self, server: str, problem: str) -> None:
        super().__init__(f"MCP server {server!r}: {problem}")
        self.server = server
        self.problem = masked(problem)


class MCPToolError(ToolError):
    """An MCP server answered a tool call with an error (`isError`, or a protocol error).

    `.server` and `.tool` name where it happened; `.detail` is the server's own text.
    """

    def __init__(self, server: str, tool: str, detail: str) -> None:
        super().__init__(f"MCP server {server!r}, tool {tool!r}: {detail}")
        self.server = server
        self.tool = tool
        self.detail = masked(detail)


class MCPAnswerError(MCPToolError, ValueError):
    """An answer to an MCP server's question that does not fit the form it asked for.

    Refused before anything is sent: the server never sees it. `.problems`
    lists what is wrong, as `path: message` strings.
    """

    def __init__(self, server: str, tool: str, problems: Sequence[str]) -> None:
        listed = "; ".join(problems)
        super().__init__(
            server, tool, f"the answer does not fit the form the server asked for: {listed}"
        )
        self.problems = tuple(masked(p) for p in problems)


class OutputError(AgentGraphError, ValueError):
    """Structured output that could not be parsed or stayed invalid after every attempt.

    `.attempts` holds the raw text of each attempt, as the model wrote it (not
    masked, unlike the message); `.errors` the validation problems of the last
    one, as `path: message` strings.
    """

    def __init__(
        self,
        message: str,
        *,
        attempts: Sequence[str] = (),
        errors: Sequence[str] = (),
        position: int | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self.attempts = tuple(attempts)
        self.errors = tuple(errors)
        self.position = position
        self.details = dict(details or {})
        super().__init__(message)


class JudgeError(OutputError):
    """An LLM judge gave no usable verdict; `.usage` is what its attempts spent."""

    def __init__(self, message: str, *, usage: Any = None) -> None:
        self.usage = usage
        super().__init__(message)


class DatasetError(AgentGraphError, ValueError):
    """A dataset (or report) file that cannot be read: `.source`, `.line` (from 1), `.reason`.

    An evaluator spec that names no known evaluator is one too, naming the spec.
    """

    def __init__(self, source: str, reason: str, *, line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.reason = masked(reason)
        where = source if line is None else f"{source}, line {line}"
        super().__init__(f"cannot read dataset {where}: {reason}")


class UnsupportedCase(DatasetError):
    """A case of a foreign dataset format that agentgraph cannot run: `.case`, `.feature`.

    Google ADK's multi-turn conversations (`feature="multi-turn"`) and
    simulated users (`feature="conversation_scenario"`) are such cases.
    """

    def __init__(self, source: str, case: str, feature: str, reason: str) -> None:
        self.case = case
        self.feature = feature
        super().__init__(source, f"case {case!r}: {reason}")


class TraceFormatError(AgentGraphError, ValueError):
    """A trace file (JSON lines) that cannot be read: `.source`, `.line` (from 1) and `.reason`."""

    def __init__(self, source: str, reason: str, *, line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.reason = masked(reason)
        where = source if line is None else f"{source}, line {line}"
        super().__init__(f"cannot read trace {where}: {reason}")


class RunInputError(AgentGraphError, ValueError):
    """A request to start or resume a run that cannot become one: `.reason` says why.

    Raised for what a client sends (an AG-UI `RunAgentInput`, a page's form)
    before anything runs.
    """

    def __init__(self, reason: str) -> None:
        self.reason = masked(reason)
        super().__init__(f"cannot run this request: {reason}")


class VectorStoreError(AgentGraphError, ValueError):
    """A vector store that cannot be opened (corrupt file) or a record it cannot take.

    `.path` is the store's file, when it has one; `.reason` says what is wrong.
    """

    def __init__(self, reason: str, *, path: str | None = None) -> None:
        self.reason = masked(reason)
        self.path = path
        where = f"vector store {path}" if path else "vector store"
        super().__init__(f"{where}: {reason}")


class DimensionMismatch(VectorStoreError):
    """A vector (or a store file) whose length is not the store's dimension."""

    def __init__(
        self, expected: int, got: int, *, what: str = "vector", path: str | None = None
    ) -> None:
        self.expected = expected
        self.got = got
        super().__init__(
            f"{what} has {got} dimensions where {expected} were expected; use the same "
            "embedding model (and dimensions) the store was built with",
            path=path,
        )
