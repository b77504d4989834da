"""A worker process for the killed-worker test.

`python -m tests.temporal.worker_proc ADDRESS QUEUE FOLDER`

Prints `ready` once it polls; runs until it is killed.
"""

import asyncio
import sys
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

from agentgraph.temporal import ActivityPolicy, worker
from tests.temporal.graphs import agent


async def main(address: str, queue: str, folder: Path) -> None:
    graph, model, tools = agent(folder)
    client = await Client.connect(address)
    policy = ActivityPolicy(heartbeat=1.0, initial=0.2, timeout=60.0)
    async with worker(
        client,
        task_queue=queue,
        graphs=[graph],
        models=[model],
        tools=tools,
        policy=policy,
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
    ):
        print("ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
