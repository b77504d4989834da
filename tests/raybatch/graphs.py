"""Graphs the Ray tests run by reference (`tests.raybatch.graphs:NAME`), importable in every worker.

`agent` is a ReAct agent on a scripted model: it calls the `bump` tool once and
answers. The input reads `COUNTER|KEY|PAUSE`: `bump` appends `KEY PID` to the
file COUNTER (the side-effect file) and sleeps PAUSE seconds, so that a node
removed mid-batch takes tool calls in flight with it. An input starting with
`fail` makes the model fail with an error whose message holds an API key.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from agentgraph import ProviderError, tool
from agentgraph.llm import ChatRequest
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel

SECRET = "sk-proj-abcdefghijklmnopqrstuvwx0123456789"


@tool
async def bump(counter: str, key: str, pause: float) -> str:
    """Count one execution of the row `key` in the file `counter`."""
    with Path(counter).open("a") as f:
        f.write(f"{key} {os.getpid()}\n")
    await anyio.sleep(pause)
    return f"bumped {key}"


def reply(request: ChatRequest):
    question = request.messages[-1].content or ""
    if request.messages[-1].role == "tool":
        return f"done {question.removeprefix('bumped ')}"
    if question.startswith("fail"):
        raise ProviderError(
            f"the model refused the key {SECRET}", status=400, body=f'{{"key": "{SECRET}"}}'
        )
    counter, key, pause = question.split("|")
    return ScriptedModel.tool_call(
        "bump", call_id=f"c-{key}", counter=counter, key=key, pause=float(pause)
    )


agent = react_agent(ScriptedModel(reply, repeat=True, name="scripted-bump"), [bump], max_turns=2)


def _calculator():
    from tests.evals.agents import agent as calculator_agent

    return calculator_agent()


calculator = _calculator()
"""The evaluation tests' calculator agent, for `evaluate_on_ray`."""
