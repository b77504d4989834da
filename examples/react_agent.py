"""The calculator agent on a real model when one is configured, offline otherwise.

Model choice, in order:
1. `AGENTGRAPH_MODEL` (a model string such as `openai:gpt-4o-mini` or `ollama:qwen2.5:7b`);
2. an Ollama server answering on `OLLAMA_HOST` (default http://localhost:11434): its first model;
3. `OPENAI_API_KEY` (gpt-4o-mini) or `ANTHROPIC_API_KEY` (claude-3-5-haiku-latest);
4. the offline scripted model.
It prints which model it used, each step as it finishes, and the answer.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx

from agentgraph import AgentContext, GraphRunner, Node, StepInfo
from agentgraph.llm import ChatModel, Message, model_from_string
from agentgraph.testing import ScriptedModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calculator_agent import QUESTION, calculator_agent, scripted_model


async def local_ollama_model() -> str | None:
    """The first model of an Ollama server on its usual port, if one answers quickly."""
    host = os.environ.get("OLLAMA_HOST", "http://localhost:11434")
    if not host.startswith("http"):
        host = f"http://{host}"
    try:
        async with httpx.AsyncClient(timeout=0.5) as client:
            response = await client.get(f"{host.rstrip('/')}/api/tags")
            models = response.json().get("models", [])
    except (httpx.HTTPError, ValueError):
        return None
    return f"ollama:{models[0]['name']}" if models else None


async def choose_model() -> tuple[ChatModel, str]:
    spec = os.environ.get("AGENTGRAPH_MODEL") or await local_ollama_model()
    if spec is None and os.environ.get("OPENAI_API_KEY"):
        spec = "openai:gpt-4o-mini"
    if spec is None and os.environ.get("ANTHROPIC_API_KEY"):
        spec = "anthropic:claude-3-5-haiku-latest"
    if spec is None:
        return scripted_model(), (
            "the offline scripted model (no real model configured: set AGENTGRAPH_MODEL, "
            "for example AGENTGRAPH_MODEL=openai:gpt-4o-mini, or OPENAI_API_KEY or "
            "ANTHROPIC_API_KEY, or start Ollama)"
        )
    return model_from_string(spec), f"the real model {spec}"


def _shown(message: Message) -> str:
    calls = ", ".join(c.name for c in message.tool_calls)
    return f"{message.role}: {(message.content or calls)[:70]!r}"


class StepPrinter:
    """Prints each step as it finishes, with every message it added (all its tool results)."""

    def __init__(self) -> None:
        self.seen = 0

    def __call__(self, step: StepInfo, node: Node[Any, Any], ctx: AgentContext[Any]) -> None:
        messages = list(ctx.history)
        new = messages[self.seen :] if len(messages) >= self.seen else messages[-1:]
        self.seen = len(messages)
        first = _shown(new[0]) if new else ""
        where = f"  step {step.index:>2} {'/'.join(step.path):<28}"
        print(f"{where} {step.duration * 1000:7.1f} ms  {first}")
        for message in new[1:]:  # under the first, in the same column
            print(" " * (len(where) + 13) + _shown(message))


async def main() -> None:
    model, which = await choose_model()
    print(f"Using {which}.\n")
    print(f"question: {QUESTION}")
    runner = GraphRunner(on_step=StepPrinter(), max_steps=60)
    result = await runner.run(calculator_agent(model), AgentContext(QUESTION))
    print(f"\nanswer: {result.input}")
    if isinstance(model, ScriptedModel):  # it plays back answers: there are no tokens to count
        print(f"usage: {result.usage.requests} model calls (a scripted model uses no tokens)")
    else:
        print(f"usage: {result.usage.requests} model calls, {result.usage.total_tokens} tokens")


if __name__ == "__main__":
    anyio.run(main)
