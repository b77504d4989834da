"""Every error agentgraph raises, under one root.

```
AgentGraphError
├── GraphDefinitionError (ValueError)      while building a graph; never during a run
│   └── EdgeOutsideBuilder (RuntimeError)   edge_to called outside a `with GraphBuilder` block
├── ContextEncodingError (TypeError)        a context value that cannot be serialized
├── ContextDecodingError (ValueError)       a serialized context that cannot be rebuilt
├── CheckpointError (LookupError)           a checkpoint store cannot serve a request
│   └── LeaseLost                           the run's lease lapsed or passed to another runner
├── RunError (RuntimeError)                 a run that did not reach `finish`
│   ├── StepLimitExceeded
│   ├── UsageLimitExceeded                  a model call would pass a `UsageLimits` limit
│   ├── NodeFailed                          the original error is `__cause__`
│   ├── RoutingError                        a router returned an undeclared or foreign node
│   │   └── DeadEnd                         no transition fired at a node other than finish
│   ├── GraphCancelled                      the run handle was cancelled
│   ├── GraphTimeout (TimeoutError)         the run's own timeout elapsed
│   ├── Interrupted                         a node asked for outside input; resume with an answer
│   ├── ResumeError                         a checkpoint that does not fit the graph, or an
│   │   │                                   unsafe tool call that was in flight at a crash
│   │   └── RunBusy                         another runner holds the run's lease
│   └── ReplayDiverged                      a replay asked for what the record does not hold
├── UsageError (TypeError)                  the API called in a way that cannot work; says the fix
├── NodeTimeout (TimeoutError)              one node attempt exceeded its timeout; retryable
├── ProviderError                           a model provider failed; see `.retryable`
│   ├── ProviderConnectionError (ConnectionError)
│   ├── ProviderTimeout (TimeoutError)
│   ├── ProviderStatusError                 an HTTP error status, or an error inside a stream
│   │   ├── AuthenticationError             401 / 403
│   │   ├── NotFoundError                   404, or an unknown model
│   │   ├── BadRequestError (ValueError)    400 / 422: the request itself is wrong
│   │   ├── RateLimitError                  429 (not retryable when the quota is exhausted)
│   │   └── ServerError                     5xx, 529
│   ├── ResponseFormatError (ValueError)    a response that does not follow the wire format
│   └── ProviderConfigError (ValueError)    a model string or client setup that cannot work
├── UnsupportedSetting (ValueError)         a setting the model cannot honour, under `policy="fail"`
├── UnsupportedType (TypeError)             a Python type with no JSON Schema / JSON form
├── ToolError                               a tool-definition or tool-execution problem
│   ├── MCPConnectionError (ConnectionError) an MCP server that cannot be reached or was lost
│   └── MCPToolError                        an MCP server refused a call or answered with an error
├── VectorStoreError (ValueError)           a store file that cannot be read, or a bad record
│   └── DimensionMismatch                   a vector whose length is not the store's dimension
├── OutputError (ValueError)                structured output that stayed invalid
│   └── JudgeError                          an LLM judge gave no usable verdict
├── RunInputError (ValueError)              a run request from outside (AG-UI) that cannot run
├── TraceFormatError (ValueError)           a trace file that cannot be read
└── DatasetError (ValueError)               an evaluation dataset or report that cannot be read
```

Run errors carry the last good context (`.context`), the node path (`.path`) and
the step index (`.step`). Every message is built in the constructor.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._context import AgentContext

__all__ = (
    "AgentGraphError",
    "AuthenticationError",
    "BadRequestError",
    "CheckpointError",
    "ContextDecodingError",
    "ContextEncodingError",
    "DatasetError",
    "DeadEnd",
    "DimensionMismatch",
    "EdgeOutsideBuilder",
    "GraphCancelled",
    "GraphDefinitionError",
    "GraphTimeout",
    "Interrupted",
    "JudgeError",
    "LeaseLost",
    "MCPConnectionError",
    "MCPToolError",
    "NodeFailed",
    "NodeTimeout",
    "NotFoundError",
    "OutputError",
    "ProviderConfigError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderStatusError",
    "ProviderTimeout",
    "RateLimitError",
    "ReplayDiverged",
    "ResponseFormatError",
    "ResumeError",
    "RoutingError",
    "RunBusy",
    "RunError",
    "RunInputError",
    "ServerError",
    "StepLimitExceeded",
    "ToolError",
    "TraceFormatError",
    "UnsupportedSetting",
    "UnsupportedType",
    "UsageError",
    "UsageLimitExceeded",
    "VectorStoreError",
)


def _path(path: Sequence[str]) -> str:
    return "/".join(path) or "<root>"


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


class GraphDefinitionError(AgentGraphError, ValueError):
    """A graph that cannot be built: raised by `GraphBuilder`, never during a run."""

    def __init__(self, graph: str, problem: str) -> None:
        self.graph = graph
        self.problem = problem
        super().__init__(f"graph {graph!r}: {problem}")


class EdgeOutsideBuilder(GraphDefinitionError, RuntimeError):
    """`edge_to` was called with no `with GraphBuilder(...)` block open."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.graph = ""
        self.problem = (
            f"{node}.edge_to(...) was called outside a builder block; "
            "write edges inside `with GraphBuilder(...) as g:`"
        )
        AgentGraphError.__init__(self, self.problem)


class ContextEncodingError(AgentGraphError, TypeError):
    """A value in a context cannot be serialized; `.field` names where it sits."""

    def __init__(self, field: str, value_type: type[Any], reason: str = "") -> None:
        self.field = field
        self.value_type = value_type
        detail = f": {reason}" if reason else ""
        shown = field if len(field) <= 120 else f"{field[:60]}…{field[-59:]}"
        super().__init__(
            f"cannot encode {shown} of type {value_type.__module__}.{value_type.__qualname__}"
            f"{detail}; contexts hold data only (attrs classes, dataclasses, enums, "
            "str/int/float/bool/None, lists, tuples, dicts)"
        )


class ContextDecodingError(AgentGraphError, ValueError):
    """Serialized context data that cannot be rebuilt (broken, or naming a missing class)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"cannot rebuild a context from this data: {reason}")


class RunError(AgentGraphError, RuntimeError):
    """A run that did not reach `finish`. Carries the last good context."""

    def __init__(
        self, message: str, *, context: AgentContext[Any], step: int, path: Sequence[str] = ()
    ) -> None:
        self.context = context
        self.step = step
        self.path = tuple(path)
        super().__init__(message)


class StepLimitExceeded(RunError):
    """The run executed `max_steps` node steps without reaching `finish`."""

    def __init__(self, *, context: AgentContext[Any], step: int, path: Sequence[str]) -> None:
        super().__init__(
            f"step limit of {step} reached before {_path(path)} could run; "
            "raise max_steps or check the graph for a loop that never exits",
            context=context,
            step=step,
            path=path,
        )


class UsageLimitExceeded(RunError):
    """A model call would have passed, or passed, a `UsageLimits` limit; `.reason` says which."""

    def __init__(
        self, reason: str, *, context: AgentContext[Any], step: int, path: Sequence[str]
    ) -> None:
        self.reason = reason
        super().__init__(
            f"usage limit reached at {_path(path)} (step {step}): {reason}",
            context=context,
            step=step,
            path=path,
        )


class NodeFailed(RunError):
    """A node raised. The original error is `__cause__`; `.context` is the node's input."""

    def __init__(
        self,
        *,
        context: AgentContext[Any],
        step: int,
        path: Sequence[str],
        attempts: int,
        error: BaseException,
    ) -> None:
        self.attempts = attempts
        self.error = error
        tries = "attempt" if attempts == 1 else "attempts"
        super().__init__(
            f"node {_path(path)} failed at step {step} after {attempts} {tries}: "
            f"{type(error).__name__}: {error}",
            context=context,
            step=step,
            path=path,
        )


class RoutingError(RunError):
    """A router returned something that is not a valid next node."""

    def __init__(
        self, reason: str, *, context: AgentContext[Any], step: int, path: Sequence[str]
    ) -> None:
        self.reason = reason
        super().__init__(
            f"routing after {_path(path)} (step {step}) failed: {reason}",
            context=context,
            step=step,
            path=path,
        )


class DeadEnd(RoutingError):
    """No transition fired at a node other than `finish`."""

    def __init__(self, *, context: AgentContext[Any], step: int, path: Sequence[str]) -> None:
        super().__init__(
            "no transition fired (every router returned None) and the node is not finish",
            context=context,
            step=step,
            path=path,
        )


class GraphCancelled(RunError):
    """The run was cancelled through its handle; `.context` is the last completed context."""

    def __init__(self, *, context: AgentContext[Any], step: int) -> None:
        super().__init__(f"run cancelled after step {step}", context=context, step=step, path=())


class GraphTimeout(RunError, TimeoutError):
    """The run's timeout elapsed; `.context` is the last completed context."""

    def __init__(self, *, context: AgentContext[Any], step: int, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(
            f"run timed out after {timeout:g}s (last completed step {step})",
            context=context,
            step=step,
            path=(),
        )


class UsageError(AgentGraphError, TypeError):
    """The API was called in a way that cannot work; the message says what to do instead."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class CheckpointError(AgentGraphError, LookupError):
    """A checkpoint store cannot serve a request: an unknown run or step, or a broken record."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class Interrupted(RunError):
    """A node asked for outside input; the run stopped and can be resumed with the answer.

    `.question` is what the node asked, `.context` the node's input context and
    `.run_id` the run to pass to `GraphRunner.resume(..., answer=...)`.
    """

    def __init__(
        self,
        *,
        run_id: str,
        question: Any,
        context: AgentContext[Any],
        step: int,
        path: Sequence[str],
    ) -> None:
        self.run_id = run_id
        self.question = question
        super().__init__(
            f"run {run_id!r} is waiting for an answer at {_path(path)} (step {step}): "
            f"{question!r}; resume it with GraphRunner.resume(..., answer=...)",
            context=context,
            step=step,
            path=path,
        )


class ResumeError(RunError):
    """A run cannot be resumed as recorded; `.reason` says why and nothing was run again."""

    def __init__(
        self,
        reason: str,
        *,
        run_id: str,
        context: AgentContext[Any],
        step: int,
        path: Sequence[str] = (),
    ) -> None:
        self.reason = reason
        self.run_id = run_id
        super().__init__(
            f"cannot resume run {run_id!r} after step {step}: {reason}",
            context=context,
            step=step,
            path=path,
        )


class RunBusy(ResumeError):
    """Another runner holds the run's lease: nothing was run or written.

    Attributes:
        owner: the runner holding the lease (machine, process, and a tag).
        expires: wall-clock time its lease lapses unless renewed.
    """

    def __init__(self, run_id: str, owner: str, expires: float) -> None:
        self.owner = owner
        self.expires = expires
        self.run_id = run_id
        left = max(0.0, expires - time.time())
        self.reason = (
            f"another runner holds it ({owner}); its lease lapses in {left:.1f} s "
            "unless renewed, which its runner does while it is alive"
        )
        message = f"run {run_id!r} is already being run: {self.reason}"
        from ._context import AgentContext

        # Nothing was loaded yet: the error carries an empty context at step 0.
        RunError.__init__(self, message, context=AgentContext(None), step=0)


class ReplayDiverged(RunError):
    """A replayed run did something other than the recorded one; `.diff` shows how."""

    def __init__(
        self,
        what: str,
        *,
        diff: str = "",
        context: AgentContext[Any],
        step: int,
        path: Sequence[str],
    ) -> None:
        self.what = what
        self.diff = diff
        detail = f"\n{diff}" if diff else ""
        super().__init__(
            f"replay diverged at {_path(path)} (step {step}): {what}{detail}",
            context=context,
            step=step,
            path=path,
        )


class NodeTimeout(AgentGraphError, TimeoutError):
    """One attempt of a node exceeded the node's own timeout. Retryable."""

    retryable = True

    def __init__(self, node: str, timeout: float) -> None:
        self.node = node
        self.timeout = timeout
        super().__init__(f"node {node!r} exceeded its timeout of {timeout:g}s")


class ProviderError(AgentGraphError):
    """A model provider failed. `.retryable` says whether trying again can help.

    `.attempts` is how many requests the client made before giving up; when the
    client already retried (`attempts > 1`) the runner does not retry the node
    again, so attempts never multiply.
    """

    retryable: bool = False
    attempts: int = 1

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        body: Any = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
        code: str | None = None,
        request_id: str | None = None,
    ) -> None:
        self.provider = provider
        self.status = status
        self.body = body
        self.retry_after = retry_after
        self.code = code
        self.request_id = request_id
        if retryable is not None:
            self.retryable = retryable
        prefix = f"{provider}: " if provider else ""
        suffix = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"{prefix}{message}{suffix}")


class ProviderConnectionError(ProviderError, ConnectionError):
    """The provider could not be reached, or the connection broke. Retryable."""

    retryable = True


class ProviderTimeout(ProviderError, TimeoutError):
    """The provider did not answer in time. Retryable."""

    retryable = True


class ProviderStatusError(ProviderError):
    """The provider answered with an error status or sent an error inside a stream."""


class AuthenticationError(ProviderStatusError):
    """The credentials were refused (401/403)."""


class NotFoundError(ProviderStatusError):
    """The endpoint or the model does not exist."""


class BadRequestError(ProviderStatusError, ValueError):
    """The request was refused as malformed (400/422); retrying cannot help."""


class RateLimitError(ProviderStatusError):
    """429. Retryable unless the quota is exhausted or the request can never fit."""

    retryable = True


class ServerError(ProviderStatusError):
    """5xx or 529 overload. Retryable."""

    retryable = True


class ResponseFormatError(ProviderError, ValueError):
    """A response that does not follow the provider's wire format."""


class ProviderConfigError(ProviderError, ValueError):
    """A model string or client configuration that cannot work (unknown provider, no key)."""


class UnsupportedSetting(AgentGraphError, ValueError):
    """A setting the model does not support, refused under the `fail` capability policy."""

    def __init__(self, model: str, setting: str, reason: str = "") -> None:
        self.model = model
        self.setting = setting
        detail = f": {reason}" if reason else ""
        super().__init__(f"model {model!r} does not support {setting}{detail}")


class UnsupportedType(AgentGraphError, TypeError):
    """A type annotation that has no JSON Schema (or none in the requested mode)."""

    def __init__(self, annotation: Any, reason: str) -> None:
        self.annotation = annotation
        self.reason = reason
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
        self.problem = problem


class MCPToolError(ToolError):
    """An MCP server answered a tool call with an error (`isError`, or a protocol error).

    `.server` and `.tool` name where it happened; `.detail` is the server's own text.
    """

    def __init__(self, server: str, tool: str, detail: str) -> None:
        super().__init__(f"MCP server {server!r}, tool {tool!r}: {detail}")
        self.server = server
        self.tool = tool
        self.detail = detail


class OutputError(AgentGraphError, ValueError):
    """Structured output that could not be parsed or stayed invalid after every attempt.

    `.attempts` holds the raw text of each attempt; `.errors` the validation
    problems of the last one, as `path: message` strings.
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
        self.reason = reason
        where = source if line is None else f"{source}, line {line}"
        super().__init__(f"cannot read dataset {where}: {reason}")


class TraceFormatError(AgentGraphError, ValueError):
    """A trace file (JSON lines) that cannot be read: `.source`, `.line` (from 1) and `.reason`."""

    def __init__(self, source: str, reason: str, *, line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.reason = reason
        where = source if line is None else f"{source}, line {line}"
        super().__init__(f"cannot read trace {where}: {reason}")


class RunInputError(AgentGraphError, ValueError):
    """A request to start or resume a run that cannot become one: `.reason` says why.

    Raised for what a client sends (an AG-UI `RunAgentInput`, a page's form)
    before anything runs.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"cannot run this request: {reason}")


class VectorStoreError(AgentGraphError, ValueError):
    """A vector store that cannot be opened (corrupt file) or a record it cannot take.

    `.path` is the store's file, when it has one; `.reason` says what is wrong.
    """

    def __init__(self, reason: str, *, path: str | None = None) -> None:
        self.reason = reason
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


class LeaseLost(CheckpointError):
    """The run's lease lapsed or passed to another runner: this runner must stop.

    Raised by a store refusing a commit, and by a runner that could not renew
    its lease before it ran out.
    """

    def __init__(self, run_id: str, why: str) -> None:
        self.run_id = run_id
        self.why = why
        super().__init__(f"run {run_id!r} is no longer ours to run: {why}")
