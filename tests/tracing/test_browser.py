"""The HTML page in headless Chromium: a screenshot shows the graph and the timeline drawn,
and the DOM after the page's script ran holds every step."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from agentgraph import AgentContext, GraphRunner, NodeFailed
from agentgraph.tracing import JsonlSink, load_trace, trace_to_html
from agentgraph.tracing._svg import BAR, COLORS, RETRY, ROW_H, STRIPE

from .png import read_png
from .support import nested_graph

pytestmark = pytest.mark.anyio


def chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and os.path.exists("/usr/bin/chromium"):
        found = "/usr/bin/chromium"
    return found


browser = pytest.mark.skipif(
    chromium() is None,
    reason="chromium is not installed (`make browser` installs the Debian packages "
    "chromium and chromium-driver when run as root)",
)


def headless(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    command = [
        str(chromium()),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--window-size=1200,900",
        *extra,
        page.as_uri(),
    ]
    return subprocess.run(
        command, capture_output=True, timeout=45, check=True, env=own_home(profile)
    )


def own_home(profile: Path) -> dict[str, str]:
    """The environment with a home beside the profile: Chromium keeps crash reports and
    desktop settings under `~` whatever the profile, and a test writes only in its temp dir."""
    home = profile.with_name(f"{profile.name}-home")
    home.mkdir(exist_ok=True)
    drop = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")
    return {k: v for k, v in os.environ.items() if k not in drop} | {"HOME": str(home)}


@pytest.fixture
async def page(tmp_path) -> Path:
    """The page of a nested run with a retry and a failure, made from its trace file."""
    trace_file = tmp_path / "run.jsonl"
    graph = nested_graph(fail=True)
    with JsonlSink(trace_file) as sink, pytest.raises(NodeFailed):
        await GraphRunner(sinks=[sink]).run(graph, AgentContext(1))
    path = tmp_path / "run.html"
    path.write_text(trace_to_html(load_trace(trace_file), graph=graph), encoding="utf-8")
    return path


def bands(ys: list[int]) -> int:
    """How many separate horizontal bands the rows `ys` form."""
    rows = sorted(set(ys))
    return sum(1 for i, y in enumerate(rows) if i == 0 or y != rows[i - 1] + 1)


@browser
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_screenshot_shows_the_graph_and_the_timeline(page, tmp_path):
    shot = tmp_path / "shot.png"
    headless(page, tmp_path / "profile", f"--screenshot={shot}")
    image = read_png(shot.read_bytes())
    assert (image.width, image.height) == (1200, 900)

    # The graph: boxes filled by what happened (prepare and double ran, flaky was
    # retried, check failed), each a solid block of its fill colour.
    ran, retried, failed = (image.where(COLORS[k][0]) for k in ("ran", "retried", "failed"))
    assert len(ran) > 2000 and len(retried) > 1000 and len(failed) > 1000
    graph_top = min(y for _, y in ran + retried + failed)
    graph_bottom = max(y for _, y in ran + retried + failed)
    assert 100 < graph_top < graph_bottom < 450

    # The timeline, below the graph: green bars for steps that ended well, red for
    # the two that failed (check, and inner around it), an amber mark for the retry.
    # Its rows are striped: the stripes tell where it is on the page.
    stripes = [y for _, y in image.where(STRIPE) if y > graph_bottom]
    top, bottom = min(stripes) - ROW_H, max(stripes) + ROW_H
    assert graph_bottom < top and bands(stripes) == 4  # 8 rows, every other one striped

    def inside(color: str) -> list[tuple[int, int]]:
        return [(x, y) for x, y in image.where(color) if top <= y <= bottom]

    ok_bars, failed_bars, retries = inside(BAR["ok"]), inside(BAR["failed"]), inside(RETRY)
    # A bar is at least 2 pixels wide and 14 high, however short its step was.
    assert len(ok_bars) >= 6 * 2 * 14 and len(failed_bars) >= 2 * 2 * 14 and retries
    assert bands([y for _, y in failed_bars]) == 2
    assert bands([y for _, y in ok_bars]) == 6  # prepare, flaky, double x4
    # Bars sit to the right of the step labels and start in time order.
    assert min(x for x, _ in ok_bars + failed_bars) > 280


@browser
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_script_fills_in_every_step(page, tmp_path):
    dom = headless(page, tmp_path / "profile", "--dump-dom").stdout.decode()
    assert re.search(r'<body[^>]*data-ready="1"', dom)
    assert re.search(r'<body[^>]*data-steps="8"', dom)
    assert dom.count('<details class="step"') == 8
    assert '<svg id="graph-svg"' in dom and '<svg id="timeline-svg"' in dom
    assert dom.count('class="bar"') == 8
    assert dom.count("edge edge-taken") == 6
    assert "32 is too big" in dom
