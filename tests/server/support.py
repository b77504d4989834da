"""Graphs for the server tests, and an agent server on loopback in a thread of this process."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

from agentgraph import AgentContext, Graph, GraphBuilder, Runtime, node
from agentgraph.llm import ChatRequest, Message, ToolCall
from agentgraph.server import ServerSettings, server_app
from agentgraph.testing import ScriptedModel
from agentgraph.web import WebServer


def echo() -> Graph[str, str]:
    """Answers each user message with `echo: <text>`."""

    @node(name="reply")
    async def reply(ctx: AgentContext[str]) -> AgentContext[str]:
        answer = f"echo: {ctx.input}"
        return ctx.append(Message.user(ctx.input), Message.assistant(answer)).with_input(answer)

    with GraphBuilder[str, str]("echo") as g:
        g.start.edge_to(reply).edge_to(g.finish)
    return g.build()


def asks() -> Graph[str, str]:
    """Asks for approval (an interrupt), then answers with what it was told."""

    @node(name="ask")
    async def ask(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        answer = await rt.interrupt({"question": f"may I answer {ctx.input!r}?"})
        return ctx.append(Message.user(ctx.input), Message.assistant(f"told: {answer}"))

    with GraphBuilder[str, str]("asks") as g:
        g.start.edge_to(ask).edge_to(g.finish)
    return g.build()


def slow() -> Graph[str, str]:
    """Sleeps a long time: a run to cancel."""

    @node(name="sleep")
    async def sleep(ctx: AgentContext[str]) -> AgentContext[str]:
        await anyio.sleep(60)
        return ctx

    with GraphBuilder[str, str]("slow") as g:
        g.start.edge_to(sleep).edge_to(g.finish)
    return g.build()


def fails() -> Graph[str, str]:
    @node(name="boom")
    async def boom(ctx: AgentContext[str]) -> AgentContext[str]:
        raise ValueError("the node failed")

    with GraphBuilder[str, str]("fails") as g:
        g.start.edge_to(boom).edge_to(g.finish)
    return g.build()


GATE = threading.Event()
"""Holds the `gated` graph's runs until a test sets it."""


def gated() -> Graph[str, str]:
    """Waits for `GATE`, then answers like `echo`."""

    @node(name="gate")
    async def gate(ctx: AgentContext[str]) -> AgentContext[str]:
        while not GATE.is_set():
            await anyio.sleep(0.01)
        answer = f"gated: {ctx.input}"
        return ctx.append(Message.user(ctx.input), Message.assistant(answer)).with_input(answer)

    with GraphBuilder[str, str]("gated") as g:
        g.start.edge_to(gate).edge_to(g.finish)
    return g.build()


def crash() -> Graph[str, str]:
    """Records one effect, then holds until the file `go` appears in `$SERVER_TEST_DIR`."""

    def record(folder: Path) -> str:
        with (folder / "effects").open("a") as out:
            out.write("effect\n")
        return "recorded"

    @node(name="record")
    async def record_once(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        folder = Path(os.environ["SERVER_TEST_DIR"])
        return ctx.with_input(await rt.once("record", record, folder))

    @node(name="hold")
    async def hold(ctx: AgentContext[str]) -> AgentContext[str]:
        folder = Path(os.environ["SERVER_TEST_DIR"])
        while not (folder / "go").exists():
            await anyio.sleep(0.02)
        return ctx.append(Message.assistant("held"))

    with GraphBuilder[str, str]("crash") as g:
        g.start.edge_to(record_once).edge_to(hold).edge_to(g.finish)
    return g.build()


def crash_streams() -> Graph[str, str]:
    """Streams an answer (a committed step), then holds like `crash` until `go` appears."""

    @node(name="talk")
    async def talk(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        model = ScriptedModel("a streamed answer", chunk_size=4, repeat=True)
        request = ChatRequest(messages=(Message.user(ctx.input),))
        async with rt.stream_model(model, request) as events:
            async for _ in events:
                pass
        return ctx.append(Message.user(ctx.input), Message.assistant("a streamed answer"))

    @node(name="hold")
    async def hold(ctx: AgentContext[str]) -> AgentContext[str]:
        folder = Path(os.environ["SERVER_TEST_DIR"])
        while not (folder / "go").exists():
            await anyio.sleep(0.02)
        return ctx

    with GraphBuilder[str, str]("crash_streams") as g:
        g.start.edge_to(talk).edge_to(hold).edge_to(g.finish)
    return g.build()


def streams() -> Graph[str, str]:
    """Streams a scripted model's answer (`hello there, friend`) in chunks of 4 characters."""

    @node(name="talk")
    async def talk(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        model = ScriptedModel("hello there, friend", chunk_size=4)
        request = ChatRequest(messages=(Message.user(ctx.input),))
        async with rt.stream_model(model, request) as events:
            async for _ in events:
                pass
        return ctx.append(Message.user(ctx.input), Message.assistant("hello there, friend"))

    with GraphBuilder[str, str]("streams") as g:
        g.start.edge_to(talk).edge_to(g.finish)
    return g.build()


def recall() -> Graph[str, str]:
    """Answers with what it saw: the thread's messages before this turn and `ctx.state`."""

    @node(name="recall")
    async def remember(ctx: AgentContext[str]) -> AgentContext[str]:
        seen = " | ".join(m.content for m in ctx.history) or "nothing"
        mood = ctx.state.get("mood", "none")
        answer = f"saw: {seen}; mood: {mood}"
        return ctx.append(Message.user(ctx.input), Message.assistant(answer)).with_input(answer)

    with GraphBuilder[str, str]("recall") as g:
        g.start.edge_to(remember).edge_to(g.finish)
    return g.build()


def asks_then_waits() -> Graph[str, str]:
    """Asks for approval (an interrupt), then waits for `GATE` before answering."""

    @node(name="ask")
    async def ask(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        answer = await rt.interrupt({"question": f"may I answer {ctx.input!r}?"})
        return ctx.append(Message.user(ctx.input), Message.assistant(f"told: {answer}"))

    @node(name="gate")
    async def gate(ctx: AgentContext[str]) -> AgentContext[str]:
        while not GATE.is_set():
            await anyio.sleep(0.01)
        return ctx

    with GraphBuilder[str, str]("asks_then_waits") as g:
        g.start.edge_to(ask).edge_to(gate).edge_to(g.finish)
    return g.build()


def drafts() -> Graph[str, str]:
    """Writes a draft answer, then asks for approval (an interrupt) before sending it."""

    @node(name="draft")
    async def draft(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx.append(Message.user(ctx.input), Message.assistant(f"draft: {ctx.input}"))

    @node(name="ask")
    async def ask(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        answer = await rt.interrupt({"question": "send the draft?"})
        return ctx.append(Message.assistant(f"sent: {answer}"))

    with GraphBuilder[str, str]("drafts") as g:
        g.start.edge_to(draft).edge_to(ask).edge_to(g.finish)
    return g.build()


def notes_then_sleeps() -> Graph[str, str]:
    """Notes the user's message (a finished step), then sleeps a long time: a run whose
    progress an `interrupt` double text keeps."""

    @node(name="note")
    async def note(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx.append(Message.user(ctx.input), Message.assistant(f"noted: {ctx.input}"))

    @node(name="sleep")
    async def sleep(ctx: AgentContext[str]) -> AgentContext[str]:
        await anyio.sleep(60)
        return ctx

    with GraphBuilder[str, str]("notes_then_sleeps") as g:
        g.start.edge_to(note).edge_to(sleep).edge_to(g.finish)
    return g.build()


def calls_then_sleeps() -> Graph[str, str]:
    """A model's tool call (a finished step) whose tool then sleeps a long time."""

    @node(name="call")
    async def call(ctx: AgentContext[str]) -> AgentContext[str]:
        asked = Message.assistant("", tool_calls=(ToolCall("call-1", "lookup", {"q": "x"}),))
        return ctx.append(Message.user(ctx.input), asked)

    @node(name="tool")
    async def tool(ctx: AgentContext[str]) -> AgentContext[str]:
        await anyio.sleep(60)
        return ctx

    with GraphBuilder[str, str]("calls_then_sleeps") as g:
        g.start.edge_to(call).edge_to(tool).edge_to(g.finish)
    return g.build()


def chats() -> Graph[str, str]:
    """Sends the thread's conversation and the user's message to a scripted model, which
    checks it as every provider client does, and appends its answer."""

    @node(name="chat")
    async def chat(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        model = ScriptedModel("answered", repeat=True)
        asked = ctx.append(Message.user(ctx.input))
        reply = await rt.call_model(model, ChatRequest(messages=tuple(asked.history)))
        return asked.append(reply.message)

    with GraphBuilder[str, str]("chats") as g:
        g.start.edge_to(chat).edge_to(g.finish)
    return g.build()


def nests() -> Graph[str, str]:
    """A graph whose one node is a graph of two steps: `stream_subgraphs` shows them."""

    @node(name="hear")
    async def hear(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx.append(Message.user(ctx.input))

    @node(name="answer")
    async def answer(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx.append(Message.assistant(f"inner: {ctx.input}"))

    with GraphBuilder[str, str]("inner") as inner:
        inner.start.edge_to(hear).edge_to(answer).edge_to(inner.finish)
    with GraphBuilder[str, str]("nests") as g:
        g.start.edge_to(inner.build()).edge_to(g.finish)
    return g.build()


GRAPHS: dict[str, Any] = {
    "streams": streams(),
    "crash": crash(),
    "crash_streams": crash_streams(),
    "echo": echo(),
    "asks": asks(),
    "slow": slow(),
    "fails": fails(),
    "gated": gated(),
    "recall": recall(),
    "asks_then_waits": asks_then_waits(),
    "drafts": drafts(),
    "notes_then_sleeps": notes_then_sleeps(),
    "calls_then_sleeps": calls_then_sleeps(),
    "chats": chats(),
    "nests": nests(),
}


def said(text: str) -> dict[str, Any]:
    """A run's input: one user message."""
    return {"messages": [{"role": "user", "content": text}]}


@contextlib.contextmanager
def serving(
    tmp_path: Path,
    *,
    where: str | None = None,
    schema: str = "agentgraph",
    graphs: dict[str, Any] | None = None,
    **settings: Any,
) -> Iterator[str]:
    """An agent server for `graphs` (`GRAPHS` unless given) on loopback (SQLite in
    `tmp_path` unless `where`)."""
    settings.setdefault("grace", 0.5)
    GATE.clear()
    app = server_app(
        GRAPHS if graphs is None else graphs,
        where or tmp_path / "server.db",
        settings=ServerSettings(**settings),
        schema=schema,
    )
    with WebServer(app) as server:
        yield server.url.rstrip("/")


WORKER = """
import sys, time
from tests.server.support import GRAPHS
from agentgraph.server import Worker
worker = Worker(
    sys.argv[1],
    GRAPHS,
    claim_term=float(sys.argv[2]),
    schema=sys.argv[3],
    cancel_poll=float(sys.argv[4]),
)
worker.start()
print("ready", flush=True)
while True:
    time.sleep(1)
"""


def worker_process(
    path: Path | str,
    folder: Path,
    *,
    claim_term: float = 1.0,
    schema: str = "agentgraph",
    cancel_poll: float = 1.0,
) -> subprocess.Popen[str]:
    """A worker in a process of its own, on the database at `path`."""
    env = {**os.environ, "SERVER_TEST_DIR": str(folder)}
    process = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(path), str(claim_term), schema, str(cancel_poll)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


@contextlib.contextmanager
def agentgraph(*arguments: str, folder: Path) -> Iterator[subprocess.Popen[str]]:
    """`agentgraph <arguments>` (`server` or `worker`) in a process of its own, started
    (not awaited: see `served_at` and `working`); SIGTERM, and its end awaited, on leaving."""
    env = {**os.environ, "SERVER_TEST_DIR": str(folder)}
    command = [sys.executable, "-m", "agentgraph", *arguments]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) as process:
        try:
            yield process
        finally:
            process.terminate()
            process.wait(timeout=60)


def api_process(dsn: str, schema: str, folder: Path) -> Any:
    """`agentgraph server --workers 0` (the API alone) for the echo and crash graphs."""
    return agentgraph(
        "server", *_TARGETS, "--store", dsn, "--schema", schema, "--port", "0",
        "--workers", "0", folder=folder,
    )  # fmt: skip


def workers_process(dsn: str, schema: str, folder: Path) -> Any:
    """`agentgraph worker` for the echo and crash graphs."""
    return agentgraph(
        "worker", *_TARGETS, "--store", dsn, "--schema", schema, "--grace", "1", folder=folder
    )


def served_at(process: subprocess.Popen[str]) -> str:
    """The URL an `agentgraph server` process serves at, once it does."""
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("serving "), line
    return line.split(" at ")[1].strip()


def working(process: subprocess.Popen[str]) -> None:
    """Return once an `agentgraph worker` process runs its workers."""
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "running" in line, line


_TARGETS = ("echo=tests.server.support:echo", "crash=tests.server.support:crash")
