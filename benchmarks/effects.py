"""The cost of a step's effects: what a model call, a stream, tools, guards and a journal add.

Each case runs one graph of `STEPS` steps, each step making its effect, and reports
the best µs per step of several runs in this process (the least disturbed by load).
Only public API that older trees have too, so `before_after.py --effects` can run
it against an earlier revision.

Usage::

    python benchmarks/effects.py --case model   # one case, one JSON line
    python benchmarks/effects.py --quick        # every case, printed
"""

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from _common import case_parser

from agentgraph import AgentContext, GraphBuilder, GraphRunner, node, tool
from agentgraph.llm import ChatRequest, Message, ToolCall
from agentgraph.testing import ScriptedModel

CASES = ("plain", "model", "stream", "tools", "guarded", "sqlite")
STEPS = 400


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _loop(body: Any) -> Any:
    """A graph running `body` STEPS times (the loop the engine benchmark uses)."""
    with GraphBuilder[int, int]("effects") as g:
        g.start.edge_to(body)
        body.edge_to(lambda ctx: body if ctx.input < STEPS else g.finish, targets=(body, g.finish))
    return g.build()


MODEL = ScriptedModel("an answer", repeat=True)
REQUEST = ChatRequest(messages=(Message.user("hi"),))
CALLS = (ToolCall("c1", "add", {"a": 1, "b": 2}),)


@node
def plain_step(ctx: AgentContext[int]) -> AgentContext[int]:
    return ctx.with_input(ctx.input + 1)


@node
async def model_step(ctx: AgentContext[int], rt: Any) -> AgentContext[int]:
    await rt.call_model(MODEL, REQUEST)
    return ctx.with_input(ctx.input + 1)


@node
async def stream_step(ctx: AgentContext[int], rt: Any) -> AgentContext[int]:
    async with rt.stream_model(MODEL, REQUEST) as events:
        async for _ in events:
            pass
    return ctx.with_input(ctx.input + 1)


@node
async def tools_step(ctx: AgentContext[int], rt: Any) -> AgentContext[int]:
    await rt.call_tools([add], CALLS)
    return ctx.with_input(ctx.input + 1)


def _guarded() -> GraphRunner:
    from agentgraph.guards import Decision, Guards, guard

    @guard(stages=["input", "output"], rewrites=False)
    def allow(stage: str, value: Any) -> Decision:
        return Decision.allow()

    return GraphRunner(guards=Guards(input=[allow], output=[allow]))


def _graph(case: str) -> tuple[Any, GraphRunner, dict[str, Any]]:
    steps = {
        "plain": plain_step,
        "model": model_step,
        "guarded": model_step,
        "sqlite": model_step,
        "stream": stream_step,
        "tools": tools_step,
    }
    if case not in steps:
        raise ValueError(f"unknown case {case!r}; known: {', '.join(CASES)}")
    runner = _guarded() if case == "guarded" else GraphRunner()
    extra: dict[str, Any] = {}
    if case == "sqlite":
        from agentgraph.checkpoint import SQLiteStore

        extra["store"] = SQLiteStore(Path(tempfile.mkdtemp()) / "runs.db")
    return _loop(steps[case]), runner, extra


def run_case(case: str, *, quick: bool) -> dict[str, Any]:
    graph, runner, extra = _graph(case)
    repeats = 3 if quick else 7
    times: list[float] = []

    async def main() -> None:
        for i in range(repeats):
            more = dict(extra)
            if "store" in more:
                more["run_id"] = f"run-{i}"
            started = time.perf_counter()
            out = await runner.run(graph, AgentContext(0), **more)
            times.append(time.perf_counter() - started)
            assert out.input == STEPS

    anyio.run(main)
    best = min(times[1:] or times)  # the first run warms caches up
    return {"case": case, "us_per_step": best / STEPS * 1e6}


def main(argv: list[str] | None = None) -> None:
    args = case_parser((__doc__ or "").splitlines()[0], CASES).parse_args(argv)
    if args.case:
        print(json.dumps(run_case(args.case, quick=args.quick)), flush=True)
        return
    for case in CASES:
        print(json.dumps(run_case(case, quick=args.quick)), file=sys.stdout, flush=True)


if __name__ == "__main__":
    main()
