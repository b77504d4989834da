"""`GET /openapi.json` (the server's OpenAPI description) and `GET /docs` (it, rendered).

`/docs` is Swagger UI 5 (OpenAPI 3.1) from the `openapi-ui-bundles` package
(Apache-2.0, the files as Swagger UI releases them), which the server serves
itself under `/docs/static`: the page fetches nothing from any other host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from openapi_ui_bundles.swagger_ui import static_path
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from .. import __version__
from ._api import json_response
from ._openapi import openapi

__all__ = ("DOCS_PATHS", "DocsRoutes")

DOCS_PATHS = ("/docs", "/docs/static", "/openapi.json")
"""The paths of the description and its page: answered without an API key."""

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>agentgraph agent server API</title>
<link rel="stylesheet" href="/docs/static/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/static/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout"
});
</script>
</body>
</html>
"""


class DocsRoutes:
    """The description of the routes `table()` answers (the app's, these included)."""

    def __init__(self, table: Callable[[], Sequence[BaseRoute]]) -> None:
        self.table = table
        self._document: dict[str, Any] | None = None

    async def document(self, request: Request) -> Response:
        if self._document is None:  # the routes are fixed once the app is made
            self._document = openapi(self.table(), version=__version__)
        return json_response(self._document)

    async def page(self, request: Request) -> Response:
        return HTMLResponse(_PAGE)

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/openapi.json", self.document, methods=["GET"]),
            Route("/docs", self.page, methods=["GET"]),
            Mount("/docs/static", StaticFiles(directory=str(static_path)), name="docs"),
        ]
