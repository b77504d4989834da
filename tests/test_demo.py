"""`make demo` on its offline model: every tool result of a step, no tokens, how to set a model."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _demo_output() -> str:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENTGRAPH_MODEL")
    }
    env["PYTHONPATH"] = str(ROOT)
    env["OLLAMA_HOST"] = "http://127.0.0.1:9"  # the discard port: no Ollama answers there
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "react_agent.py")],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    )  # fmt: skip
    return done.stdout


def test_the_offline_demo_shows_each_tool_result_and_how_to_configure_a_model():
    out = _demo_output()
    first = out.splitlines()[0]
    assert "no real model configured" in first
    assert "AGENTGRAPH_MODEL=openai:gpt-4o-mini" in first
    assert "OPENAI_API_KEY" in first and "ANTHROPIC_API_KEY" in first
    # The step that ran two tool calls shows both results, in the same column.
    lines = out.splitlines()
    (step,) = [i for i, line in enumerate(lines) if line.endswith("tool: '9.0'")]
    assert lines[step + 1].strip() == "tool: '16.0'"
    assert lines[step + 1].index("tool:") == lines[step].index("tool:")
    usage = out.splitlines()[-1]
    assert usage == "usage: 4 model calls (a scripted model uses no tokens)"
    assert "answer: The hypotenuse is 5." in out
