"""`useStream`'s state manager (`@langchain/langgraph-sdk/ui`, from Node) merges a run's
stream by message id: a streamed answer is one message, never two, and ends as the thread has it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.npm import JS, need_npm_package

from .test_sdk_modes import serving

pytestmark = pytest.mark.timeout(120)


def streamed(tmp_path: Path, graph: str) -> Any:
    node_bin, _ = need_npm_package("@langchain/langgraph-sdk")
    with serving((str(tmp_path / "server.db"), "agentgraph")) as url:
        done = subprocess.run(
            [node_bin, str(JS / "langgraph_stream_manager.mjs"), url, graph],
            capture_output=True,
            timeout=90,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    return orjson.loads(done.stdout)


def test_use_streams_manager_holds_each_streamed_message_once_under_the_threads_id(
    tmp_path: Path,
):
    seen = streamed(tmp_path, "agent")
    assert seen["error"] is None
    final = seen["final"]
    assert [kind for kind, _, _ in final] == ["human", "ai", "tool", "ai"]
    for messages in seen["seen"]:
        ids = [message_id for _, message_id, _ in messages]
        assert len(ids) == len(set(ids)), messages  # never one message twice
        for kind, message_id, content in messages:
            # While it streams, an answer is a prefix of what the thread ends with.
            match = [c for k, i, c in final if i == message_id]
            assert match and match[0].startswith(content), (kind, content)
    assert seen["seen"][-1] == final
    texts = [content for _, _, content in seen["seen"][-1] if content]
    assert texts == ["weather?", "Let me look.", "sunny in Oslo", "It is sunny in Oslo."]
    # The answer grew piece by piece in the manager before the step ended.
    answers = {tuple(m[-1]) for m in seen["seen"] if m[-1][0] == "ai"}
    assert len(answers) > 2


def test_use_streams_manager_is_given_the_custom_data(tmp_path: Path):
    seen = streamed(tmp_path, "progress")
    assert seen["error"] is None
    assert seen["custom"] == [{"progress": 0.5}, "done"]
    assert [(k, c) for k, _, c in seen["final"]] == [
        ("human", "weather?"),
        ("ai", "worked on weather?"),
    ]
