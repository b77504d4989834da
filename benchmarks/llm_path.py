"""LLM path: many concurrent ReAct agent runs against the loopback fake provider.

Each run asks "What is (a + b) * c?" and takes two tool turns (`add`, then `multiply`)
before the final answer: three chat-completion requests. The fake provider answers every
request after a fixed delay, deciding from the request's messages alone, so every client
sends the same conversation and must end with the same answer. Three contenders make the
same requests with the same HTTP client settings:

- agentgraph: `react_agent` over `OpenAIModel`, run with `GraphRunner`;
- openai: the official SDK's `AsyncOpenAI` in a hand-written tool loop;
- httpx: bare `httpx.AsyncClient` with hand-built JSON bodies (orjson) and parsing.

The fake server runs in its own process and each contender in another one, so the CPU
time (`time.process_time`) and peak RSS (`ru_maxrss`) of a contender are its own.

Usage::

    python benchmarks/llm_path.py            # full run; writes its section of RESULTS.md
    python benchmarks/llm_path.py --quick    # 100 runs per batch; prints the section only
"""

import argparse
import asyncio
import json
import re
import resource
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass
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
    """The HTTP client settings every contender gets."""

    clients: int = 1
    max_connections: int = 1_000
    max_keepalive: int = 1_000
    timeout: float = 60.0
    connect_timeout: float = 10.0


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
                    "body_bytes": sum(len(r.raw) for r in chats),
                    "cpu_s": time.process_time(),
                }
                print(json.dumps(stats), flush=True)


# -- the contenders ----------------------------------------------------------------------


def httpx_client(pool: Pool, module: Any = httpx) -> Any:
    """An `AsyncClient` of `module` (httpx, or the SDK's httpx2) with the pool settings."""
    return module.AsyncClient(
        limits=module.Limits(
            max_connections=pool.max_connections,
            max_keepalive_connections=pool.max_keepalive,
        ),
        timeout=module.Timeout(pool.timeout, connect=pool.connect_timeout),
    )


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
    wrong = sum(1 for i, (text, _) in answers if text != expected_answer(first + i))
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
        shards = [await CONTENDERS[name](url, pool, stack) for _ in range(pool.clients)]

        def run_once(i: int) -> Awaitable[tuple[str, int]]:
            return shards[i % len(shards)](i)

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
        self.url: str = self._read()["url"]

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
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


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
                "body_bytes": after["body_bytes"],
                "cpu_s": after["cpu_s"] - before["cpu_s"],
            }
            results.append(result)
    finally:
        server.close()
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 runs per batch; no file write")
    parser.add_argument("--contenders", default="agentgraph,openai,httpx,openai-httpx2")
    parser.add_argument("--runs", type=int, help="concurrent runs per batch")
    parser.add_argument("--batches", type=int, help="measured batches per contender")
    parser.add_argument("--clients", type=int, default=Pool.clients)
    parser.add_argument("--max-connections", type=int, default=Pool.max_connections)
    parser.add_argument("--max-keepalive", type=int, default=Pool.max_keepalive)
    parser.add_argument("--output", type=Path, help="the results file (default: RESULTS.md)")
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
    sizes = QUICK if args.quick else FULL
    if args.runs or args.batches:
        runs = args.runs or sizes.runs
        sizes = Sizes(runs=runs, batches=args.batches or sizes.batches, warmup_runs=runs)
    pool = Pool(
        clients=args.clients,
        max_connections=args.max_connections,
        max_keepalive=args.max_keepalive,
    )
    results = run_all(args.contenders.split(","), sizes, pool)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
