"""A2A both ways: graphs served as A2A agents, remote A2A agents as nodes.

`a2a_app(graph, url=..., store=...)` serves a graph over A2A 1.0 (JSON-RPC
and HTTP+JSON, send and streaming, its Agent Card): each task is a run, its
`contextId` a thread, a question the graph asks is `input-required` and the
client's answer resumes the run. `RemoteAgent(url)` is a remote A2A agent
reached like a model, and `remote_agent(agent)` the node that talks to it:
its answers are journaled like model calls and its questions become
interrupts. Needs the `a2a` extra; the A2A SDK runs on asyncio only.
"""

import importlib.util as _util

from .._util._extras import pip_install as _pip_install

if _util.find_spec("a2a") is None or _util.find_spec("starlette") is None:
    raise ImportError(f"agentgraph.a2a needs the A2A SDK: {_pip_install('a2a')}")

from ._card import Skill as Skill
from ._card import agent_card as agent_card
from ._client import RemoteAgent as RemoteAgent
from ._client import remote_agent as remote_agent
from ._errors import A2AFormatError as A2AFormatError
from ._errors import RemoteTaskFailed as RemoteTaskFailed
from ._server import MAX_MESSAGE_BYTES as MAX_MESSAGE_BYTES
from ._server import a2a_app as a2a_app
from ._tasks import CheckpointTaskStore as CheckpointTaskStore

__all__ = (
    "A2AFormatError",
    "CheckpointTaskStore",
    "MAX_MESSAGE_BYTES",
    "RemoteAgent",
    "RemoteTaskFailed",
    "Skill",
    "a2a_app",
    "agent_card",
    "remote_agent",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())
