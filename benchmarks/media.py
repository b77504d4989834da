"""What images, documents and prompt caching cost on the client, and what plain messages still cost.

Cases (best of several repeats of the process's own CPU time, so other processes on a
busy machine weigh least):

- plain: building a text `Message`, and the OpenAI and Anthropic request bodies for a
  40-turn text conversation (the path every request takes, images or not);
- cache: the Anthropic body for the same conversation with breakpoints;
- image: the OpenAI body for a conversation holding a 1 MB image (base64 of the bytes);
- checkpoint: a 10-step run holding a 1 MB image and a 1 MB PDF in a `MemoryStore`:
  the bytes in blobs and in records.

``--plain`` measures only the first case, which runs against earlier revisions too
(``PYTHONPATH=<other tree> python benchmarks/media.py --plain``).

Usage::

    python benchmarks/media.py            # prints every figure as JSON lines
    python benchmarks/media.py --plain
"""

import argparse
import json
import time
import timeit
from typing import Any

import anyio

from agentgraph.llm import AnthropicModel, ChatRequest, Message, OpenAIModel, ToolCall, ToolSpec

TURNS = 40
TOOLS = (ToolSpec("search", "Search", {"type": "object", "properties": {}}),)


def conversation(turns: int = TURNS) -> list[Message]:
    messages = [Message.system("You answer briefly.")]
    for i in range(turns):
        messages += [
            Message.user(f"question {i} " * 20),
            Message.assistant("", tool_calls=(ToolCall(f"c{i}", "search", {"q": i}),)),
            Message.tool(f"c{i}", f"result {i} " * 40),
        ]
    return messages


def best(fn: Any, number: int) -> float:
    """Microseconds of CPU time per call, the best of 7 repeats."""
    return min(timeit.repeat(fn, number=number, repeat=7, timer=time.process_time)) / number * 1e6


def plain() -> dict[str, float]:
    history = conversation()
    request = ChatRequest(history, tools=TOOLS)
    openai = OpenAIModel("gpt-4o", api_key="sk-bench")
    anthropic = AnthropicModel("claude-sonnet-4-5", api_key="sk-ant-bench")
    return {
        "message_ns": best(lambda: Message("user", "hi"), 200_000) * 1000,
        "assistant_ns": best(lambda: Message.assistant("hi"), 200_000) * 1000,
        "openai_body_us": best(lambda: openai.build_body(request), 2_000),
        "anthropic_body_us": best(lambda: anthropic.build_body(request), 2_000),
    }


def cached() -> dict[str, float]:
    request = ChatRequest(conversation(), tools=TOOLS)
    anthropic = AnthropicModel("claude-sonnet-4-5", api_key="sk-ant-bench", cache=True)
    return {"anthropic_cached_body_us": best(lambda: anthropic.build_body(request), 2_000)}


def megabyte_png() -> bytes:
    return b"\x89PNG\r\n\x1a\n" + bytes(1_000_000)


def image() -> dict[str, float]:
    from agentgraph.llm import Image

    history = [*conversation(), Message.user("What is this?", Image.from_bytes(megabyte_png()))]
    request = ChatRequest(history)
    openai = OpenAIModel("gpt-4o", api_key="sk-bench")
    return {"openai_body_with_1mb_image_us": best(lambda: openai.build_body(request), 50)}


def checkpoint() -> dict[str, float]:
    from agentgraph import AgentContext, GraphRunner
    from agentgraph.checkpoint import MemoryStore
    from agentgraph.llm import Document, Image
    from agentgraph.nodes import react_agent
    from agentgraph.testing import ScriptedModel
    from agentgraph.tools import tool

    @tool
    def look(n: int) -> str:
        """Look again."""
        return f"look {n}"

    pdf = b"%PDF-1.4\n" + bytes(1_000_000)
    question = Message.user("Compare.", Image.from_bytes(megabyte_png()), Document.from_bytes(pdf))
    script = [ScriptedModel.tool_call("look", n=i) for i in range(4)]
    agent = react_agent(ScriptedModel(*script, "Done."), [look])
    store = MemoryStore()
    ctx = AgentContext("compare", history=[question])

    async def go() -> None:
        await GraphRunner().run(agent, ctx, store=store)

    anyio.run(go)
    (run_id,) = store.run_ids
    log = anyio.run(store.load, run_id)
    assert log is not None
    records = [log.run.context, *(r.context for r in log.steps), *(e.value for e in log.effects)]
    return {
        "steps": len(log.steps),
        "file_bytes": len(pdf) + len(megabyte_png()),
        "blob_bytes": sum(len(b) for b in store._blobs.values()),
        "record_bytes": sum(len(r) for r in records),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--plain", action="store_true", help="only the plain-message case")
    args = parser.parse_args(argv)
    cases = [plain] if args.plain else [plain, cached, image, checkpoint]
    for case in cases:
        print(json.dumps({"case": case.__name__, **case()}))


if __name__ == "__main__":
    main()
