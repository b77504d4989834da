"""LLM path: many concurrent ReAct agent runs against the loopback fake provider.

Each run asks "What is (a + b) * c?" and takes two tool turns (`add`, then `multiply`)
before the final answer: three chat-completion requests. The fake provider answers every
request after a fixed delay, deciding from the request's messages alone, so every client
sends the same conversation and must end with the same answer. The contenders make the
same requests with the same HTTP client settings:

- agentgraph: `react_agent` over `OpenAIModel`, run with `GraphRunner`;
- openai: the official SDK's `AsyncOpenAI` in a hand-written tool loop;
- httpx: bare `httpx.AsyncClient` with hand-built JSON bodies (orjson) and parsing;
- openai-httpx2: the SDK again, on a client of its own HTTP library (httpx2);
- agentgraph-responses and openai-responses: the same task over the Responses API
  (`OpenAIResponsesModel` against `client.responses.create`), in ``_llm_path_responses.py``;
- an MCP tool call against the SDK's `mcp.Client` and `ClientSession` (a stdio server):
  ``--section extra`` also runs ``_llm_path_mcp.py``, which writes a section of its own.

The fake server runs in its own process and each contender in another one, so the CPU
time (`time.process_time`) and peak RSS (`ru_maxrss`) of a contender are its own.

Every contender gets one client whose transport spreads the requests over many small
connection pools. On each request it starts or finishes, httpcore's pool walks every
connection it holds (probing each idle one's socket) and offers every waiting request the
same first idle connection, so requests that arrive together go round again; with one pool
of 1,000 connections that work, not the libraries measured, decides the figures. Pools of
ten connections keep it small while every connection stays alive.

Usage::

    python benchmarks/llm_path.py            # full run; writes its section of RESULTS.md
    python benchmarks/llm_path.py --quick    # 100 runs per batch; prints the section only
    python benchmarks/llm_path.py --section extra   # the Responses (and MCP) rows and the
                                                    # SDK they compare with, in their own section

The task (questions, tools, the fake model) lives in ``_llm_path_task.py``, the HTTP
client in ``_llm_path_pool.py``, and the section is rendered in ``_llm_path_report.py``.
"""

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
from _common import (
    ChildFailed,
    load_average,
    measure_each,
    peak_rss_mib,
    publish,
    run_child,
    section_parser,
)
from _common import replace_section as replace_section  # re-exported: the section writer
from _llm_path_pool import Pool, httpx_client
from _llm_path_report import HEADING as HEADING  # re-exported: the section's heading
from _llm_path_report import render_section
from _llm_path_report import summarize as summarize  # re-exported: per-contender figures
from _llm_path_responses import CONTENDERS as RESPONSES_CONTENDERS
from _llm_path_task import (
    API_KEY,
    IMPLS,
    MAX_TURNS,
    MODEL,
    REQUESTS_PER_RUN,
    SYSTEM_PROMPT,
    TOOL_PARAMS,
    agentgraph_run_once,
    expected_answer,
    question,
    serve,
)
from _llm_path_task import respond as respond  # re-exported: the fake model

from agentgraph.llm import OpenAIModel, ProviderRetry

RunOnce = Callable[[int], Awaitable[tuple[str, int]]]
"""Runs the agent on question `i`; returns the final answer and the requests it made."""


@dataclass(frozen=True)
class Sizes:
    """How much work a contender does: `batches` measured batches after `warmup_runs`."""

    runs: int = 1_000
    batches: int = 3
    warmup_runs: int = 1_000
    delay: float = 0.05


FULL = Sizes()
QUICK = Sizes(runs=100, batches=2, warmup_runs=100)


# -- the contenders ----------------------------------------------------------------------


async def agentgraph_contender(url: str, pool: Pool, stack: AsyncExitStack) -> RunOnce:
    client = await stack.enter_async_context(httpx_client(pool))
    model = OpenAIModel(
        MODEL,
        base_url=url,
        api_key=API_KEY,
        http_client=client,
        retry=ProviderRetry(max_retries=0),
    )
    return agentgraph_run_once(model)


async def openai_contender(
    url: str, pool: Pool, stack: AsyncExitStack, *, native: bool = False
) -> RunOnce:
    import openai

    module: Any = httpx
    if native:  # the SDK's own HTTP library, with the same settings
        import httpx2

        module = httpx2
    client = openai.AsyncOpenAI(
        base_url=url,
        api_key=API_KEY,
        http_client=httpx_client(pool, module),
        max_retries=0,
        # Given explicitly: the SDK sends its own default (600 s) otherwise.
        timeout=module.Timeout(pool.timeout, connect=pool.connect_timeout),
    )
    stack.push_async_callback(client.close)

    async def run_once(i: int) -> tuple[str, int]:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question(i)},
        ]
        for turn in range(1, MAX_TURNS + 2):
            completion = await client.chat.completions.create(
                model=MODEL, messages=messages, tools=TOOL_PARAMS
            )
            message = completion.choices[0].message
            if not message.tool_calls:
                return message.content or "", turn
            messages.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.function.name,
                                "arguments": call.function.arguments,
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
            for call in message.tool_calls:
                value = await IMPLS[call.function.name](**json.loads(call.function.arguments))
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": json.dumps(value)}
                )
        raise RuntimeError("the model never stopped calling tools")

    return run_once


async def httpx_contender(url: str, pool: Pool, stack: AsyncExitStack) -> RunOnce:
    client = await stack.enter_async_context(httpx_client(pool))
    endpoint = url + "/chat/completions"
    headers = {
        "authorization": f"Bearer {API_KEY}",
        "accept": "application/json",
        "content-type": "application/json",
    }

    async def run_once(i: int) -> tuple[str, int]:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question(i)},
        ]
        for turn in range(1, MAX_TURNS + 2):
            body = orjson.dumps({"model": MODEL, "messages": messages, "tools": TOOL_PARAMS})
            response = await client.post(endpoint, content=body, headers=headers)
            if response.status_code != 200:
                raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
            message = orjson.loads(response.content)["choices"][0]["message"]
            calls = message.get("tool_calls")
            if not calls:
                return message.get("content") or "", turn
            messages.append(
                {
                    "role": "assistant",
                    "content": message.get("content"),
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {
                                "name": c["function"]["name"],
                                "arguments": c["function"]["arguments"],
                            },
                        }
                        for c in calls
                    ],
                }
            )
            for call in calls:
                function = call["function"]
                value = await IMPLS[function["name"]](**orjson.loads(function["arguments"]))
                content = orjson.dumps(value).decode()
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        raise RuntimeError("the model never stopped calling tools")

    return run_once


async def openai_httpx2_contender(url: str, pool: Pool, stack: AsyncExitStack) -> RunOnce:
    return await openai_contender(url, pool, stack, native=True)


Contender = Callable[[str, Pool, AsyncExitStack], Awaitable[RunOnce]]
CONTENDERS: dict[str, Contender] = {
    "agentgraph": agentgraph_contender,
    "openai": openai_contender,
    "httpx": httpx_contender,
    "openai-httpx2": openai_httpx2_contender,
    **RESPONSES_CONTENDERS,
}
EXTRA = ["openai-responses", "agentgraph-responses"]
"""What `--section extra` measures: the rows past the chat-completions table."""

# -- measuring one contender (in its own process) ---------------------------------------


async def run_batch(run_once: RunOnce, first: int, runs: int) -> dict[str, Any]:
    """Start `runs` runs at once (questions `first`, `first + 1`, ...) and wait for all."""
    outcomes: list[tuple[str, int] | Exception | None] = [None] * runs

    async def one(index: int) -> None:
        try:
            outcomes[index] = await run_once(first + index)
        except Exception as exc:
            outcomes[index] = exc

    wall, cpu = time.perf_counter(), time.process_time()
    async with asyncio.TaskGroup() as group:
        for index in range(runs):
            group.create_task(one(index))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    errors = [o for o in outcomes if isinstance(o, Exception)]
    answers = [(i, o) for i, o in enumerate(outcomes) if isinstance(o, tuple)]
    wrong = sum(
        1
        for i, (text, requests) in answers
        if text != expected_answer(first + i) or requests != REQUESTS_PER_RUN
    )
    return {
        "runs": runs,
        "wall_s": wall,
        "cpu_s": cpu,
        "completed": len(answers),
        "errors": len(errors),
        "wrong": wrong,
        "requests": sum(n for _, (_, n) in answers),
        "first_error": f"{type(errors[0]).__name__}: {errors[0]}"[:300] if errors else None,
    }


async def measure(name: str, url: str, sizes: Sizes, pool: Pool) -> dict[str, Any]:
    """A warm-up batch, then `sizes.batches` measured batches of one contender."""
    async with AsyncExitStack() as stack:
        run_once = await CONTENDERS[name](url, pool, stack)
        ready_rss = peak_rss_mib()
        warmup = await run_batch(run_once, 0, sizes.warmup_runs) if sizes.warmup_runs else None
        batches = []
        for index in range(sizes.batches):
            first = sizes.warmup_runs + index * sizes.runs
            batches.append(await run_batch(run_once, first, sizes.runs))
    return {
        "contender": name,
        "warmup": warmup,
        "batches": batches,
        "ready_rss_mib": ready_rss,
        "peak_rss_mib": peak_rss_mib(),
    }


# -- orchestration: the fake server's process and one process per contender ------------------------


class ServerProcess:
    """The fake provider in a child process, driven over its stdin and stdout."""

    def __init__(self, delay: float) -> None:
        command = [sys.executable, str(Path(__file__).resolve()), "--serve", "--delay", str(delay)]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            self.url: str = self._read()["url"]
        except Exception:
            self.close()
            raise

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("the fake server process ended unexpectedly")
        data: dict[str, Any] = json.loads(line)
        return data

    def ask(self, command: str) -> dict[str, Any]:
        assert self._process.stdin is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()
        return self._read()

    def close(self) -> None:
        """End the server: it stops when its stdin closes."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.close()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        finally:
            self._process.stdout.close()


def run_isolated(name: str, url: str, sizes: Sizes, pool: Pool) -> dict[str, Any]:
    """Measure one contender in a fresh process; an `error` entry if it failed."""
    config = json.dumps({"sizes": asdict(sizes), "pool": asdict(pool)})
    args = ["--contender", name, "--url", url, "--config", config]
    try:
        result: dict[str, Any] = run_child(Path(__file__).resolve(), *args, timeout=600)
    except ChildFailed as exc:
        return {"contender": name, "error": exc.line}
    return result


def run_all(names: list[str], sizes: Sizes, pool: Pool) -> list[dict[str, Any]]:
    """Every contender against one fake server; server-side counts added to each result."""
    server = ServerProcess(sizes.delay)

    def against_server(name: str) -> dict[str, Any]:
        server.ask("reset")
        before = server.ask("stats")
        result = run_isolated(name, server.url, sizes, pool)
        after = server.ask("stats")
        result["server"] = {
            "requests": after["requests"],
            "cpu_s": after["cpu_s"] - before["cpu_s"],
        }
        return result

    try:
        return measure_each(names, against_server)
    finally:
        server.close()


def main(argv: list[str] | None = None) -> None:
    parser = section_parser(__doc__, "100 runs per batch; print only")
    parser.add_argument("--contenders", help="comma-separated (default: all)")
    parser.add_argument(
        "--section",
        choices=("main", "extra"),
        default="main",
        help="extra: only the Responses/MCP rows and their SDK peers, in a section of their own",
    )
    parser.add_argument("--runs", type=int, help="concurrent runs per batch")
    parser.add_argument("--batches", type=int, help="measured batches per contender")
    parser.add_argument("--shards", type=int, default=Pool.shards, help="connection pools")
    parser.add_argument("--connections", type=int, default=Pool.connections, help="per pool")
    parser.add_argument("--keepalive", type=int, help="kept-alive connections per pool")
    parser.add_argument("--json", action="store_true", help="print the raw results as JSON")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--delay", type=float, default=FULL.delay, help=argparse.SUPPRESS)
    parser.add_argument("--contender", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.delay)
        return
    if args.contender:
        config = json.loads(args.config)
        sizes, pool = Sizes(**config["sizes"]), Pool(**config["pool"])
        print(json.dumps(asyncio.run(measure(args.contender, args.url, sizes, pool))))
        return
    extra = args.section == "extra"
    default = EXTRA if extra else list(CONTENDERS)
    names = args.contenders.split(",") if args.contenders else default
    unknown = sorted(set(names) - set(CONTENDERS))
    if unknown:
        parser.error(f"unknown contenders {unknown}; choose from {list(CONTENDERS)}")
    sizes = QUICK if args.quick else FULL
    if args.runs or args.batches:
        runs = args.runs or sizes.runs
        sizes = Sizes(runs=runs, batches=args.batches or sizes.batches, warmup_runs=runs)
    pool = Pool(shards=args.shards, connections=args.connections, keepalive=args.keepalive)
    before = load_average()
    results = run_all(names, sizes, pool)
    if args.json:
        print(json.dumps(results, indent=1))
    section = render_section(
        results, sizes=sizes, pool=pool, load=(before, load_average()), extra=extra
    )
    publish(section, output=args.output, quick=args.quick)
    if extra and not args.contenders:
        # An MCP tool call against the SDK's clients: a protocol of its own (a stdio
        # server), so its rows are measured by their module and get their own section.
        import _llm_path_mcp

        _llm_path_mcp.main(["--quick"] if args.quick else [])


if __name__ == "__main__":
    main()
