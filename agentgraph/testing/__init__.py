"""A testing kit for agentgraph users: scripted models and a fake provider server.

`ScriptedModel` plays back scripted replies in-process; `SchemaTestModel`
calls every tool it is offered with schema-valid arguments. `FakeServer`
serves the OpenAI, Anthropic, Ollama and GigaChat HTTP APIs on a loopback
port, with request validation and injectable faults.

The models need nothing beyond agentgraph itself. The server needs the
`testing` extra (`pip install 'agentgraph-engine[testing]'`: uvicorn and starlette),
imported only when a server name is first used.
"""

import importlib as _importlib
import typing as _typing

from .._util._extras import pip_install as _pip_install
from .._util._public import publish as _publish
from ..llm._replies import EmbeddingFunction as EmbeddingFunction
from ..llm._replies import Reply as Reply
from ..llm._replies import default_embedding as default_embedding
from ..llm._schema_example import schema_example as schema_example
from ..llm._scripted import BrokenStream as BrokenStream
from ..llm._scripted import SchemaTestModel as SchemaTestModel
from ..llm._scripted import ScriptedModel as ScriptedModel
from ..llm._scripted import ScriptExhausted as ScriptExhausted
from ..llm._scripted import ScriptItem as ScriptItem
from ..llm._scripted import stream_events as stream_events
from ._fake_quirks import OpenAIQuirks as OpenAIQuirks
from ._faults import CutStream as CutStream
from ._faults import Delay as Delay
from ._faults import ErrorResponse as ErrorResponse
from ._faults import Fault as Fault
from ._faults import MalformedJson as MalformedJson
from ._faults import StreamError as StreamError
from ._record import Recording as Recording

if _typing.TYPE_CHECKING:
    from ._fake_app import Responder as Responder
    from ._fake_common import RecordedRequest as RecordedRequest
    from ._fake_server import FakeServer as FakeServer

__all__ = (
    "BrokenStream",
    "CutStream",
    "Delay",
    "EmbeddingFunction",
    "ErrorResponse",
    "FakeServer",
    "Fault",
    "MalformedJson",
    "OpenAIQuirks",
    "RecordedRequest",
    "Recording",
    "Reply",
    "Responder",
    "SchemaTestModel",
    "ScriptExhausted",
    "ScriptItem",
    "ScriptedModel",
    "StreamError",
    "default_embedding",
    "schema_example",
    "stream_events",
)

# Names that live next to the server, which imports uvicorn and starlette.
_SERVER_NAMES = {
    "FakeServer": "._fake_server",
    "RecordedRequest": "._fake_common",
    "Responder": "._fake_app",
}


def __getattr__(name: str) -> _typing.Any:
    module = _SERVER_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        value = getattr(_importlib.import_module(module, __name__), name)
    except ModuleNotFoundError as exc:
        raise ImportError(
            f"agentgraph.testing.{name} needs the testing extra "
            f"({_pip_install('testing')}); {(exc.name or '?').split('.')[0]} "
            "is not installed"
        ) from exc
    globals()[name] = value
    _publish(__name__, (name,), globals())
    return value


_publish(__name__, __all__, globals())
