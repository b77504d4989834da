"""Runs in the browser: a graph as an AG-UI agent over SSE, and a live development page.

`agui_app(graph)` is a Starlette app speaking AG-UI, the protocol agent
front-ends use: POST a `RunAgentInput`, read the run's events (steps, text
as it streams, tool calls and results, state snapshots and JSON Patch
deltas, interrupts) as server-sent events. `dev_app(graph, store=...)` adds
the page `agentgraph serve` shows. Both need the `web` extra
(`pip install 'agentgraph-engine[web]'`); everything they send is redacted.
"""

try:
    import ag_ui.core  # noqa: F401
    import jsonpatch  # noqa: F401
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - only without the extra
    from .._util._extras import pip_install

    raise ImportError(
        f"agentgraph.web needs the web extra ({exc.name} is missing): {pip_install('web')}"
    ) from exc

from .._core._errors import RunInputError as RunInputError
from ._agui import AguiTranslator as AguiTranslator
from ._agui import context_from_input as context_from_input
from ._app import agui_app as agui_app
from ._app import dev_app as dev_app
from ._hub import Channel as Channel
from ._serve import WebServer as WebServer
from ._serve import serve as serve

__all__ = (
    "AguiTranslator",
    "Channel",
    "RunInputError",
    "WebServer",
    "agui_app",
    "context_from_input",
    "dev_app",
    "serve",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())
