"""An approval flow on Temporal: the agent wants to issue a refund, a person approves, it finishes.

The run is a Temporal workflow: its model and tool calls are activities,
and the refund (a tool that is not safe to repeat) waits for approval with
`rt.interrupt` inside `react_agent(..., approve=[...])`. While it waits, the
worker is stopped and a new one started, as after a deploy or a lost machine;
the answer then reaches the run on the new worker, which goes on without
calling the model again for the turn already made.

Offline: a scripted model plays the LLM. Set `TEMPORAL_ADDRESS` to use a
running Temporal server; otherwise a dev server is started from the binary of
the `temporal-server` extra and stopped at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from agentgraph import AgentContext, tool
from agentgraph.nodes import react_agent
from agentgraph.temporal import TemporalRunner, dev_server_path, worker
from agentgraph.testing import ScriptedModel

QUEUE = "approvals"


@tool(retry_safe=False)
def refund(order: str, amount: float) -> str:
    """Refund an order (money moves: never repeated)."""
    return f"refunded {amount:.2f} on order {order}"


def decide(request):
    """The scripted model: refund the order, then report what the tool said."""
    answers = [m for m in request.messages if m.role == "tool"]
    if not answers:
        return ScriptedModel.tool_call("refund", order="A-1042", amount=59.90)
    return f"Done: {answers[-1].content}."


model = ScriptedModel(decide, repeat=True, name="support-model")
agent = react_agent(model, [refund], approve=["refund"], name="support_agent")


@contextlib.asynccontextmanager
async def temporal() -> AsyncIterator[Client]:
    address = os.environ.get("TEMPORAL_ADDRESS")
    if address:
        yield await Client.connect(address)
        return
    print("starting a Temporal dev server (in memory, on loopback)")
    async with await WorkflowEnvironment.start_local(
        dev_server_existing_path=dev_server_path(), dev_server_log_level="error"
    ) as env:
        yield env.client
    print("dev server stopped")


def a_worker(client: Client):
    return worker(client, task_queue=QUEUE, graphs=[agent], models=[model], tools=[refund])


async def main() -> None:
    async with temporal() as client:
        runner = TemporalRunner(client, task_queue=QUEUE)
        async with a_worker(client):
            run = await runner.start(
                agent, AgentContext("Please refund order A-1042."), run_id=f"refund-{uuid.uuid4()}"
            )
            print(f"run {run.run_id} started")
            state = await run.asked()
        call = state.question
        print(f"waiting for approval at step {state.step}: {call.name}({call.arguments})")
        print("worker stopped; a new worker takes over while the run waits")
        async with a_worker(client):
            await run.answer(True)  # a person approves
            print("approved")
            out = await run.result()
        print(f"answer: {out.input}")
        print(f"model calls: {len(model.requests)} (one per turn, none repeated)")


if __name__ == "__main__":
    asyncio.run(main())
