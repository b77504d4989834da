"""The official JavaScript client (`@langchain/langgraph-sdk`) drives the agent server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest

from tests.npm import JS, need_npm_package

from .support import serving

pytestmark = pytest.mark.timeout(90)


def test_the_js_client_streams_to_an_interrupt_resumes_with_a_command_and_joins(
    tmp_path: Path,
):
    node_bin, _ = need_npm_package("@langchain/langgraph-sdk")
    with serving(tmp_path) as url:
        done = subprocess.run(
            [node_bin, str(JS / "langgraph_client.mjs"), url],
            capture_output=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    seen = orjson.loads(done.stdout)
    assert seen["events"] == ["metadata", "updates", "values"]
    assert seen["interrupt"]["value"] == {"question": "may I answer 'the date'?"}
    assert seen["firstStatus"] == "success"
    assert seen["waitingStatus"] == "interrupted"
    assert seen["messages"] == [["human", "the date", "string"], ["ai", "told: yes", "string"]]
    assert seen["threadStatus"] == "idle"
