"""The LLM path benchmark's task: questions, tools, and the fake model's side.

Run *i* asks "What is (i + 7) * k?"; the fake model calls ``add``, then ``multiply`` on
its result, then answers, deciding from the request's messages alone. ``serve`` runs it
behind the loopback fake server in a process of its own.
"""

import json
import re
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agentgraph import tool
from agentgraph.llm import Message, ToolCall

MODEL = "fake-model"
API_KEY = "bench-key"
SYSTEM_PROMPT = "You are a careful calculator. Use the tools for every step."
MAX_TURNS = 4
REQUESTS_PER_RUN = 3
QUESTION = re.compile(r"^What is \((\d+) \+ (\d+)\) \* (\d+)\?$")


def question(i: int) -> str:
    return f"What is ({i} + 7) * {i % 5 + 2}?"


def expected_answer(i: int) -> str:
    factor = i % 5 + 2
    return f"({i} + 7) * {factor} = {(i + 7) * factor}"


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


TOOLS = (add, multiply)
IMPLS: dict[str, Callable[..., Awaitable[int]]] = {t.name: t.fn for t in TOOLS}


def _plain(value: Any) -> Any:
    """Read-only mappings (tool schemas) as plain dicts, so any JSON encoder takes them."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


# The tool list agentgraph sends, built once from the same specs for the other clients.
TOOL_PARAMS = [
    {
        "type": "function",
        "function": {
            "name": t.spec.name,
            "parameters": _plain(t.spec.parameters),
            "description": t.spec.description,
        },
    }
    for t in TOOLS
]
# The same tools in the Responses API's flat shape; the schemas are closed, so strict.
RESPONSES_TOOL_PARAMS = [
    {
        "type": "function",
        "name": t.spec.name,
        "parameters": _plain(t.spec.parameters),
        "strict": True,
        "description": t.spec.description,
    }
    for t in TOOLS
]


def _turns(body: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The user's question and the tool results so far, from either API's body."""
    if "input" in body:  # the Responses API: input items
        items = body["input"]
        user = next(i["content"] for i in items if i.get("role") == "user")
        return user, [i["output"] for i in items if i.get("type") == "function_call_output"]
    messages = body["messages"]
    user = next(m["content"] for m in messages if m["role"] == "user")
    return user, [m["content"] for m in messages if m["role"] == "tool"]


def respond(provider: str, record: Any) -> Message | str:
    """The fake model: `add`, then `multiply` on its result, then the answer.

    Decided from the request's messages (or input items) only, so any client that
    carries the tool results back faithfully gets the right answer.
    """
    user, results = _turns(record.body)
    found = QUESTION.match(user)
    if found is None:
        return f"unexpected question: {user!r}"
    a, b, c = (int(x) for x in found.groups())
    if not results:
        return Message.assistant(tool_calls=(ToolCall("", "add", {"a": a, "b": b}),))
    if len(results) == 1:
        return Message.assistant(
            tool_calls=(ToolCall("", "multiply", {"a": int(results[0]), "b": c}),)
        )
    return f"({a} + {b}) * {c} = {int(results[1])}"


def serve(delay: float) -> None:
    """The fake server process: prints its URL, then answers `stats` / `reset` on stdin."""
    from agentgraph.testing import FakeServer

    with FakeServer(responder=respond, delay=delay, api_key=API_KEY) as server:
        print(json.dumps({"url": server.openai_url}), flush=True)
        for line in sys.stdin:
            if line.strip() == "reset":
                server.reset()
                print(json.dumps({"ok": True}), flush=True)
            elif line.strip() == "stats":
                chats = [r for r in server.requests if r.endpoint == "chat"]
                stats = {
                    "requests": len(chats),
                    "cpu_s": time.process_time(),
                }
                print(json.dumps(stats), flush=True)


def agentgraph_run_once(model: Any) -> Any:
    """One run of the task: `react_agent` over `model`, no retries, the answer and requests."""
    from agentgraph import AgentContext, GraphRunner, RetryPolicy
    from agentgraph.nodes import react_agent

    agent = react_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT, max_turns=MAX_TURNS)
    runner = GraphRunner(retry=RetryPolicy(attempts=1))

    async def run_once(i: int) -> tuple[str, int]:
        result = await runner.run(agent, AgentContext(question(i)))
        return result.input, result.usage.requests

    return run_once
