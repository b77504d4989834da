"""The workload of `scale.py`: a 4-step agent whose model sleeps 10 ms per call.

Imported by reference (`_scale_graph:agent`) in every Ray worker, and directly by
the plain asyncio case. Each of the four steps is a `chat` node calling the fake
model once, so a run spends 40 ms waiting and the rest is the engine's own work.
"""

from contextlib import asynccontextmanager

import anyio

from agentgraph import GraphBuilder, Message, Usage, node
from agentgraph.llm import ChatRequest, ChatResponse
from agentgraph.nodes import chat

CALL_SECONDS = 0.010


class SleepyModel:
    """A `ChatModel` that answers after 10 ms, as a fast remote model would."""

    name = "sleepy"
    provider = "fake"

    async def request(self, request: ChatRequest) -> ChatResponse:
        await anyio.sleep(CALL_SECONDS)
        return ChatResponse(
            Message.assistant("ok"), usage=Usage(input_tokens=20, output_tokens=2, requests=1)
        )

    @asynccontextmanager
    async def stream(self, request: ChatRequest):
        raise NotImplementedError("the benchmark model does not stream")
        yield


@node
async def ask(ctx):
    return ctx.append(Message.user(ctx.input))


def build():
    model = SleepyModel()
    with GraphBuilder[str, str]("scale_agent") as g:
        last = g.start.edge_to(ask)
        for i in range(3):
            last = last.edge_to(chat(model, name=f"think_{i}"))
        last.edge_to(g.finish)
    return g.build()


agent = build()
