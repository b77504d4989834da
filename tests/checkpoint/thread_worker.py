"""A process that runs turns of one thread, for the kill test (`test_thread_crash`).

`python -m tests.checkpoint.thread_worker DB MARK first` runs turn 1 to the end,
then turn 2, whose `slow` step prints `mid` and sleeps (until the test kills the
process) unless the file MARK exists. `... second` resumes the turn left
unfinished, then runs turn 3 and prints, as JSON, the texts the model was sent.
"""

import sys
from pathlib import Path

import anyio
import orjson

from agentgraph import AgentContext, GraphBuilder, GraphRunner, Message, node
from agentgraph.checkpoint import SQLiteStore, read_thread
from agentgraph.nodes import chat
from agentgraph.testing import ScriptedModel

THREAD = "conversation"


def build(mark: Path, sent: list[list[str]]):
    def reply(request):
        sent.append([m.content for m in request.messages])
        asked = [m.content for m in request.messages if m.role == "user"][-1]
        return f"answer to {asked}"

    think = chat(ScriptedModel(reply, repeat=True), name="think")

    @node(name="slow")
    async def slow(ctx: AgentContext[Message]) -> AgentContext[Message]:
        if ctx.input.content == "answer to turn 2" and not mark.exists():
            print("mid", flush=True)
            await anyio.sleep(60)
        return ctx

    with GraphBuilder("talk") as g:
        g.start.edge_to(think).edge_to(slow).edge_to(g.finish)
    return g.build()


async def main(db: str, mark: str, part: str) -> None:
    sent: list[list[str]] = []
    graph = build(Path(mark), sent)
    runner = GraphRunner()
    async with SQLiteStore(db) as store:
        if part == "first":
            await runner.run(graph, AgentContext("turn 1"), store=store, thread_id=THREAD)
            print("turn 1 done", flush=True)
            await runner.run(graph, AgentContext("turn 2"), store=store, thread_id=THREAD)
            return
        thread = await read_thread(store, THREAD)
        unfinished = thread.runs[-1][0]
        assert unfinished != thread.head, "the killed turn did not finish"
        await runner.resume(graph, unfinished, store)
        await runner.run(graph, AgentContext("turn 3"), store=store, thread_id=THREAD)
    sys.stdout.write(orjson.dumps(sent).decode() + "\n")


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
