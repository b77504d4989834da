"""Consuming step events: trace records and sinks, loading traces, and pictures of graphs and runs.

Sinks go to `GraphRunner(sinks=[...])`: `JsonlSink` writes a JSON-lines file,
`ConsoleSink` shows a live tree, `OtelSink` makes OpenTelemetry spans (the
`otel` extra), `TraceRecorder` keeps records in memory. `load_trace` rebuilds
the step tree of a file; `run_to_mermaid` and `trace_to_html` draw a run.
Secrets never reach a record; a `Redactor` hook can mask more.
"""

from .._core._errors import TraceFormatError as TraceFormatError
from .._util._redact import Redaction as Redaction
from .._util._redact import Redactor as Redactor
from ._console import ConsoleSink as ConsoleSink
from ._console import render_trace as render_trace
from ._html import trace_to_html as trace_to_html
from ._jsonl import JsonlSink as JsonlSink
from ._jsonl import TraceRecorder as TraceRecorder
from ._jsonl import load_trace as load_trace
from ._jsonl import load_traces as load_traces
from ._jsonl import traces_from_records as traces_from_records
from ._mermaid import graph_to_mermaid as graph_to_mermaid
from ._mermaid import run_to_mermaid as run_to_mermaid
from ._otel import OtelSink as OtelSink
from ._records import Recorder as Recorder
from ._trace import ModelCall as ModelCall
from ._trace import RetryRecord as RetryRecord
from ._trace import Route as Route
from ._trace import Step as Step
from ._trace import ToolRecord as ToolRecord
from ._trace import Trace as Trace

__all__ = (
    "ConsoleSink",
    "JsonlSink",
    "ModelCall",
    "OtelSink",
    "Recorder",
    "Redaction",
    "Redactor",
    "RetryRecord",
    "Route",
    "Step",
    "ToolRecord",
    "Trace",
    "TraceFormatError",
    "TraceRecorder",
    "graph_to_mermaid",
    "load_trace",
    "load_traces",
    "render_trace",
    "run_to_mermaid",
    "trace_to_html",
    "traces_from_records",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())
