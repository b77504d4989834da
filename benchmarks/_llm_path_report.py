"""The LLM path benchmark's section of RESULTS.md: table, targets, method, machine."""

import os
import statistics
import time
from typing import TYPE_CHECKING, Any

from _common import clean_error, cpu_model, python, versions
from _llm_path_pool import Pool
from _llm_path_responses import LABELS as RESPONSES_LABELS

if TYPE_CHECKING:
    from llm_path import Sizes

HEADING = "## LLM path"
EXTRA_HEADING = "## LLM path: Responses API and MCP"

LABELS = {
    "agentgraph": "agentgraph (`react_agent`, `OpenAIModel`)",
    "openai": "`openai` SDK (`AsyncOpenAI`)",
    "httpx": "bare httpx (hand-built JSON)",
    "openai-httpx2": "`openai` SDK on its own httpx2 client",
    **RESPONSES_LABELS,
}
BASELINES = {"agentgraph-responses": "openai-responses", "openai-responses": "openai-responses"}
"""The contender each row's `vs SDK` compares with; `openai` when not named here."""


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
    sdks = {r["contender"]: summarize(r) for r in results if "error" not in r}
    for result in results:
        label = LABELS.get(result["contender"], result["contender"])
        if "error" in result:
            lines.append(f"| {label} | failed: {clean_error(result['error'])} |" + " - |" * 9)
            continue
        s = summarize(result)
        sdk = sdks.get(BASELINES.get(result["contender"], "openai"))
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
    ours = by_name.get("agentgraph") or by_name.get("agentgraph-responses")
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
    peers = (
        ("openai", "the `openai` SDK's", "agentgraph"),
        ("openai-httpx2", "the SDK's on httpx2", "agentgraph"),
        ("openai-responses", "the SDK's Responses API", "agentgraph-responses"),
    )
    for name, label, contender in peers:
        peer, ours = by_name.get(name), by_name.get(contender)
        if peer is None or ours is None:
            continue
        ratio = ours["cpu_ms"] / peer["cpu_ms"]
        verdict = "met" if ratio <= 1.0 else "NOT MET"
        lines.append(
            f"| client CPU per request ≤ {label} | {ours['cpu_ms']:.3f} ms vs "
            f"{peer['cpu_ms']:.3f} ms ({ratio:.2f}x) | {verdict} |"
        )
    return [*lines, ""]


def render_section(
    results: list[dict[str, Any]],
    *,
    sizes: "Sizes",
    pool: Pool,
    load: tuple[float, float],
    extra: bool = False,
) -> str:
    """The `## LLM path` section of RESULTS.md (or its extra rows' own section)."""
    clients = versions("agentgraph", "openai", "httpx", "httpcore", "httpx2", "httpcore2")
    server = versions("uvicorn", "h11", "starlette")
    lines = [
        EXTRA_HEADING if extra else HEADING,
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
        "client (its Responses API for the Responses rows). Errors, wrong answers and model "
        "requests count every batch, warm-up included; "
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
        "- **Responses API**: `react_agent(OpenAIResponsesModel(...), ...)` against "
        "`client.responses.create(model, input, instructions, tools, store=False)` in the same "
        "loop, appending each `function_call` item and its `function_call_output`; both send "
        "the whole conversation every turn (stateless) and the same flat, strict tool list.",
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
        f"- {python()}; {clients}",
        f"- Fake server: {server}, one event loop thread",
        f"- CPU: {cpu_model()}, {os.cpu_count()} cores shared by the server and the client",
        f"- Date: {time.strftime('%Y-%m-%d')}; 1-minute load average {load[0]:.2f} before "
        f"the run, {load[1]:.2f} after",
        "",
    ]
    return "\n".join(lines)
