"""Every error agentgraph raises, under one root.

```
AgentGraphError
├── GraphDefinitionError (ValueError)      while building a graph; never during a run
│   └── EdgeOutsideBuilder (RuntimeError)   edge_to called outside a `with GraphBuilder` block
├── ContextEncodingError (TypeError)        a context value that cannot be serialized
├── ContextDecodingError (ValueError)       a serialized context that cannot be rebuilt
├── CheckpointError (LookupError)           a checkpoint store cannot serve a request
│   ├── LeaseLost                           the run's lease lapsed or passed to another runner
│   ├── RecordedRunError                    a recorded run that cannot be read back (evals)
│   ├── BlobDamaged                         a stored blob whose bytes fail their digest (checkpoint)
│   └── ThreadError                         a thread the store cannot serve as asked (checkpoint)
│       ├── ThreadNotFound                  no thread of that id in the store
│       └── ThreadDamaged                   the thread's stored conversation cannot be read back
├── RunError (RuntimeError)                 a run that did not reach `finish`
│   ├── StepLimitExceeded
│   │   └── HandoffLoop                     a team handed off past its `max_handoffs` (teams)
│   ├── UsageLimitExceeded                  a model call would pass a `UsageLimits` limit
│   ├── NodeFailed                          the original error is `__cause__`
│   ├── RoutingError                        a router returned an undeclared or foreign node
│   │   └── DeadEnd                         no transition fired at a node other than finish
│   ├── GraphCancelled                      the run handle was cancelled
│   ├── GraphTimeout (TimeoutError)         the run's own timeout elapsed
│   ├── Interrupted                         a node asked for outside input; resume with an answer
│   ├── ResumeError                         a checkpoint that does not fit the graph, or an
│   │   │                                   unsafe tool call that was in flight at a crash
│   │   ├── VersionMissing                  the run's graph version is not kept here
│   │   ├── MigrationFailed                 a context migration failed; the run is unchanged
│   │   └── RunBusy                         another runner holds the run's lease
│   │       └── ThreadBusy                  another run holds the thread (checkpoint)
│   │           └── ThreadMoved             the thread's head moved since it was read
│   ├── HandoffError                        a handoff to a missing agent or a bad history (teams)
│   ├── ReplayDiverged                      a replay asked for what the record does not hold
│   ├── CompactionFailed                    a thread's compaction cannot fit its budget (checkpoint)
│   └── RunFailed                           a run on Temporal ended with an error (temporal)
├── UsageError (TypeError)                  the API called in a way that cannot work; says the fix
├── ActivityFailed                          an effect's Temporal activity failed for good (temporal)
├── GuardrailTripped                        a guard blocked a model's input, an answer or a call
├── GuardError (TypeError)                  a guard that cannot work (a rewrite of the wrong type)
├── ScriptExhausted (AssertionError)        a scripted model ran out of replies (testing)
├── NodeTimeout (TimeoutError)              one node attempt exceeded its timeout; retryable
├── ProviderError                           a model provider failed; see `.retryable`
│   ├── ProviderConnectionError (ConnectionError)
│   ├── ProviderTimeout (TimeoutError)
│   ├── ProviderStatusError                 an HTTP error status, or an error inside a stream
│   │   ├── AuthenticationError             401 / 403
│   │   ├── NotFoundError                   404, or an unknown model
│   │   ├── BadRequestError (ValueError)    400 / 422: the request itself is wrong
│   │   │   └── InvalidTranscript           a conversation the wire would refuse, never sent
│   │   ├── RateLimitError                  429 (not retryable when the quota is exhausted)
│   │   └── ServerError                     5xx, 529
│   ├── ResponseFormatError (ValueError)    a response that does not follow the wire format
│   │   └── A2AFormatError                  a card or remote answer breaking A2A's schema (a2a)
│   ├── RemoteTaskFailed                    a remote A2A agent's task did not complete (a2a)
│   └── ProviderConfigError (ValueError)    a model string or client setup that cannot work
├── UnsupportedSetting (ValueError)         a setting the model cannot honour, under `policy="fail"`
├── UnsupportedType (TypeError)             a Python type with no JSON Schema / JSON form
├── ToolError                               a tool-definition or tool-execution problem
│   ├── MCPConnectionError (ConnectionError) an MCP server that cannot be reached or was lost
│   └── MCPToolError                        an MCP server refused a call or answered with an error
│       └── MCPAnswerError (ValueError)     an answer to a server's question that breaks its form
├── VectorStoreError (ValueError)           a store file that cannot be read, or a bad record
│   └── DimensionMismatch                   a vector whose length is not the store's dimension
├── OutputError (ValueError)                structured output that stayed invalid
│   └── JudgeError                          an LLM judge gave no usable verdict (evals)
├── RunInputError (ValueError)              a run request from outside (AG-UI) that cannot run
├── TraceFormatError (ValueError)           a trace file that cannot be read
├── DatasetError (ValueError)               an evaluation dataset or report that cannot be read
│   └── UnsupportedCase                     a case of a foreign format that cannot run here (evals)
└── LongTermMemoryError                     a memory store refused or failed a request (memory)
    ├── MemoryInputError (ValueError)       a namespace, key, value or limit that cannot be stored
    ├── MemoryEmbedError (RuntimeError)     the embedder failed during a put: nothing was stored
    ├── MemoryDataError (ValueError)        a stored row that cannot be read back (damaged)
    └── MemoryBackendError (OSError)        the memory database itself failed
```

Run errors carry the last good context (`.context`), the node path (`.path`) and
the step index (`.step`). Every message is built in the constructor, and
masked there: secrets (keys, tokens, the values of secret-named environment
variables) in what agentgraph composes, a provider's or a node's words
included, never reach `str`, `repr` or a traceback line. The user's own
exception stays the `__cause__`, as raised.

Store failures: a checkpoint store that fails in a run (a write refused, a
full disk, a database gone) ends the run with `CheckpointError` (`LeaseLost`
when the run passed to another runner), whichever effect met it (`call_model`,
`stream_model`, `call_tools`, `once`, `embed`, `interrupt`), at a step's
commit or at the run's end, in nested graphs and fan-outs alike. It is never
wrapped in `NodeFailed`, never retried (whatever a retry policy says) and never
taken by an error transition: a run whose record cannot be written stops. A
store that raises something else is reported as `CheckpointError` too, with
the store's exception as `__cause__`. It says where the run was (`.context`,
`.step`, `.path`), like a run error. A `CheckpointError` a node raises itself
(from a store it reads, say) ends the run the same way.

The root lives in `_errors_root`, provider errors in `_errors_provider` and the
toolkit's (tools, output, stores, traces) in `_errors_toolkit`, guardrails' in
`_errors_guards`, a run's in `_errors_run` and threads' in `_errors_threads`;
those of building a graph, of contexts and of checkpoint stores are here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors_guards import GuardError as GuardError
from ._errors_guards import GuardrailTripped as GuardrailTripped
from ._errors_provider import AuthenticationError as AuthenticationError
from ._errors_provider import BadRequestError as BadRequestError
from ._errors_provider import InvalidTranscript as InvalidTranscript
from ._errors_provider import NotFoundError as NotFoundError
from ._errors_provider import ProviderConfigError as ProviderConfigError
from ._errors_provider import ProviderConnectionError as ProviderConnectionError
from ._errors_provider import ProviderError as ProviderError
from ._errors_provider import ProviderStatusError as ProviderStatusError
from ._errors_provider import ProviderTimeout as ProviderTimeout
from ._errors_provider import RateLimitError as RateLimitError
from ._errors_provider import ResponseFormatError as ResponseFormatError
from ._errors_provider import ServerError as ServerError
from ._errors_provider import UnsupportedSetting as UnsupportedSetting
from ._errors_root import AgentGraphError as AgentGraphError
from ._errors_root import _rebuild as _rebuild  # pickles made before the split name it here
from ._errors_root import masked
from ._errors_run import DeadEnd as DeadEnd
from ._errors_run import GraphCancelled as GraphCancelled
from ._errors_run import GraphTimeout as GraphTimeout
from ._errors_run import Interrupted as Interrupted
from ._errors_run import MigrationFailed as MigrationFailed
from ._errors_run import NodeFailed as NodeFailed
from ._errors_run import NodeTimeout as NodeTimeout
from ._errors_run import ReplayDiverged as ReplayDiverged
from ._errors_run import ResumeError as ResumeError
from ._errors_run import RoutingError as RoutingError
from ._errors_run import RunBusy as RunBusy
from ._errors_run import RunError as RunError
from ._errors_run import StepLimitExceeded as StepLimitExceeded
from ._errors_run import UsageLimitExceeded as UsageLimitExceeded
from ._errors_run import VersionMissing as VersionMissing
from ._errors_toolkit import DatasetError as DatasetError
from ._errors_toolkit import DimensionMismatch as DimensionMismatch
from ._errors_toolkit import JudgeError as JudgeError
from ._errors_toolkit import MCPAnswerError as MCPAnswerError
from ._errors_toolkit import MCPConnectionError as MCPConnectionError
from ._errors_toolkit import MCPToolError as MCPToolError
from ._errors_toolkit import OutputError as OutputError
from ._errors_toolkit import RunInputError as RunInputError
from ._errors_toolkit import ToolError as ToolError
from ._errors_toolkit import TraceFormatError as TraceFormatError
from ._errors_toolkit import UnsupportedCase as UnsupportedCase
from ._errors_toolkit import UnsupportedType as UnsupportedType
from ._errors_toolkit import VectorStoreError as VectorStoreError

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
    "GuardError",
    "GuardrailTripped",
    "Interrupted",
    "InvalidTranscript",
    "JudgeError",
    "LeaseLost",
    "MCPAnswerError",
    "MCPConnectionError",
    "MCPToolError",
    "MigrationFailed",
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
    "RecordedRunError",
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
    "UnsupportedCase",
    "UnsupportedSetting",
    "UnsupportedType",
    "UsageError",
    "UsageLimitExceeded",
    "VectorStoreError",
    "VersionMissing",
)


class GraphDefinitionError(AgentGraphError, ValueError):
    """A graph that cannot be built: raised by `GraphBuilder`, never during a run."""

    def __init__(self, graph: str, problem: str) -> None:
        self.graph = graph
        self.problem = masked(problem)
        super().__init__(f"graph {graph!r}: {problem}")


class EdgeOutsideBuilder(GraphDefinitionError, RuntimeError):
    """`edge_to` was called with no `with GraphBuilder(...)` block open."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.graph = ""
        self.problem = masked(
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
        self.reason = masked(reason)
        super().__init__(f"cannot rebuild a context from this data: {reason}")


class UsageError(AgentGraphError, TypeError):
    """The API was called in a way that cannot work; the message says what to do instead."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class CheckpointError(AgentGraphError, LookupError):
    """A checkpoint store cannot serve a request: an unknown run or step, a broken record,
    or a store that failed (a full disk, a lost database).

    Raised in a run, it ends the run as itself (see "Store failures" in this
    module's docstring) and says where the run was: `.context` is the input of
    the step whose effect failed (its output, when its commit failed; the final
    context, when the last flush failed), `.step` that step's run-wide index
    and `.path` its node path. Raised outside a run, they are None, None, ().
    """

    context: AgentContext[Any] | None = None
    step: int | None = None
    path: tuple[str, ...] = ()

    def __init__(self, message: str) -> None:
        super().__init__(message)


class LeaseLost(CheckpointError):
    """The run's lease lapsed or passed to another runner: this runner must stop.

    Raised by a store refusing a commit, and by a runner that could not renew
    its lease before it ran out.
    """

    def __init__(self, run_id: str, why: str) -> None:
        self.run_id = run_id
        self.why = masked(why)
        super().__init__(f"run {run_id!r} is no longer ours to run: {why}")


class RecordedRunError(CheckpointError):
    """A recorded run that cannot be read back to be scored or replayed: `.run_id`, `.why`.

    The run is not in the store, its record holds no committed step (it
    stopped before its first step completed), or a record of it is damaged
    (the store's error is the `__cause__`).
    """

    def __init__(self, run_id: str, why: str) -> None:
        self.run_id = run_id
        self.why = masked(why)
        super().__init__(f"recorded run {run_id!r} cannot be read: {why}")
