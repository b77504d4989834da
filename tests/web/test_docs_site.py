"""The built documentation site in a real browser, served from a loopback HTTP server.

`AGENTGRAPH_DOCS_SCREENSHOTS=folder` keeps the screenshots of the home page and a guide
page there (`make docs-screenshot` refreshes the pictures in docs/ that way); otherwise
they go to a temporary folder.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .browser import browser, need_chromium

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(420)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serving(folder: Path) -> Iterator[str]:
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def build(site: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def test_the_home_page_and_a_guide_render_offline_and_are_photographed(tmp_path):
    need_chromium()
    shots = Path(os.environ.get("AGENTGRAPH_DOCS_SCREENSHOTS") or tmp_path)
    site = tmp_path / "site"
    build(site)
    requested: list[str] = []
    with serving(site) as url, browser(tmp_path / "profile") as (page, _):
        page.on("request", lambda request: requested.append(request.url))
        page.goto(url + "/")
        page.wait_for_load_state("networkidle")
        assert page.locator("article h1").first.inner_text().rstrip("¶") == "agentgraph"
        assert page.locator("nav").get_by_text("Get started").count() >= 1
        page.screenshot(path=str(shots / "home-page.png"))

        page.goto(url + "/guides/models.html")
        page.wait_for_load_state("networkidle")
        assert page.locator("article h1").first.inner_text().rstrip("¶") == "Models and providers"
        assert page.locator("article pre code").count() >= 3  # the examples, highlighted
        page.screenshot(path=str(shots / "guide-page.png"))
    hosts = {urlsplit(u).hostname for u in requested if u.startswith("http")}
    assert hosts == {"127.0.0.1"}  # nothing fetched from elsewhere: no fonts, no scripts
    assert (shots / "home-page.png").stat().st_size > 10_000


def test_the_site_opened_from_disk_searches_and_follows_its_links(tmp_path):
    need_chromium()
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    site = tmp_path / "site"
    build(site)
    index = site / "index.html"
    requested: list[str] = []
    with browser(tmp_path / "profile") as (page, _):
        page.on("request", lambda request: requested.append(request.url))
        page.goto(index.as_uri())
        page.wait_for_load_state("load")
        assert page.locator("article h1").first.inner_text().rstrip("¶") == "agentgraph"
        # Search works without a server: the index is inlined, the worker shim is the site's.
        page.click("label.md-search__icon, .md-search__input", timeout=10_000)
        # The page's worker builds the index first, slowly on a loaded machine, and a
        # query typed before it is ready may go unanswered: wait until the result pane
        # no longer says "Initializing search" (the theme's text until the worker is
        # ready), then type the query key by key (the theme reads it on key-up, which
        # `fill` does not send), again if it goes unanswered.
        page.wait_for_function(
            "() => !document.querySelector('.md-search-result__meta')"
            ".textContent.includes('Initializing')",
            timeout=240_000,
        )
        for _ in range(6):
            page.fill(".md-search__input", "")
            page.locator(".md-search__input").press_sequentially("checkpoint")
            with contextlib.suppress(PlaywrightTimeout):
                page.wait_for_selector(".md-search-result__item", timeout=10_000)
                break
        page.wait_for_selector(".md-search-result__item", timeout=10_000)
        assert page.locator(".md-search-result__item").count() >= 1
        page.keyboard.press("Escape")
        # A navigation link opens a page, not a folder's listing.
        page.locator("nav.md-nav a.md-nav__link", has_text="Get started").first.click()
        page.wait_for_load_state("load")
        assert page.url.endswith("/get-started.html"), page.url
        assert page.locator("article h1").first.inner_text().rstrip("¶") == "Get started"
    assert [u for u in requested if u.startswith("http")] == []  # nothing from the network
