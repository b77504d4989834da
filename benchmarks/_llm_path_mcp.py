"""LLM path, MCP tool calls: client CPU per call, agentgraph's tools vs the SDK's own session.

One MCP server (the official SDK's `MCPServer` with one tool, `add`) runs as a stdio
subprocess, so the CPU it spends is not the client's: `time.process_time()` of this
process counts the client alone. The contenders make the same calls one after another:

- agentgraph: `MCPTools.stdio(...)`, each call through `run_tool_calls` (what the
  `tool_use` node runs: arguments checked against the server's schema, the call, the
  result made into a tool message);
- mcp Client: the SDK's high-level `mcp.Client.call_tool`;
- mcp ClientSession: `client.session.call_tool`, the session under it.

`measure_mcp()` returns one row per contender (for `llm_path.py` or any caller);
`render_section()` makes the RESULTS.md section. Run alone::

    python benchmarks/_llm_path_mcp.py            # full size; writes its RESULTS.md section
    python benchmarks/_llm_path_mcp.py --quick    # 100 calls per batch; prints only
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from _common import cpu_model, load_average, publish, python, section_parser, versions

HEADING = "## LLM path: MCP tool calls"
CONTENDERS = ("agentgraph", "mcp-client", "mcp-session")
LABELS = {
    "agentgraph": "agentgraph (`MCPTools`, `run_tool_calls`)",
    "mcp-client": "`mcp.Client.call_tool`",
    "mcp-session": "`mcp.ClientSession.call_tool`",
}
SCRIPT = str(Path(__file__).resolve())

Call = Callable[[int], Awaitable[str]]
Row = dict[str, Any]


def serve() -> None:
    """The benchmark's server: one tool, over stdio."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    server.run("stdio")


async def _batch(call: Call, calls: int) -> tuple[float, int]:
    """Client CPU ms per call over `calls` calls, and how many answers were wrong."""
    wrong = 0
    cpu = time.process_time()
    for i in range(calls):
        if await call(i) != str(i + 1):
            wrong += 1
    return (time.process_time() - cpu) / calls * 1000, wrong


async def _measure(calls: int, batches: int, warmup: int, contenders: Sequence[str]) -> list[Row]:
    import mcp

    from agentgraph.llm import ToolCall
    from agentgraph.mcp import MCPTools
    from agentgraph.tools import run_tool_calls

    params = mcp.StdioServerParameters(command=sys.executable, args=[SCRIPT, "--serve"])
    tools = MCPTools.stdio(sys.executable, SCRIPT, "--serve", allow=["add"])
    async with tools, mcp.Client(params) as client:

        async def through_agentgraph(i: int) -> str:
            call = ToolCall("c", "add", {"a": i, "b": 1})
            [outcome] = await run_tool_calls(tools.tools, [call])
            return outcome.message.content

        async def through_client(i: int) -> str:
            answer = await client.call_tool("add", {"a": i, "b": 1})
            return answer.content[0].text  # type: ignore[union-attr]

        async def through_session(i: int) -> str:
            answer = await client.session.call_tool("add", {"a": i, "b": 1})
            return answer.content[0].text  # type: ignore[union-attr]

        ways = {
            "agentgraph": through_agentgraph,
            "mcp-client": through_client,
            "mcp-session": through_session,
        }
        for name in contenders:
            await _batch(ways[name], warmup)
        figures: dict[str, list[float]] = {name: [] for name in contenders}
        wrong = dict.fromkeys(contenders, 0)
        # Batches take turns, so a change in the machine's load falls on every contender.
        for _ in range(batches):
            for name in contenders:
                cpu, bad = await _batch(ways[name], calls)
                figures[name].append(cpu)
                wrong[name] += bad
    return [
        {
            "name": name,
            "cpu_ms_per_call": statistics.median(figures[name]),
            "calls": calls * batches,
            "wrong": wrong[name],
        }
        for name in contenders
    ]


def measure_mcp(
    *,
    calls: int = 2000,
    batches: int = 5,
    warmup: int = 200,
    contenders: Sequence[str] = CONTENDERS,
) -> list[Row]:
    """One row per contender: the median client CPU ms per call over `batches` of `calls`."""
    return anyio.run(_measure, calls, batches, warmup, contenders)


def render_section(
    rows: list[dict[str, Any]],
    *,
    calls: int,
    batches: int,
    load: tuple[float, float] | None = None,
) -> str:
    session = next((r for r in rows if r["name"] == "mcp-session"), None)
    lines = [
        HEADING,
        "",
        f"Sequential calls of one MCP tool (`add`) on a stdio server subprocess (the SDK's "
        f"`MCPServer`), {batches} batches of {calls:,} calls after a warm-up; client CPU is "
        "`time.process_time()` of the client process (the server's is its own). Produced by "
        "`python benchmarks/_llm_path_mcp.py`. Lower is better.",
        "",
        "| Client | Client CPU ms/call | vs ClientSession | Calls | Wrong answers |",
        "|---|--:|--:|--:|--:|",
    ]
    for row in rows:
        ratio = f"{row['cpu_ms_per_call'] / session['cpu_ms_per_call']:.2f}x" if session else "-"
        lines.append(
            f"| {LABELS[row['name']]} | {row['cpu_ms_per_call']:.3f} | {ratio} | "
            f"{row['calls']:,} | {row['wrong']} |"
        )
    lines += [
        "",
        "### Method",
        "",
        "- agentgraph's `MCPTools` and the SDK's `mcp.Client` each open a connection to a "
        "server process of their own (the `ClientSession` row uses the `Client`'s session) "
        "and make the same calls, `add(a=i, b=1)`, one at a time; an answer counts as right "
        "only if it is `i + 1`.",
        "- After a warm-up of each, the contenders' batches take turns, so a change in the "
        "shared machine's load falls on all of them; each figure is the median over batches.",
        "- agentgraph's row includes everything a `tool_use` node does per call: the allowlist "
        "lookup, the arguments checked against the server's JSON Schema (`jsonschema`), the "
        "call, and the result made into a tool `Message` and a `ToolOutcome`. Checking the "
        "arguments with `jsonschema` is about half of what it adds to the SDK's call (about "
        "0.05 ms for this two-integer schema, measured alone).",
        "",
        "### Machine",
        "",
        f"- {python()}; {versions('agentgraph', 'mcp', 'jsonschema', 'anyio')}",
        f"- CPU: {cpu_model()}",
        f"- Date: {time.strftime('%Y-%m-%d')}"
        + (
            ""
            if load is None
            else f"; 1-minute load average {load[0]:.2f} before, {load[1]:.2f} after"
        ),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = section_parser(__doc__, "100 calls per batch; print only")
    parser.add_argument("--calls", type=int, help="calls per batch")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve()
        return
    calls = args.calls or (100 if args.quick else 2000)
    batches = 1 if args.quick else 5
    before = load_average()
    rows = measure_mcp(calls=calls, batches=batches, warmup=calls // 10)
    load = (before, load_average())
    publish(
        render_section(rows, calls=calls, batches=batches, load=load),
        output=args.output,
        quick=args.quick,
    )


if __name__ == "__main__":
    main()
