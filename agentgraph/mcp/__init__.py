"""Model Context Protocol both ways: `MCPTools` connects to one server (stdio,
streamable HTTP, or in process) and exposes the tools you allow as `Tool`s;
`GraphServer` serves graphs as the tools of a server of your own.

Needs the `mcp` extra: `pip install 'agentgraph-engine[mcp]'`. A namespace of its own,
above `tools/` (it builds `Tool`s and runs under the same executor), so that
`agentgraph.tools` never imports the SDK and a missing extra fails here, clearly.
"""

try:
    import mcp as _mcp  # noqa: F401 - checked here to name the extra
except ImportError as _exc:  # pragma: no cover - depends on the environment
    from .._util._extras import pip_install as _pip_install

    raise ImportError(f"agentgraph.mcp needs the official MCP SDK: {_pip_install('mcp')}") from _exc

from .._core._errors import MCPAnswerError as MCPAnswerError
from .._core._errors import MCPConnectionError as MCPConnectionError
from .._core._errors import MCPToolError as MCPToolError
from ._elicit import Answerer as Answerer
from ._elicit import Elicitation as Elicitation
from ._server import GraphServer as GraphServer
from ._toolset import CALL_TIMEOUT as CALL_TIMEOUT
from ._toolset import MCPTools as MCPTools

__all__ = (
    "Answerer",
    "CALL_TIMEOUT",
    "Elicitation",
    "GraphServer",
    "MCPAnswerError",
    "MCPConnectionError",
    "MCPToolError",
    "MCPTools",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())
