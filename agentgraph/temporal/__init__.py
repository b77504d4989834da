"""Durable runs on Temporal: a graph as a workflow, its effects as activities.

A worker built with `worker(client, task_queue=..., graphs=[...], models=...,
tools=...)` runs any of its graphs, chosen by name, in one generic workflow;
`TemporalRunner(client, task_queue=...)` starts runs and follows them. Every
effect a node makes through its runtime (model calls, streamed ones,
embeddings, tool calls, `rt.once`) is an activity, so a run whose worker is
lost goes on at another worker without repeating a completed call.
`rt.interrupt(question)` waits for `TemporalRun.answer(...)`, for days if need
be. Workers given `deployment=` pin each run to the versions of the graphs it
started on (Temporal's worker deployment versioning); `make_current` sends new
runs to a newer version. Needs the `temporal` extra, and asyncio (Temporal's
SDK does not run on trio).

Loading this package makes interpreter exit wait (briefly, bounded) until the
SDK's native threads are out of Python, which otherwise can abort a program
that ends right after its last Temporal call (see `_exit`).
"""

import importlib.util as _util

from .._util._extras import pip_install as _pip_install

if _util.find_spec("temporalio") is None:
    raise ImportError(f"agentgraph.temporal needs Temporal's SDK: {_pip_install('temporal')}")

from . import _exit as _exit  # registers the exit hook
from ._client import RunFailed as RunFailed
from ._client import RunState as RunState
from ._client import TemporalRun as TemporalRun
from ._client import TemporalRunner as TemporalRunner
from ._convert import BLOB_THRESHOLD as BLOB_THRESHOLD
from ._convert import BlobCodec as BlobCodec
from ._convert import BlobStore as BlobStore
from ._convert import ContextPayloadConverter as ContextPayloadConverter
from ._convert import data_converter as data_converter
from ._deployment import build_id as build_id
from ._deployment import make_current as make_current
from ._registry import ActivityPolicy as ActivityPolicy
from ._server import dev_server_path as dev_server_path
from ._server import time_skipping_server_path as time_skipping_server_path
from ._worker import replayer as replayer
from ._worker import worker as worker
from ._workflow import ActivityFailed as ActivityFailed
from ._workflow import GraphWorkflow as GraphWorkflow

__all__ = (
    "ActivityFailed",
    "ActivityPolicy",
    "BLOB_THRESHOLD",
    "BlobCodec",
    "BlobStore",
    "ContextPayloadConverter",
    "GraphWorkflow",
    "RunFailed",
    "RunState",
    "TemporalRun",
    "TemporalRunner",
    "build_id",
    "data_converter",
    "dev_server_path",
    "make_current",
    "replayer",
    "time_skipping_server_path",
    "worker",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())
