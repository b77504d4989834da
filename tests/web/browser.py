"""Debian's Chromium driven by Playwright (the Python package; its driver ships in the wheel).

Never `playwright install`: the browser is the system one, started headless
with a fresh profile and no network features.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 20_000


def need_chromium() -> None:
    """Skip without Chromium, saying why; in CI (`CI` set) a missing browser is a failure."""
    if os.path.exists(CHROMIUM):
        return
    reason = f"{CHROMIUM} is missing: `make browser` (as root) installs the Debian package chromium"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@contextlib.contextmanager
def browser(profile: Path) -> Iterator[tuple[Page, Page]]:
    """Two tabs of one headless Chromium with a fresh profile in `profile`."""
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            args=ARGS,
            headless=True,
            viewport={"width": 1280, "height": 860},
            env=_own_home(profile),
        )
        try:
            context.set_default_timeout(TIMEOUT_MS)
            first = context.pages[0] if context.pages else context.new_page()
            yield first, context.new_page()
        finally:
            context.close()


def open_page(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", state="attached")


def start_run(page: Page, text: str) -> str:
    """Type `text` into the form, start the run, and return its id once it shows."""
    page.fill("#run-input", text)
    page.click("#start")
    page.wait_for_selector("body[data-run]", state="attached")
    run_id = page.get_attribute("body", "data-run")
    assert run_id
    return run_id


def _own_home(profile: Path) -> dict[str, str | float | bool]:
    """The environment with a home beside the profile: Chromium keeps crash reports and
    desktop settings under `~` whatever the profile, and a test writes only in its temp dir."""
    home = profile.with_name(f"{profile.name}-home")
    home.mkdir(exist_ok=True)
    drop = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")
    return {k: v for k, v in os.environ.items() if k not in drop} | {"HOME": str(home)}
