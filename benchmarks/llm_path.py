"""LLM path: many concurrent ReAct agent runs against the loopback fake provider.

Each run asks "What is (a + b) * c?" and takes two tool turns (`add`, then `multiply`)
before the final answer: three chat-completion requests. The fake provider answers every
request after a fixed delay, deciding from the request's messages alone, so every client
sends the same conversation and must end with the same answer. The contenders make the
same requests with the same HTTP client settings:

- agentgraph: `react_agent` over `OpenAIModel`, run with `GraphRunner`;
- openai: the official SDK's `AsyncOpenAI` in a hand-written tool loop;
- httpx: bare `httpx.AsyncClient` with hand-built JSON bodies (orjson) and parsing;
- openai-httpx2: the SDK again, on a client of its own HTTP library (httpx2).

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
"""

import argparse
import asyncio
import json
import os
import platform
import re
import resource
import ssl
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import orjson

from agentgraph import AgentContext, GraphRunner, RetryPolicy, tool
from agentgraph.llm import Message, OpenAIModel, ProviderRetry, ToolCall
from agentgraph.nodes import react_agent

HEADING = "## LLM path"
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
MODEL = "fake-model"
API_KEY = "bench-key"
SYSTEM_PROMPT = "You are a careful calculator. Use the tools for every step."
MAX_TURNS = 4
REQUESTS_PER_RUN = 3
QUESTION = re.compile(r"^What is \((\d+) \+ (\d+)\) \* (\d+)\?$")

RunOnce = Callable[[int], Awaitable[tuple[str, int]]]
"""Runs the agent on question `i`; returns the final answer and the requests it made."""


@dataclass(frozen=True)
class Sizes:
    """How much work a contender does: `batches` measured batches after `warmup_runs`."""

    runs: int = 1_000
    batches: int = 3
    warmup_runs: int = 1_000
    delay: float = 0.05


@dataclass(frozen=True)
class Pool:
    """The HTTP client every contender gets: one `AsyncClient` over `shards` small pools.

    Each pool holds up to `connections` HTTP/1.1 connections, all kept alive
    (`keepalive` lower closes the surplus). `shards=1` is a plain client with one pool.
    """

    shards: int = 100
    connections: int = 10
    keepalive: int | None = None
    timeout: float = 60.0
    connect_timeout: float = 10.0

    def limits(self, module: Any) -> Any:
        keepalive = self.connections if self.keepalive is None else self.keepalive
        return module.Limits(max_connections=self.connections, max_keepalive_connections=keepalive)

    def describe(self, module: str = "httpx") -> str:
        keepalive = self.connections if self.keepalive is None else self.keepalive
        limits = (
            f"{module}.Limits(max_connections={self.connections}, "
            f"max_keepalive_connections={keepalive})"
        )
        timeout = f"{module}.Timeout({self.timeout:g}, connect={self.connect_timeout:g})"
        if self.shards == 1:
            return f"one `{module}.AsyncClient(limits={limits}, timeout={timeout})`"
        return (
            f"one `{module}.AsyncClient(transport=..., timeout={timeout})` per contender, "
            f"whose transport sends each request to the one of {self.shards} "
            f"`{module}.AsyncHTTPTransport(limits={limits})` with the fewest requests in flight"
        )


FULL = Sizes()
QUICK = Sizes(runs=100, batches=2, warmup_runs=100)


# -- the task: questions, tools, and the fake model's side -------------------------------


def question(i: int) -> str:
    return f"What is ({i} + 7) * {i % 5 + 2}?"


def expected_answer(i: int) -> str:
    factor = i % 5 + 2
    return f"({i} + 7) * {factor} = {(i + 7) * factor}"


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


TOOLS = (add, multiply)
IMPLS: dict[str, Callable[..., Awaitable[int]]] = {t.name: t.fn for t in TOOLS}


def _plain(value: Any) -> Any:
    """Read-only mappings (tool schemas) as plain dicts, so any JSON encoder takes them."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


# The tool list agentgraph sends, built once from the same specs for the other clients.
TOOL_PARAMS = [
    {
        "type": "function",
        "function": {
            "name": t.spec.name,
            "parameters": _plain(t.spec.parameters),
            "description": t.spec.description,
        },
    }
    for t in TOOLS
]


def respond(provider: str, record: Any) -> Message | str:
    """The fake model: `add`, then `multiply` on its result, then the answer.

    Decided from the request's messages only, so any client that carries the tool
    results back faithfully gets the right answer.
    """
    messages = record.body["messages"]
    user = next(m["content"] for m in messages if m["role"] == "user")
    found = QUESTION.match(user)
    if found is None:
        return f"unexpected question: {user!r}"
    a, b, c = (int(x) for x in found.groups())
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        return Message.assistant(tool_calls=(ToolCall("", "add", {"a": a, "b": b}),))
    if len(results) == 1:
        return Message.assistant(
            tool_calls=(ToolCall("", "multiply", {"a": int(results[0]), "b": c}),)
        )
    return f"({a} + {b}) * {c} = {int(results[1])}"


def serve(delay: float) -> None:
    """The fake server process: prints its URL, then answers `stats` / `reset` on stdin."""
    from agentgraph.testing import FakeServer

    with FakeServer(responder=respond, delay=delay, api_key=API_KEY) as server:
        print(json.dumps({"url": server.openai_url}), flush=True)
        for line in sys.stdin:
            if line.strip() == "reset":
                server.reset()
                print(json.dumps({"ok": True}), flush=True)
            elif line.strip() == "stats":
                chats = [r for r in server.requests if r.endpoint == "chat"]
                stats = {
                    "requests": len(chats),
                    "cpu_s": time.process_time(),
                }
                print(json.dumps(stats), flush=True)


# -- the contenders ----------------------------------------------------------------------


def _spread_transport(module: Any) -> type:
    """A transport class of `module` (httpx or httpx2) that spreads requests over pools."""

    class Released(module.AsyncByteStream):
        """The response body; closing it frees the request's slot in its pool (once)."""

        def __init__(self, stream: Any, busy: list[int], index: int) -> None:
            self._stream, self._busy, self._index = stream, busy, index
            self._open = True

        async def __aiter__(self) -> Any:
            async for chunk in self._stream:
                yield chunk

        async def aclose(self) -> None:
            if self._open:
                self._open = False
                self._busy[self._index] -= 1
            await self._stream.aclose()

    class Spread(module.AsyncBaseTransport):
        """Sends each request through the pool with the fewest requests in flight.

        httpcore's pool does work for every connection it holds on each request it
        starts or finishes; several small pools keep that work small.
        """

        def __init__(self, shards: list[Any]) -> None:
            self._shards = shards
            self._busy = [0] * len(shards)

        async def handle_async_request(self, request: Any) -> Any:
            busy = self._busy
            index = busy.index(min(busy))
            busy[index] += 1
            response = None
            try:
                response = await self._shards[index].handle_async_request(request)
            finally:
                if response is None:  # failed or cancelled: the slot is free again
                    busy[index] -= 1
            response.stream = Released(response.stream, busy, index)
            return response

        async def aclose(self) -> None:
            for shard in self._shards:
                await shard.aclose()

    return Spread


def httpx_client(pool: Pool, module: Any = httpx) -> Any:
    """An `AsyncClient` of `module` (httpx, or the SDK's httpx2) configured by `pool`."""
    timeout = module.Timeout(pool.timeout, connect=pool.connect_timeout)
    if pool.shards == 1:
        return module.AsyncClient(limits=pool.limits(module), timeout=timeout)
    # One certificate store for all pools (the URLs are http://, but each transport
    # would otherwise load its own).
    context = ssl.create_default_context()
    shards = [
        module.AsyncHTTPTransport(verify=context, limits=pool.limits(module))
        for _ in range(pool.shards)
    ]
    return module.AsyncClient(transport=_spread_transport(module)(shards), timeout=timeout)


async def agentgraph_contender(url: str, pool: Pool, stack: AsyncExitStack) -> RunOnce:
    client = await stack.enter_async_context(httpx_client(pool))
    model = OpenAIModel(
        MODEL,
        base_url=url,
        api_key=API_KEY,
        http_client=client,
        retry=ProviderRetry(max_retries=0),
    )
    agent = react_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT, max_turns=MAX_TURNS)
    runner = GraphRunner(retry=RetryPolicy(attempts=1))

    async def run_once(i: int) -> tuple[str, int]:
        result = await runner.run(agent, AgentContext(question(i)))
        return result.input, result.usage.requests

    return run_once


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
}
LABELS = {
    "agentgraph": "agentgraph (`react_agent`, `OpenAIModel`)",
    "openai": "`openai` SDK (`AsyncOpenAI`)",
    "httpx": "bare httpx (hand-built JSON)",
    "openai-httpx2": "`openai` SDK on its own httpx2 client",
}


# -- measuring one contender (in its own process) ---------------------------------------


def peak_rss_mib() -> float:
    """This process's peak resident set size (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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


# -- orchestration: the server process and one process per contender ------------------------


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


def clean_error(line: str) -> str:
    """An error line fit for the report: the file paths it names are dropped."""
    return re.sub(r"\s*\(?(?<![\w.])(/[^\s/()]+)+/?\)?", "", line).rstrip(" :")


def run_isolated(name: str, url: str, sizes: Sizes, pool: Pool) -> dict[str, Any]:
    """Measure one contender in a fresh process; an `error` entry if it failed."""
    config = json.dumps({"sizes": asdict(sizes), "pool": asdict(pool)})
    command = [sys.executable, str(Path(__file__).resolve()), "--contender", name]
    done = subprocess.run(
        [*command, "--url", url, "--config", config],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"contender": name, "error": last}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_all(names: list[str], sizes: Sizes, pool: Pool) -> list[dict[str, Any]]:
    """Every contender against one fake server; server-side counts added to each result."""
    server = ServerProcess(sizes.delay)
    results = []
    try:
        for name in names:
            print(f"measuring {name} ...", file=sys.stderr, flush=True)
            server.ask("reset")
            before = server.ask("stats")
            result = run_isolated(name, server.url, sizes, pool)
            after = server.ask("stats")
            result["server"] = {
                "requests": after["requests"],
                "cpu_s": after["cpu_s"] - before["cpu_s"],
            }
            results.append(result)
    finally:
        server.close()
    return results


# -- the report --------------------------------------------------------------------------


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """Per-contender figures: medians over the measured batches, totals over all of them."""
    batches = result["batches"]
    every = [b for b in (result["warmup"], *batches) if b is not None]
    client_requests = sum(b["requests"] for b in every)
    server = result["server"]
    return {
        "runs_per_s": statistics.median(b["runs"] / b["wall_s"] for b in batches),
        "wall_s": statistics.median(b["wall_s"] for b in batches),
        "cpu_ms": statistics.median(1000 * b["cpu_s"] / max(b["requests"], 1) for b in batches),
        "server_cpu_ms": 1000 * server["cpu_s"] / max(server["requests"], 1),
        "peak_rss_mib": result["peak_rss_mib"],
        "rss_growth_mib": result["peak_rss_mib"] - result["ready_rss_mib"],
        "runs": sum(b["runs"] for b in every),
        "errors": sum(b["errors"] for b in every),
        "wrong": sum(b["wrong"] for b in every),
        "requests": server["requests"],
        "requests_agree": client_requests == server["requests"],
        "first_error": next((b["first_error"] for b in every if b["first_error"]), None),
    }


def _count(n: int) -> str:
    return f"{n:,}"


def table_lines(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| Client | Runs/s | Batch wall s | Client CPU ms/request | vs SDK | Peak RSS MiB "
        "| RSS growth MiB | Model requests | Errors | Wrong answers | Server CPU ms/request |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    sdk = next(
        (summarize(r) for r in results if r["contender"] == "openai" and "error" not in r), None
    )
    for result in results:
        label = LABELS[result["contender"]]
        if "error" in result:
            lines.append(f"| {label} | failed: {clean_error(result['error'])} |" + " - |" * 9)
            continue
        s = summarize(result)
        ratio = f"{s['cpu_ms'] / sdk['cpu_ms']:.2f}x" if sdk else "-"
        requests = _count(s["requests"]) + (
            "" if s["requests_agree"] else " (client count differs)"
        )
        lines.append(
            f"| {label} | {s['runs_per_s']:,.0f} | {s['wall_s']:.2f} | {s['cpu_ms']:.3f} | {ratio} "
            f"| {s['peak_rss_mib']:.0f} | {s['rss_growth_mib']:.0f} | {requests} | {s['errors']} "
            f"| {s['wrong']} | {s['server_cpu_ms']:.3f} |"
        )
    return lines


def target_lines(results: list[dict[str, Any]]) -> list[str]:
    by_name = {r["contender"]: summarize(r) for r in results if "error" not in r}
    ours = by_name.get("agentgraph")
    if ours is None:
        return []
    clean = ours["errors"] == 0 and ours["wrong"] == 0 and ours["requests_agree"]
    detail = (
        f"{ours['errors']} errors, {ours['wrong']} wrong answers in {_count(ours['runs'])} runs"
    )
    if ours["first_error"]:
        detail += f" (first: {ours['first_error']})"
    lines = [
        "### Targets",
        "",
        "| Target (agentgraph) | Measured | Verdict |",
        "|---|--:|---|",
        f"| no errors, every final answer right | {detail} | {'met' if clean else 'NOT MET'} |",
    ]
    for name, label in (("openai", "the `openai` SDK's"), ("openai-httpx2", "the SDK's on httpx2")):
        peer = by_name.get(name)
        if peer is None:
            continue
        ratio = ours["cpu_ms"] / peer["cpu_ms"]
        verdict = "met" if ratio <= 1.0 else "NOT MET"
        lines.append(
            f"| client CPU per request ≤ {label} | {ours['cpu_ms']:.3f} ms vs "
            f"{peer['cpu_ms']:.3f} ms ({ratio:.2f}x) | {verdict} |"
        )
    return [*lines, ""]


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def render_section(
    results: list[dict[str, Any]], *, sizes: Sizes, pool: Pool, load: tuple[float, float]
) -> str:
    """The `## LLM path` section of RESULTS.md."""
    versions = ", ".join(
        f"{name} {_version(name)}"
        for name in ("agentgraph", "openai", "httpx", "httpcore", "httpx2", "httpcore2")
    )
    server = ", ".join(f"{name} {_version(name)}" for name in ("uvicorn", "h11", "starlette"))
    lines = [
        HEADING,
        "",
        f"{_count(sizes.runs)} concurrent ReAct agent runs, each two tool turns and a final "
        f"answer (three chat-completion requests), against the loopback fake provider "
        f"(`agentgraph.testing.FakeServer`) answering every request after "
        f"{sizes.delay * 1000:g} ms. Produced by `python benchmarks/llm_path.py`; each figure "
        f"is the median of {sizes.batches} batches after a warm-up batch of "
        f"{_count(sizes.warmup_runs)} runs. Lower CPU is better.",
        "",
        *table_lines(results),
        "",
        "`vs SDK` is the client CPU per request over the `openai` SDK's on the same httpx "
        "client. Errors, wrong answers and model requests count every batch, warm-up included; "
        "requests are the fake server's count, checked against the clients' own.",
        "",
        *target_lines(results),
        "### Method",
        "",
        "- **The task**: run *i* asks `What is (i + 7) * k?`. The fake model (a `responder` of "
        "the fake server) reads only the request's messages: with no tool result it calls "
        "`add(i, 7)`, with one it calls `multiply(<that result>, k)`, with two it answers "
        "`(i + 7) * k = <second result>`. A run counts as right only if its final text is "
        "exactly that, so every tool result must have made the round trip.",
        "- **agentgraph**: `react_agent(OpenAIModel(...), (add, multiply), system_prompt=..., "
        "max_turns=4)` run by `GraphRunner().run(agent, AgentContext(question))`; the tools are "
        "`async def` functions under `@tool` (a sync tool would run in a worker thread).",
        "- **openai**: `AsyncOpenAI(...).chat.completions.create(model, messages, tools)` in a "
        "hand-written loop that appends the assistant message and one `tool` message per call "
        "(arguments read with `json.loads`).",
        "- **bare httpx**: `client.post` with an `orjson`-encoded body, `orjson.loads` of the "
        "answer, the same loop.",
        "- All three send the same conversation: the same system prompt, messages and tool list "
        "(the JSON Schemas agentgraph derives from the tools); `tests/test_llm_path_smoke.py` "
        "checks that the bodies agree. Nothing retries, so any failure shows up as an error: "
        "`ProviderRetry(max_retries=0)` and `RetryPolicy(attempts=1)` in agentgraph, "
        "`max_retries=0` in the SDK.",
        f"- **HTTP client**: {pool.describe()}. The SDK is given the same client (it accepts an "
        "`httpx.AsyncClient`) and the same timeout explicitly (it would send its own 600 s "
        f"otherwise). The httpx2 row gives the SDK its own HTTP library arranged the same "
        "way. HTTP/1.1 with keep-alive: no connection is closed between requests.",
        "- **Why several pools**: on each request it starts or finishes, httpcore's connection "
        "pool walks every connection it holds, probing each idle one's socket, and hands every "
        "waiting request the same first idle connection, so requests that arrive together "
        "retry against each other. With one pool of 1,000 kept-alive connections the client "
        "spends milliseconds of CPU per request in the pool and the figures vary several-fold "
        "from batch to batch; `python benchmarks/llm_path.py --shards 1 --connections 1000` "
        "measures that arrangement.",
        "- **Measuring**: the fake server runs in a process of its own, and each client in "
        "another, all on asyncio. All runs of a batch start together in one `asyncio.TaskGroup`. "
        "Client CPU is `time.process_time()` of the client process over a batch divided by the "
        "model requests it made; peak RSS is its `ru_maxrss` at the end, and growth is that "
        "minus the peak before the first batch (after imports and client setup). Server CPU is "
        "the fake server process's, per request it answered. Garbage collection stays on.",
        "",
        "### Machine",
        "",
        f"- Python {platform.python_version()} ({platform.python_implementation()}); {versions}",
        f"- Fake server: {server}, one event loop thread",
        f"- CPU: {_cpu()}, {os.cpu_count()} cores shared by the server and the client",
        f"- Date: {time.strftime('%Y-%m-%d')}; 1-minute load average {load[0]:.2f} before "
        f"the run, {load[1]:.2f} after",
        "",
    ]
    return "\n".join(lines)


def replace_section(document: str, section: str) -> str:
    """`document` with its `## LLM path` section (up to the next `#`/`##` heading) replaced."""
    lines = document.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == HEADING), None)
    if start is None:
        return document.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    end = next(
        (i for i in range(start + 1, len(lines)) if re.match(r"#{1,2} ", lines[i])), len(lines)
    )
    after = ["", *lines[end:]] if end < len(lines) else []
    kept = lines[:start] + section.rstrip("\n").splitlines() + after
    return "\n".join(kept).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 runs per batch; print only")
    parser.add_argument("--contenders", default=",".join(CONTENDERS), help="comma-separated")
    parser.add_argument("--runs", type=int, help="concurrent runs per batch")
    parser.add_argument("--batches", type=int, help="measured batches per contender")
    parser.add_argument("--shards", type=int, default=Pool.shards, help="connection pools")
    parser.add_argument("--connections", type=int, default=Pool.connections, help="per pool")
    parser.add_argument("--keepalive", type=int, help="kept-alive connections per pool")
    parser.add_argument("--output", type=Path, help="write the section here (default: RESULTS.md)")
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
    names = args.contenders.split(",")
    unknown = sorted(set(names) - set(CONTENDERS))
    if unknown:
        parser.error(f"unknown contenders {unknown}; choose from {list(CONTENDERS)}")
    sizes = QUICK if args.quick else FULL
    if args.runs or args.batches:
        runs = args.runs or sizes.runs
        sizes = Sizes(runs=runs, batches=args.batches or sizes.batches, warmup_runs=runs)
    pool = Pool(shards=args.shards, connections=args.connections, keepalive=args.keepalive)
    load_before = os.getloadavg()[0]
    results = run_all(names, sizes, pool)
    if args.json:
        print(json.dumps(results, indent=1))
    section = render_section(
        results, sizes=sizes, pool=pool, load=(load_before, os.getloadavg()[0])
    )
    print(section)
    output = args.output or (None if args.quick else RESULTS)
    if output is not None:
        # Read right before writing: other sections of the file may have changed meanwhile.
        current = output.read_text() if output.exists() else ""
        output.write_text(replace_section(current, section))
        print(f"wrote the {HEADING[3:]} section of {output}", file=sys.stderr)


if __name__ == "__main__":
    main()
