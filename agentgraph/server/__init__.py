"""An agent server the LangGraph SDK clients drive: assistants, threads, runs, workers.

```python
app = server_app({"agent": graph}, "server.db")
```
Serve `app` with any ASGI server, or run `agentgraph server module:graph`.
"""

from ._app import server_app as server_app
from ._flow import FlowLimits as FlowLimits
from ._flow import Limit as Limit
from ._settings import ServerSettings as ServerSettings
from ._webhook_settings import WebhookSettings as WebhookSettings
from ._worker import Worker as Worker

__all__ = ("FlowLimits", "Limit", "ServerSettings", "WebhookSettings", "Worker", "server_app")

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())
