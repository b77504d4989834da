"""The server's OpenAPI description: one operation for every route the app serves, valid
OpenAPI 3.1, answered without the API key, and rendered at /docs in Chromium with no
request leaving the server."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from openapi_spec_validator import validate
from starlette.routing import Route

from agentgraph.server import server_app
from agentgraph.server._openapi import OPERATIONS, UNDESCRIBED, openapi
from tests.web.browser import browser, need_chromium

from .support import GRAPHS, serving

pytestmark = pytest.mark.timeout(120)


def served(tmp_path: Path) -> set[tuple[str, str]]:
    """Every (method, path) the app answers, paths written as OpenAPI writes them."""
    app = server_app(GRAPHS, tmp_path / "server.db", settings=None)
    found = set()
    for route in app.routes:
        if isinstance(route, Route):
            path = route.path.replace("{namespace:path}", "{namespace}")
            found |= {(method, path) for method in route.methods or () if method != "HEAD"}
    return found


def test_every_route_is_described_and_every_description_is_a_route(tmp_path: Path) -> None:
    routes = served(tmp_path)
    assert routes == set(OPERATIONS)


def test_the_document_is_valid_openapi_31_with_an_operation_per_route(tmp_path: Path) -> None:
    app = server_app(GRAPHS, tmp_path / "server.db")
    document = openapi(app.routes, version="1")
    validate(document)
    operations = {
        (method.upper(), path): operation
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    }
    assert set(operations) == served(tmp_path)
    assert all(op["summary"] != UNDESCRIBED for op in operations.values())
    ids = [op["operationId"] for op in operations.values()]
    assert len(ids) == len(set(ids))
    state = operations[("GET", "/threads/{thread_id}/state/{checkpoint_id}")]
    assert [p["name"] for p in state["parameters"]] == ["thread_id", "checkpoint_id"]
    prune = operations[("POST", "/threads/prune")]["requestBody"]["content"]
    assert prune["application/json"]["schema"]["required"] == ["thread_ids"]


def test_a_route_without_a_description_is_listed_as_undescribed() -> None:
    async def nothing() -> None: ...

    document = openapi([Route("/new/{thing_id}", nothing, methods=["POST"])], version="1")
    operation = document["paths"]["/new/{thing_id}"]["post"]
    assert operation["summary"] == UNDESCRIBED


def test_the_description_and_its_page_need_no_api_key(tmp_path: Path) -> None:
    with serving(tmp_path, api_key="sesame", workers=0) as url:
        document = httpx.get(f"{url}/openapi.json")
        page = httpx.get(f"{url}/docs")
        script = httpx.get(f"{url}/docs/static/swagger-ui-bundle.js")
        refused = httpx.get(f"{url}/threads/search")
    assert document.status_code == 200
    assert document.json()["openapi"] == "3.1.0"
    assert page.status_code == 200 and "/docs/static/swagger-ui-bundle.js" in page.text
    assert script.status_code == 200 and "SwaggerUIBundle" in script.text
    assert refused.status_code == 401


def test_the_docs_page_lists_the_endpoints_offline(tmp_path: Path) -> None:
    need_chromium()
    requested: list[str] = []
    with serving(tmp_path, workers=0) as url, browser(tmp_path / "profile") as (page, _):
        here = urlsplit(url).netloc

        def only_the_server(route: object) -> None:
            request = route.request  # type: ignore[attr-defined]
            requested.append(request.url)
            if urlsplit(request.url).netloc == here:
                route.continue_()  # type: ignore[attr-defined]
            else:
                route.abort()  # type: ignore[attr-defined]

        page.route("**/*", only_the_server)
        page.goto(f"{url}/docs")
        page.wait_for_selector(".opblock-summary-path", state="attached")
        paths = page.locator(".opblock-summary-path").all_inner_texts()
        title = page.locator(".info .title").first.inner_text()
    listed = {text.replace("\u200b", "").strip() for text in paths}
    assert {"/threads/prune", "/threads/{thread_id}/runs/wait", "/metrics", "/ok"} <= listed
    assert "agentgraph agent server" in title
    assert {urlsplit(u).netloc for u in requested} == {here}
