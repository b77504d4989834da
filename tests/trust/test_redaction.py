"""A secret planted anywhere in a run never reaches a trace, a console, a page, a span or stderr."""

import io
import sys

import httpx
import pytest

from agentgraph import AgentContext, GraphBuilder, GraphRunner, Message, node, tool
from agentgraph._cli import main
from agentgraph.llm import OpenAIModel
from agentgraph.nodes import chat, react_agent
from agentgraph.testing import ScriptedModel
from agentgraph.tracing import ConsoleSink, JsonlSink, OtelSink, load_trace, trace_to_html

pytestmark = pytest.mark.anyio

KEY = "sk-proj-Zq8h3LrN5vT1wX7yB2cD4eF6gH8jK0mP"
SECRET = KEY[8:30]  # any long piece of it must be gone too


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found it; the admin key is {KEY}"


def planted_graph():
    model = ScriptedModel(
        ScriptedModel.tool_call("lookup", query=f"use {KEY}"),
        f"Done. Your key: {KEY}",
    )
    agent = react_agent(model, [lookup])

    @node
    def plant(ctx):
        return ctx.with_state(**{KEY: "a key as a mapping key", "value": KEY}).append(
            Message.user(f"my key is {KEY}")
        )

    @node
    def fail(ctx):
        raise RuntimeError(f"cannot connect with {KEY}")

    with GraphBuilder[str, str]("planted") as g:
        g.start.edge_to(plant).edge_to(agent).edge_to(fail).edge_to(g.finish)
    return g.build()


async def test_no_sink_shows_a_planted_key(tmp_path):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    plain, rich = io.StringIO(), io.StringIO()
    path = tmp_path / "t.jsonl"
    with JsonlSink(path) as jsonl:
        sinks = [
            jsonl,
            ConsoleSink(plain, style="plain"),
            ConsoleSink(rich, style="rich"),
            OtelSink(provider, capture_content=True),
        ]
        with pytest.raises(Exception, match="cannot connect"):
            await GraphRunner(sinks=sinks).run(planted_graph(), AgentContext("go"))
    spans = repr(
        [
            (s.name, s.attributes, [(e.name, e.attributes) for e in s.events], s.status.description)
            for s in exporter.get_finished_spans()
        ]
    )
    page = trace_to_html(load_trace(path))
    outputs = {
        "jsonl": path.read_text(),
        "plain": plain.getvalue(),
        "rich": rich.getvalue(),
        "otel": spans,
        "html": page,
    }
    for name, text in outputs.items():
        assert SECRET not in text, name
    assert "***" in outputs["jsonl"]


async def test_a_key_in_a_providers_error_body_is_masked_everywhere(tmp_path):
    def handler(request: httpx.Request) -> httpx.Response:
        body = {
            "error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}
        }
        return httpx.Response(401, json=body)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    model = OpenAIModel("gpt-4o-mini", api_key="k", http_client=client)
    with GraphBuilder[str, Message]("g") as g:
        g.start.edge_to(chat(model)).edge_to(g.finish)
    path = tmp_path / "t.jsonl"
    plain = io.StringIO()
    with JsonlSink(path) as jsonl, pytest.raises(Exception) as failed:
        await GraphRunner(sinks=[jsonl, ConsoleSink(plain, style="plain")]).run(
            g.build(), AgentContext("hi").append(Message.user("hi"))
        )
    await client.aclose()
    assert SECRET not in path.read_text() and SECRET not in plain.getvalue()
    assert failed.value is not None  # the error object keeps its data for the program


APP = f"""
from agentgraph import GraphBuilder, node

@node
def fail(ctx):
    raise RuntimeError("token {KEY} was refused")

with GraphBuilder("leaky") as g:
    g.start.edge_to(fail).edge_to(g.finish)
graph = g.build()
"""


def test_the_command_line_masks_its_error_lines(tmp_path, monkeypatch):
    (tmp_path / "leaky_app.py").write_text(APP)
    (tmp_path / "leaky_import.py").write_text(f"raise RuntimeError('bad key {KEY}')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for argv in (
        ["run", "leaky_app:graph", "--input", "1", "--plain"],
        ["run", "leaky_import:graph", "--input", "1"],
    ):
        out, err = io.StringIO(), io.StringIO()
        status = main(argv, stdout=out, stderr=err)
        assert status in (1, 2) and err.getvalue().count("\n") == 1
        assert SECRET not in err.getvalue() + out.getvalue()
    for name in ("leaky_app", "leaky_import"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: BEARER abcDEF123456789xyz",
        "api_KEY=Zq81hd9ak2mz0",
        "PASSWORD: 's3cr3t-value'",
        "my key is SK-proj-abcdefghijklmnopqrstu",
        "token sk-abcdefghijklmnopqrstuvwx in text",
        "ghp_abcdefghijklmnopqrstuvwxyz012345",
        "AKIAABCDEFGHIJKLMNOP and AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
        "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4f",
        "Basic dXNlcjpwYXNzd29yZA==",
        "X-API-Key: Zq81hd9ak2mz0",
        "plain words, nothing secret here at all",
    ],
)
def test_the_quick_scan_never_lets_a_secret_shape_through(text):
    from agentgraph._util._redact import _HEADER, _KEY_SHAPES, _SCHEME, _header, _scheme
    from agentgraph.tracing import Redactor

    # What the three patterns mask with no quick scan in front of them.
    expected = _KEY_SHAPES.sub("***", text)
    expected = _SCHEME.sub(_scheme, expected)
    expected = _HEADER.sub(_header, expected)
    assert Redactor(environment=False).mask(text) == expected


def test_a_string_masked_again_is_masked_the_same_way():
    from agentgraph._util._redact import _MEMO_CHARS, _MEMO_SIZE
    from agentgraph.tracing import Redactor

    texts = [
        "node_started",
        "Bearer abcDEF123456789xyz",
        "X-API-Key: Zq81hd9ak2mz0",
        "call hunter22 at noon",
        KEY,
        "x" * _MEMO_CHARS + f" and {KEY}",  # too long to be remembered
    ]
    redactor = Redactor(secrets=["hunter22"], environment=False)
    first = [redactor.mask(t) for t in texts]
    again = [redactor.mask(t) for t in texts]
    fresh = [Redactor(secrets=["hunter22"], environment=False).mask(t) for t in texts]
    assert first == again == fresh
    assert KEY not in "".join(first) and "hunter22" not in "".join(first)
    for i in range(_MEMO_SIZE + 10):  # a full memory starts over rather than growing
        redactor.mask(f"name number {i}")
    assert redactor.mask(KEY) == fresh[4]
