"""LLM path profile: where agentgraph's client CPU per request goes, beside bare httpx.

The LLM path's task (``_llm_path_task.py``: two tool turns and an answer, three
chat-completion requests per run) is run by `react_agent` over `OpenAIModel` and by the
bare-httpx contender of ``llm_path.py`` (hand-built JSON, the same connection pools),
each in a fresh interpreter, against the loopback fake server in a process of its own
answering at once. Only the client's thread is measured (`time.thread_time`), so the
load on the machine is not charged to it.

Two measurements per contender:

- **CPU per request**: thread CPU over a batch of concurrent runs divided by the model
  requests, with no profiler; the contenders take turns batch by batch and the median
  is reported. With ``--before REV`` agentgraph at that revision (checked out into a
  temporary worktree) takes its turn as well, so before and after share the machine.
- **Profile**: the same batch under `cProfile` with `time.thread_time_ns` as the timer,
  own time (tottime) summed by area and the agentgraph functions with the most
  inclusive time, per request. The profiler's own cost inflates these figures; compare
  them with each other, not with the unprofiled ones.

Usage::

    python benchmarks/llm_profile.py                    # writes its section of RESULTS.md
    python benchmarks/llm_profile.py --quick            # fewer runs; prints only
    python benchmarks/llm_profile.py --before 4c5ab3e   # adds the earlier revision's row
"""

import argparse
import asyncio
import cProfile
import gc
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import orjson
from _common import ChildFailed, load_average, publish, python, run_child, section_parser, versions
from _llm_path_pool import Pool
from _llm_path_task import (
    MAX_TURNS,
    SYSTEM_PROMPT,
    TOOLS,
    expected_answer,
    question,
    respond,
)
from llm_path import ServerProcess, agentgraph_contender, httpx_contender

import agentgraph
from agentgraph import AgentContext, GraphRunner, RetryPolicy
from agentgraph.llm import ChatResponse, Message, OpenAIModel, ToolCall, Usage
from agentgraph.llm._http import dumps
from agentgraph.llm._openai_wire import openai_tools, parse_completion
from agentgraph.nodes import build_request, react_agent

HERE = Path(__file__).resolve().parent
HEADING = "## LLM path profile"
PACKAGE = str(Path(agentgraph.__file__).resolve().parent.parent)
"""Where the agentgraph measured here was loaded from."""
CONTENDERS = ("httpx", "agentgraph")
NOT_PAID = ("of which", "events, before")
"""Rows of the parts table that are not paid on top of the others per request."""

# Areas of own time, first match wins: (label, substrings of the code's file name).
AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("agentgraph: provider client (`agentgraph/llm`)", ("agentgraph/llm/",)),
    ("agentgraph: agent and chat nodes (`agentgraph/nodes`)", ("agentgraph/nodes/",)),
    ("agentgraph: tools (`agentgraph/tools`)", ("agentgraph/tools/",)),
    ("agentgraph: engine, context, events (rest of `agentgraph`)", ("agentgraph/",)),
    ("benchmark task (the contender's loop, the tools)", ("benchmarks/",)),
    ("httpx", ("/httpx/",)),
    ("httpcore, h11", ("/httpcore/", "/h11/")),
    ("anyio", ("/anyio/",)),
    ("asyncio", ("/asyncio/",)),
)


def area(filename: str, function: str) -> str:
    """The area a profiled function's own time is charged to."""
    if filename == "~":  # built-ins: the JSON codecs are worth naming
        if "orjson" in function:
            return "orjson"
        return "built-in functions"
    for label, needles in AREAS:
        if any(needle in filename for needle in needles):
            return label
    return "other Python"


async def _contender(name: str, url: str, stack: AsyncExitStack) -> Any:
    pool = Pool(shards=5, connections=10)
    make = agentgraph_contender if name.startswith("agentgraph") else httpx_contender
    return await make(url, pool, stack)


async def _batch(run_once: Any, first: int, runs: int) -> int:
    requests = 0
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(run_once(i)) for i in range(first, first + runs)]
    for i, task in zip(range(first, first + runs), tasks, strict=True):
        answer, made = task.result()
        if answer != expected_answer(i):
            raise RuntimeError(f"run {i} answered {answer!r}")
        requests += made
    return requests


async def _child(name: str, url: str, runs: int, profile: bool) -> dict[str, Any]:
    async with AsyncExitStack() as stack:
        run_once = await _contender(name, url, stack)
        await _batch(run_once, 0, runs)  # warm-up: connections, caches, imports
        gc.collect()
        profiler = cProfile.Profile(time.thread_time_ns, 1e-9) if profile else None
        start = time.thread_time()
        if profiler is not None:
            profiler.enable()
        requests = await _batch(run_once, runs, runs)
        if profiler is not None:
            profiler.disable()
        cpu = time.thread_time() - start
    result: dict[str, Any] = {
        "requests": requests,
        "cpu_ms": cpu * 1e3 / requests,
        "package": PACKAGE,
    }
    if profiler is not None:
        result.update(_summary(pstats.Stats(profiler), requests))
    return result


def _summary(stats: pstats.Stats, requests: int) -> dict[str, Any]:
    """Own time by area and the agentgraph functions with most inclusive time, µs/request."""
    areas: dict[str, float] = {}
    calls = 0
    top: list[tuple[float, float, int, str]] = []
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, line, function), (_, ncalls, tottime, cumtime, _) in raw.items():
        label = area(filename, function)
        areas[label] = areas.get(label, 0.0) + tottime * 1e6 / requests
        calls += ncalls
        if "agentgraph/" in filename:
            short = filename[filename.rindex("agentgraph/") :]
            top.append(
                (
                    cumtime * 1e6 / requests,
                    tottime * 1e6 / requests,
                    ncalls,
                    f"{short}:{line} {function}",
                )
            )
    top.sort(reverse=True)
    return {
        "areas": areas,
        "calls": calls / requests,
        "top": [
            {"cum_us": c, "own_us": o, "calls": n / requests, "where": w} for c, o, n, w in top[:25]
        ],
    }


# -- the parts of agentgraph's path, unprofiled ----------------------------------------------


class _LocalModel:
    """The fake model's answers without HTTP: what is left is the engine's and the agent's."""

    name = "fake-model"
    provider = "openai"
    base_url = "http://127.0.0.1/v1"
    supports_output_schema = False

    async def request(self, request: Any) -> Any:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        answer = respond("openai", SimpleNamespace(body={"messages": messages}))
        if isinstance(answer, str):
            answer = Message.assistant(answer)
        return ChatResponse(answer, finish_reason="stop", usage=Usage(requests=1))

    def stream(self, request: Any) -> Any:
        raise NotImplementedError("the profile sends complete requests only")


def _per_call_us(fn: Any, number: int) -> float:
    """Thread CPU µs per call of `fn`: the least of five repeats."""
    best = float("inf")
    for _ in range(5):
        start = time.thread_time()
        for _ in range(number):
            fn()
        best = min(best, time.thread_time() - start)
    return best * 1e6 / number


async def _components(number: int) -> dict[str, Any]:
    """µs per request of each part of agentgraph's path and of its bare-httpx counterpart."""
    specs = tuple(t.spec for t in TOOLS)
    model = OpenAIModel("fake-model", base_url="http://127.0.0.1:9/v1", api_key="bench-key")
    ctx = AgentContext(question(1), system_prompt=SYSTEM_PROMPT).append(Message.user(question(1)))
    for call_id, name, args, result in (
        ("c1", "add", {"a": 1, "b": 7}, "8"),
        ("c2", "multiply", {"a": 8, "b": 3}, "24"),
    ):
        call = ToolCall(call_id, name, args)
        ctx = ctx.append(Message.assistant(tool_calls=(call,))).append(
            Message.tool(call_id, result)
        )
    request = build_request(ctx, tools=specs)
    body = model.build_body(request)
    plain = orjson.loads(dumps(body))
    answer = orjson.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "fake-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "(1 + 7) * 3 = 24"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 60, "completion_tokens": 9, "total_tokens": 69},
        }
    )
    data = orjson.loads(answer)
    response = parse_completion(data, provider="openai", model="fake-model")
    url = "http://127.0.0.1:9/v1"
    rows: list[tuple[str, float, float]] = [
        (
            "request building: `build_request` (the chat node: system prompt, history, tools)",
            _per_call_us(lambda: build_request(ctx, tools=specs), number),
            0.0,
        ),
        (
            "request building: `OpenAIModel.build_body` (messages to wire dicts)",
            _per_call_us(lambda: model.build_body(request), number),
            0.0,
        ),
        (
            "of which tool schemas: `openai_tools` (two tools)",
            _per_call_us(lambda: openai_tools(specs), number),
            0.0,
        ),
        (
            "body encoding: `dumps` (read-only schemas through `default=`) / `orjson.dumps`",
            _per_call_us(lambda: dumps(body), number),
            _per_call_us(lambda: orjson.dumps(plain), number),
        ),
        (
            "response assembly: `parse_completion` / indexing the decoded answer",
            _per_call_us(lambda: parse_completion(data, provider="openai", model="x"), number),
            _per_call_us(lambda: data["choices"][0]["message"].get("tool_calls"), number),
        ),
        (
            "context: `append(answer).add_usage(...).with_input(answer)`",
            _per_call_us(
                lambda: (
                    ctx.append(response.message)
                    .add_usage(response.usage)
                    .with_input(response.message)
                ),
                number,
            ),
            0.0,
        ),
        (
            "events, before they were built only for a listener: the display URL's parse",
            _per_call_us(
                lambda: str(httpx.URL(url).copy_with(username=None, password=None)),
                number // 4,
            ),
            0.0,
        ),
    ]
    local = _LocalModel()
    agent = react_agent(local, TOOLS, system_prompt=SYSTEM_PROMPT, max_turns=MAX_TURNS)
    runner = GraphRunner(retry=RetryPolicy(attempts=1))
    runs = max(number // 20, 50)
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        for i in range(runs):
            await runner.run(agent, AgentContext(question(i)))
        best = min(best, time.thread_time() - start)
    engine = best * 1e6 / (runs * 3)
    start = time.thread_time()
    for _ in range(runs * 3):
        await local.request(request)
    local_us = (time.thread_time() - start) * 1e6 / (runs * 3)
    rows.append(
        (
            "engine, agent and tool turn: `react_agent` over an in-process model, "
            "less the model's own time",
            engine - local_us,
            0.0,
        )
    )
    return {"components": rows}


# -- the parent: turns, medians, the section -----------------------------------------------


def _measure(
    name: str, url: str, runs: int, tree: Path | None, *, profile: bool = False
) -> dict[str, Any]:
    previous = os.environ.get("PYTHONPATH")
    if tree is not None:
        os.environ["PYTHONPATH"] = str(tree)
    try:
        args = ["--child", name, "--url", url, "--runs", str(runs)]
        result: dict[str, Any] = run_child(
            HERE / "llm_profile.py", *args, *(["--profile"] if profile else []), timeout=600
        )
        if tree is not None and Path(result["package"]) != tree.resolve():
            raise RuntimeError(f"{name} loaded agentgraph from {result['package']}, not {tree}")
        return result
    finally:
        if tree is not None:
            if previous is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = previous


def render(
    cpu: dict[str, list[float]],
    profiles: dict[str, dict[str, Any]],
    parts: list[tuple[str, float, float]],
    *,
    runs: int,
    rounds: int,
    before: str | None,
    load: tuple[float, float],
) -> str:
    base = statistics.median(cpu["httpx"])
    labels = {
        "httpx": "bare httpx (hand-built JSON)",
        "agentgraph": "agentgraph (`react_agent`, `OpenAIModel`)",
        "agentgraph-before": f"agentgraph at `{before}` (before)",
    }
    lines = [
        HEADING,
        "",
        f"Client CPU of the LLM path's task ({runs} concurrent ReAct runs, three chat-completion "
        "requests each) against the loopback fake provider in a process of its own, answering "
        "at once; CPU is the client thread's (`time.thread_time`). Produced by "
        f"`python benchmarks/llm_profile.py{f' --before {before}' if before else ''}`; each "
        "contender runs in a fresh interpreter, after a warm-up batch, taking turns with the "
        f"others; the median of {rounds} turns. The same connection pools for both (five "
        "pools of ten connections, as `llm_path.py` arranges them).",
        "",
        "| Client | CPU µs/request | vs bare httpx | turns (µs/request) |",
        "|---|--:|--:|---|",
    ]
    for name in cpu:
        median = statistics.median(cpu[name])
        turns = ", ".join(f"{v * 1e3:.0f}" for v in cpu[name])
        lines.append(f"| {labels[name]} | {median * 1e3:.0f} | {median / base:.2f}x | {turns} |")
    lines += [
        "",
        "### agentgraph's own work per request (unprofiled, µs/request)",
        "",
        "Each part timed on its own in a loop (thread CPU, least of five repeats) with the "
        "third request of a run (system prompt, question, two tool turns); the bare-httpx "
        "column is the same step of the hand-written loop, where it has one. Encoding and "
        "decoding JSON are in both paths; sending is the same httpx call.",
        "",
        "| Part | agentgraph | bare httpx |",
        "|---|--:|--:|",
    ]
    for label, ours_us, bare_us in parts:
        bare_cell = f"{bare_us:.2f}" if bare_us else "-"
        lines.append(f"| {label} | {ours_us:.2f} | {bare_cell} |")
    paid = [(label, o - b) for label, o, b in parts if not label.startswith(NOT_PAID)]
    engine = sum(extra for label, extra in paid if label.startswith("engine"))
    difference = (statistics.median(cpu["agentgraph"]) - base) * 1e3
    lines += [
        "",
        f"Paid on every request now: {sum(extra for _, extra in paid):.0f} µs of agentgraph's "
        f"own work beyond the bare loop's, {engine:.0f} µs of it in the engine, the agent's "
        "nodes and the tool turn (the rows above less the `of which` and `before` rows); the "
        f"difference measured end to end in the first table is {difference:.0f} µs. Model and "
        "tool events are built only when the run has a listener (`GraphRunner.stream`, a "
        "trace sink), and the display URL they carry is parsed once per `base_url`.",
    ]
    ours, bare = profiles["agentgraph"], profiles["httpx"]
    lines += [
        "",
        "### Own time by area (profiled, µs/request)",
        "",
        "`cProfile` with `time.thread_time_ns` as its timer over one batch; own time "
        "(tottime) of every function summed by where its code lives. The profiler's cost "
        "per call inflates these figures, most where calls are many and short.",
        "",
        "| Area | agentgraph | bare httpx | extra |",
        "|---|--:|--:|--:|",
    ]
    names = sorted(
        set(ours["areas"]) | set(bare["areas"]),
        key=lambda a: -(ours["areas"].get(a, 0.0) - bare["areas"].get(a, 0.0)),
    )
    for name in names:
        a, b = ours["areas"].get(name, 0.0), bare["areas"].get(name, 0.0)
        lines.append(f"| {name} | {a:.0f} | {b:.0f} | {a - b:+.0f} |")
    total_a, total_b = sum(ours["areas"].values()), sum(bare["areas"].values())
    lines += [
        f"| **total** | **{total_a:.0f}** | **{total_b:.0f}** | **{total_a - total_b:+.0f}** |",
        f"| Python function calls per request | {ours['calls']:.0f} | {bare['calls']:.0f} | "
        f"{ours['calls'] - bare['calls']:+.0f} |",
        "",
        "### agentgraph functions by inclusive time (profiled, µs/request)",
        "",
        "| Function | inclusive | own | calls/request |",
        "|---|--:|--:|--:|",
    ]
    for row in ours["top"][:20]:
        lines.append(
            f"| `{row['where']}` | {row['cum_us']:.0f} | {row['own_us']:.0f} | {row['calls']:.1f} |"
        )
    lines += [
        "",
        "### Machine",
        "",
        f"- {python()}; {versions('httpx', 'httpcore', 'orjson')}",
        f"- 1-minute load average {load[0]:.2f} before the run, {load[1]:.2f} after",
    ]
    return "\n".join(lines) + "\n"


def measure_all(
    runs: int, rounds: int, before: str | None, *, quick: bool = False
) -> tuple[dict[str, list[float]], dict[str, dict[str, Any]], list[tuple[str, float, float]]]:
    """CPU per request by turns, the two profiles and the parts, all in child processes."""
    server = ServerProcess(0.0)
    try:
        with _trees(before) as trees:
            cpu: dict[str, list[float]] = {name: [] for name in trees}
            for _ in range(rounds):
                for name, tree in trees.items():
                    cpu[name].append(_measure(name, server.url, runs, tree)["cpu_ms"])
            profiles = {
                name: _measure(name, server.url, runs, None, profile=True) for name in CONTENDERS
            }
    finally:
        server.close()
    args = ["--child", "components", *(["--quick"] if quick else [])]
    parts = run_child(HERE / "llm_profile.py", *args, timeout=600)["components"]
    return cpu, profiles, [(label, ours, bare) for label, ours, bare in parts]


def main(argv: list[str] | None = None) -> None:
    parser = section_parser(__doc__, "fewer runs; print only")
    parser.add_argument("--before", help="also measure agentgraph at this git revision")
    parser.add_argument("--runs", type=int, help="concurrent runs per batch")
    parser.add_argument("--rounds", type=int, help="turns per contender")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    runs = args.runs or (50 if args.quick else 300)
    if args.child == "components":
        print(json_line(asyncio.run(_components(2_000 if args.quick else 20_000))))
        return
    if args.child:
        print(json_line(asyncio.run(_child(args.child, args.url, runs, args.profile))))
        return
    rounds = args.rounds or (3 if args.quick else 9)
    load_before = load_average()
    try:
        cpu, profiles, parts = measure_all(runs, rounds, args.before, quick=args.quick)
    except ChildFailed as failed:
        sys.exit(f"a contender failed: {failed}")
    section = render(
        cpu,
        profiles,
        parts,
        runs=runs,
        rounds=rounds,
        before=args.before,
        load=(load_before, load_average()),
    )
    publish(section, output=args.output, quick=args.quick)


def json_line(value: Any) -> str:
    return json.dumps(value)


@contextmanager
def _trees(before: str | None) -> Iterator[dict[str, Path | None]]:
    """The trees to measure: this one's contenders, and agentgraph at revision `before`.

    The earlier package is exported with `git archive` into a temporary directory (no
    worktree is made); its child processes find it first on ``PYTHONPATH``.
    """
    trees: dict[str, Path | None] = {name: None for name in CONTENDERS}
    if before is None:
        yield trees
        return
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(HERE.parent), "archive", "--format=tar", before, "agentgraph"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        trees["agentgraph-before"] = Path(tmp)
        yield trees


if __name__ == "__main__":
    main()
