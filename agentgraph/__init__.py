"""agentgraph: LLM agents as graphs of immutable steps."""

import typing as _typing

from ._core._context import AgentContext as AgentContext
from ._core._context import History as History
from ._core._context import Settings as Settings
from ._core._errors import AgentGraphError as AgentGraphError
from ._core._errors import AuthenticationError as AuthenticationError
from ._core._errors import BadRequestError as BadRequestError
from ._core._errors import CheckpointError as CheckpointError
from ._core._errors import ContextDecodingError as ContextDecodingError
from ._core._errors import ContextEncodingError as ContextEncodingError
from ._core._errors import DeadEnd as DeadEnd
from ._core._errors import DimensionMismatch as DimensionMismatch
from ._core._errors import EdgeOutsideBuilder as EdgeOutsideBuilder
from ._core._errors import GraphCancelled as GraphCancelled
from ._core._errors import GraphDefinitionError as GraphDefinitionError
from ._core._errors import GraphTimeout as GraphTimeout
from ._core._errors import GuardrailTripped as GuardrailTripped
from ._core._errors import Interrupted as Interrupted
from ._core._errors import InvalidTranscript as InvalidTranscript
from ._core._errors import LeaseLost as LeaseLost
from ._core._errors import MigrationFailed as MigrationFailed
from ._core._errors import NodeFailed as NodeFailed
from ._core._errors import NodeTimeout as NodeTimeout
from ._core._errors import NotFoundError as NotFoundError
from ._core._errors import OutputError as OutputError
from ._core._errors import ProviderConfigError as ProviderConfigError
from ._core._errors import ProviderConnectionError as ProviderConnectionError
from ._core._errors import ProviderError as ProviderError
from ._core._errors import ProviderStatusError as ProviderStatusError
from ._core._errors import ProviderTimeout as ProviderTimeout
from ._core._errors import RateLimitError as RateLimitError
from ._core._errors import ReplayDiverged as ReplayDiverged
from ._core._errors import ResponseFormatError as ResponseFormatError
from ._core._errors import ResumeError as ResumeError
from ._core._errors import RoutingError as RoutingError
from ._core._errors import RunBusy as RunBusy
from ._core._errors import RunError as RunError
from ._core._errors import ServerError as ServerError
from ._core._errors import StepLimitExceeded as StepLimitExceeded
from ._core._errors import ToolError as ToolError
from ._core._errors import UnsupportedSetting as UnsupportedSetting
from ._core._errors import UnsupportedType as UnsupportedType
from ._core._errors import UsageError as UsageError
from ._core._errors import UsageLimitExceeded as UsageLimitExceeded
from ._core._errors import VectorStoreError as VectorStoreError
from ._core._errors import VersionMissing as VersionMissing
from ._core._graph import Graph as Graph
from ._core._graph import GraphBuilder as GraphBuilder
from ._core._node import Node as Node
from ._core._node import node as node
from ._util._moved import install as _install_moved
from ._util._public import publish as _publish
from .llm import Message as Message
from .llm import ToolCall as ToolCall
from .llm import ToolSpec as ToolSpec
from .llm import Usage as Usage

__version__ = "0.1.0"
"""The version of the `agentgraph-engine` distribution (the import package is `agentgraph`)."""

if _typing.TYPE_CHECKING:
    from ._core._effect_kinds import EmbedEffect as EmbedEffect
    from ._core._effect_kinds import InterruptEffect as InterruptEffect
    from ._core._effect_kinds import MemoryEffect as MemoryEffect
    from ._core._effect_kinds import ModelCallEffect as ModelCallEffect
    from ._core._effect_kinds import ModelStreamEffect as ModelStreamEffect
    from ._core._effect_kinds import OnceEffect as OnceEffect
    from ._core._effect_kinds import ToolCallsEffect as ToolCallsEffect
    from ._core._events import ContextEntry as ContextEntry
    from ._core._events import CustomEvent as CustomEvent
    from ._core._events import Embedded as Embedded
    from ._core._events import Event as Event
    from ._core._events import GuardDecided as GuardDecided
    from ._core._events import ModelRequested as ModelRequested
    from ._core._events import ModelResponded as ModelResponded
    from ._core._events import ModelStreamed as ModelStreamed
    from ._core._events import NodeFailedEvent as NodeFailedEvent
    from ._core._events import NodeFinished as NodeFinished
    from ._core._events import NodeStarted as NodeStarted
    from ._core._events import OutputAttempt as OutputAttempt
    from ._core._events import PartialOutput as PartialOutput
    from ._core._events import Retrieved as Retrieved
    from ._core._events import RetrievedSource as RetrievedSource
    from ._core._events import RetryScheduled as RetryScheduled
    from ._core._events import RouteChosen as RouteChosen
    from ._core._events import RunFinished as RunFinished
    from ._core._events import RunStarted as RunStarted
    from ._core._events import StepInfo as StepInfo
    from ._core._events import StructuredOutput as StructuredOutput
    from ._core._events import Summarized as Summarized
    from ._core._events import ToolFinished as ToolFinished
    from ._core._failure import Attempt as Attempt
    from ._core._failure import Failure as Failure
    from ._core._gate import ModelGate as ModelGate
    from ._core._journal import Journal as Journal
    from ._core._journal import JournalSource as JournalSource
    from ._core._journal import ToolAnswer as ToolAnswer
    from ._core._json import Types as Types
    from ._core._layers import Layer as Layer
    from ._core._retry import RetryPolicy as RetryPolicy
    from ._core._retry import is_transient as is_transient
    from ._core._runner import GraphRunner as GraphRunner
    from ._core._runner import RunHandle as RunHandle
    from ._core._runner import Runtime as Runtime
    from ._core._runner import Sink as Sink
    from ._core._runner import StepCallback as StepCallback
    from ._core._usage import Price as Price
    from ._core._usage import UsageLimits as UsageLimits
    from ._core._versions import GraphVersions as GraphVersions
    from ._core._versions import Migration as Migration
    from ._core._versions import ResumePolicy as ResumePolicy
    from .nodes import Generate as Generate
    from .nodes import MapEach as MapEach
    from .nodes import Parallel as Parallel
    from .nodes import Partial as Partial
    from .nodes import Section as Section
    from .nodes import generate as generate
    from .nodes import map_each as map_each
    from .nodes import parallel as parallel
    from .nodes import react_agent as react_agent
    from .nodes import stream_structured as stream_structured
    from .structured import Guide as Guide
    from .structured import describe as describe
    from .structured import from_tool_call as from_tool_call
    from .structured import generable as generable
    from .structured import json_schema as json_schema
    from .structured import loads_lenient as loads_lenient
    from .structured import parse as parse
    from .structured import prompt_fragment as prompt_fragment
    from .structured import tools_for_union as tools_for_union
    from .structured import try_parse as try_parse
    from .structured import validate as validate
    from .tools import Tool as Tool
    from .tools import tool as tool

# What builds a graph (contexts, messages, nodes, graphs, errors) loads with the
# package. The runner with its events, journal and policies, the ready-made nodes,
# structured output and tools load on first use, so that `import agentgraph`
# costs little more than its dependencies: each of their modules creates dozens
# of attrs classes.
_LAZY = {
    "Attempt": "._core._failure",
    "Failure": "._core._failure",
    "Migration": "._core._versions",
    "ResumePolicy": "._core._versions",
    "ContextEntry": "._core._events",
    "CustomEvent": "._core._events",
    "Embedded": "._core._events",
    "EmbedEffect": "._core._effect_kinds",
    "InterruptEffect": "._core._effect_kinds",
    "MemoryEffect": "._core._effect_kinds",
    "Layer": "._core._layers",
    "ModelCallEffect": "._core._effect_kinds",
    "ModelStreamEffect": "._core._effect_kinds",
    "OnceEffect": "._core._effect_kinds",
    "ToolCallsEffect": "._core._effect_kinds",
    "Event": "._core._events",
    "Generate": ".nodes",
    "GraphRunner": "._core._runner",
    "GraphVersions": "._core._versions",
    "GuardDecided": "._core._events",
    "Guide": ".structured",
    "Journal": "._core._journal",
    "JournalSource": "._core._journal",
    "MapEach": ".nodes",
    "ModelGate": "._core._gate",
    "ModelRequested": "._core._events",
    "ModelResponded": "._core._events",
    "ModelStreamed": "._core._events",
    "NodeFailedEvent": "._core._events",
    "NodeFinished": "._core._events",
    "NodeStarted": "._core._events",
    "OutputAttempt": "._core._events",
    "Parallel": ".nodes",
    "Partial": ".nodes",
    "PartialOutput": "._core._events",
    "Price": "._core._usage",
    "Retrieved": "._core._events",
    "RetrievedSource": "._core._events",
    "RetryPolicy": "._core._retry",
    "RetryScheduled": "._core._events",
    "RouteChosen": "._core._events",
    "RunFinished": "._core._events",
    "RunHandle": "._core._runner",
    "RunStarted": "._core._events",
    "Runtime": "._core._runner",
    "Section": ".nodes",
    "Sink": "._core._runner",
    "StepCallback": "._core._runner",
    "StepInfo": "._core._events",
    "StructuredOutput": "._core._events",
    "Summarized": "._core._events",
    "Tool": ".tools",
    "ToolAnswer": "._core._journal",
    "ToolFinished": "._core._events",
    "Types": "._core._json",
    "UsageLimits": "._core._usage",
    "describe": ".structured",
    "from_tool_call": ".structured",
    "generable": ".structured",
    "generate": ".nodes",
    "is_transient": "._core._retry",
    "json_schema": ".structured",
    "loads_lenient": ".structured",
    "map_each": ".nodes",
    "parallel": ".nodes",
    "parse": ".structured",
    "prompt_fragment": ".structured",
    "react_agent": ".nodes",
    "stream_structured": ".nodes",
    "tool": ".tools",
    "tools_for_union": ".structured",
    "try_parse": ".structured",
    "validate": ".structured",
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    _publish(__name__, (name,), globals())
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = (
    "AgentContext",
    "AgentGraphError",
    "Attempt",
    "AuthenticationError",
    "BadRequestError",
    "CheckpointError",
    "ContextDecodingError",
    "ContextEncodingError",
    "ContextEntry",
    "CustomEvent",
    "DeadEnd",
    "DimensionMismatch",
    "EdgeOutsideBuilder",
    "EmbedEffect",
    "Embedded",
    "Event",
    "Failure",
    "Generate",
    "Graph",
    "GraphBuilder",
    "GraphCancelled",
    "GraphDefinitionError",
    "GraphRunner",
    "GraphTimeout",
    "GraphVersions",
    "GuardDecided",
    "GuardrailTripped",
    "Guide",
    "History",
    "InterruptEffect",
    "Interrupted",
    "InvalidTranscript",
    "Journal",
    "JournalSource",
    "Layer",
    "LeaseLost",
    "MapEach",
    "MemoryEffect",
    "Message",
    "Migration",
    "MigrationFailed",
    "ModelCallEffect",
    "ModelGate",
    "ModelRequested",
    "ModelResponded",
    "ModelStreamEffect",
    "ModelStreamed",
    "Node",
    "NodeFailed",
    "NodeFailedEvent",
    "NodeFinished",
    "NodeStarted",
    "NodeTimeout",
    "NotFoundError",
    "OnceEffect",
    "OutputAttempt",
    "OutputError",
    "Parallel",
    "Partial",
    "PartialOutput",
    "Price",
    "ProviderConfigError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderStatusError",
    "ProviderTimeout",
    "RateLimitError",
    "ReplayDiverged",
    "ResponseFormatError",
    "ResumeError",
    "ResumePolicy",
    "Retrieved",
    "RetrievedSource",
    "RetryPolicy",
    "RetryScheduled",
    "RouteChosen",
    "RoutingError",
    "RunBusy",
    "RunError",
    "RunFinished",
    "RunHandle",
    "RunStarted",
    "Runtime",
    "Section",
    "ServerError",
    "Settings",
    "Sink",
    "StepCallback",
    "StepInfo",
    "StepLimitExceeded",
    "StructuredOutput",
    "Summarized",
    "Tool",
    "ToolAnswer",
    "ToolCall",
    "ToolCallsEffect",
    "ToolError",
    "ToolFinished",
    "ToolSpec",
    "Types",
    "UnsupportedSetting",
    "UnsupportedType",
    "Usage",
    "UsageError",
    "UsageLimitExceeded",
    "UsageLimits",
    "VectorStoreError",
    "VersionMissing",
    "describe",
    "from_tool_call",
    "generable",
    "generate",
    "is_transient",
    "json_schema",
    "loads_lenient",
    "map_each",
    "node",
    "parallel",
    "parse",
    "prompt_fragment",
    "react_agent",
    "stream_structured",
    "tool",
    "tools_for_union",
    "try_parse",
    "validate",
)

_install_moved()  # the private module paths of earlier releases still import
_publish(__name__, __all__, globals())
