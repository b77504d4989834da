"""An assistant that remembers each user's preferences across runs, offline.

Each run is a new conversation. Before the agent answers, a node recalls what
memory holds about the user (`rt.memory(memory).search`) and puts it in
the system prompt; during the run the agent may `remember` new facts with a
tool. The namespace is `("user", <id>)`, taken from the context's state: the
model's tool arguments never name it, so one user's facts never reach another.

The model is scripted (no network): it remembers the sentences of a message
that starts with "Remember:", and otherwise answers from the facts in its
system prompt. Memory is a SQLite file, so it outlives the process.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

from agentgraph import AgentContext, GraphBuilder, GraphRunner, Runtime, node
from agentgraph.checkpoint import SQLiteStore
from agentgraph.llm import ChatRequest, Message
from agentgraph.memory import Memory, SQLiteMemory, memory_tools
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel


def user_namespace(ctx: AgentContext[object]) -> tuple[str, str]:
    return ("user", str(ctx.state["user_id"]))


def scripted_reply(request: ChatRequest) -> Message | str:
    """The offline model: store facts when told to, else answer from the recalled ones."""
    last = request.messages[-1]
    if last.role == "tool":
        return "Noted, I will remember that."
    text = last.content or ""
    if text.startswith("Remember:"):
        facts = [s.strip() + "." for s in text.removeprefix("Remember:").split(".") if s.strip()]
        return ScriptedModel.tool_calls(*(("remember", {"fact": f}) for f in facts))
    system = next((m.content or "" for m in request.messages if m.role == "system"), "")
    known = [line[2:].rstrip(".") for line in system.splitlines() if line.startswith("- ")]
    if not known:
        return "I don't know your tastes yet; tell me what you like."
    return f"Knowing that {' and '.join(known)}, I suggest a spicy chickpea curry."


def assistant(memory: Memory):
    """recall -> a ReAct agent with the remember / recall / forget tools."""

    @node
    async def recall_facts(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        hits = await rt.memory(memory).search(user_namespace(ctx), limit=10)
        facts = "\n".join(f"- {hit.item.value['text']}" for hit in hits)
        return ctx.evolve(system_prompt=f"You are a cooking assistant. About the user:\n{facts}")

    tools = memory_tools(memory, user_namespace)
    agent = react_agent(ScriptedModel(scripted_reply, repeat=True), tools)
    with GraphBuilder[str, str]("assistant") as g:
        g.start.edge_to(recall_facts).edge_to(agent).edge_to(g.finish)
    return g.build()


async def conversation(folder: Path, user_id: str, said: str) -> str:
    """One run: a fresh process could do this, with the same files."""
    async with (
        SQLiteStore(folder / "runs.db") as runs,
        SQLiteMemory(folder / "memory.db") as memory,
    ):
        ctx = AgentContext(said, state={"user_id": user_id})
        out = await GraphRunner().run(assistant(memory), ctx, store=runs)
        return out.input


async def main(folder: Path) -> None:
    turns = [
        ("alice", "Remember: I am vegetarian. I love spicy food."),
        ("alice", "What should I cook tonight?"),
        ("bob", "What should I cook tonight?"),
    ]
    for user_id, said in turns:
        answer = await conversation(folder, user_id, said)
        print(f"{user_id}: {said}\n  -> {answer}")
    async with SQLiteMemory(folder / "memory.db") as memory:
        print("namespaces:", await memory.list_namespaces())


if __name__ == "__main__":
    if len(sys.argv) > 1:
        anyio.run(main, Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            anyio.run(main, Path(tmp))
