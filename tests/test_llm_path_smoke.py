"""The LLM-path benchmark runs end to end at tiny sizes; no timing is checked."""

import asyncio
import sys
import types

import pytest

from tests.helpers import load_benchmark

NEEDS = {
    "openai": ("openai",),
    "openai-httpx2": ("openai", "httpx2"),
    "openai-responses": ("openai",),
}


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("llm_path")


@pytest.fixture(scope="module")
def server(bench):
    from agentgraph.testing import FakeServer

    with FakeServer(responder=bench.respond, api_key=bench.API_KEY) as fake:
        yield fake


def _needs(name: str) -> None:
    for module in NEEDS.get(name, ()):
        pytest.importorskip(module)


def _measure(bench, server, name, *, runs, shards=2):
    server.reset()
    sizes = bench.Sizes(runs=runs, batches=1, warmup_runs=0, delay=0.0)
    pool = bench.Pool(shards=shards, connections=3)
    return asyncio.run(bench.measure(name, server.openai_url, sizes, pool))


@pytest.mark.parametrize("shards", [1, 2])
@pytest.mark.parametrize(
    "name",
    ["agentgraph", "httpx", "openai", "openai-httpx2", "agentgraph-responses", "openai-responses"],
)
def test_contender_runs_without_errors(bench, server, name, shards):
    _needs(name)
    result = _measure(bench, server, name, runs=5, shards=shards)
    (batch,) = result["batches"]
    assert batch["errors"] == 0, batch["first_error"]
    assert (batch["completed"], batch["wrong"]) == (5, 0)
    assert batch["requests"] == 5 * bench.REQUESTS_PER_RUN == len(server.requests)
    assert result["warmup"] is None and result["peak_rss_mib"] > 0


def _conversation(requests):
    """The chat bodies with tool call ids replaced by their order of appearance."""
    ids: dict[str, str] = {}

    def rename(call_id):
        return ids.setdefault(call_id, f"call-{len(ids)}")

    bodies = []
    for record in requests:
        body = dict(record.body)
        messages = []
        for message in body["messages"]:
            message = dict(message)
            if "tool_call_id" in message:
                message["tool_call_id"] = rename(message["tool_call_id"])
            if message.get("tool_calls"):
                message["tool_calls"] = [
                    {**call, "id": rename(call["id"])} for call in message["tool_calls"]
                ]
            messages.append(message)
        body["messages"] = messages
        bodies.append(body)
    return bodies


@pytest.mark.parametrize("name", ["httpx", "openai"])
def test_contenders_send_the_same_conversation(bench, server, name):
    _needs(name)
    _measure(bench, server, "agentgraph", runs=1)
    ours = _conversation(server.requests)
    _measure(bench, server, name, runs=1)
    theirs = _conversation(server.requests)
    assert len(ours) == bench.REQUESTS_PER_RUN
    assert theirs == ours
    assert [len(body["messages"]) for body in ours] == [2, 4, 6]


def test_responses_contenders_send_the_same_conversation(bench, server):
    _needs("openai-responses")

    def bodies():
        ids: dict[str, str] = {}
        out = []
        for record in server.requests:
            items = []
            for item in record.body["input"]:
                item = {k: v for k, v in item.items() if k != "id"}
                if "call_id" in item:
                    item["call_id"] = ids.setdefault(item["call_id"], f"call-{len(ids)}")
                items.append(item)
            out.append({**record.body, "input": items})
        return out

    _measure(bench, server, "agentgraph-responses", runs=1)
    ours = bodies()
    _measure(bench, server, "openai-responses", runs=1)
    assert bodies() == ours
    assert [len(body["input"]) for body in ours] == [1, 3, 5]
    assert ours[0]["store"] is False and ours[0]["tools"][0]["strict"] is True


def test_a_wrong_answer_is_counted(bench):
    async def sloppy(i):
        return "no idea", bench.REQUESTS_PER_RUN

    async def short(i):
        return bench.expected_answer(i), 1

    async def broken(i):
        raise RuntimeError("connection refused")

    assert asyncio.run(bench.run_batch(sloppy, 0, 2))["wrong"] == 2
    assert asyncio.run(bench.run_batch(short, 0, 2))["wrong"] == 2
    failed = asyncio.run(bench.run_batch(broken, 0, 2))
    assert (failed["errors"], failed["completed"]) == (2, 0)
    assert failed["first_error"] == "RuntimeError: connection refused"


def test_the_whole_benchmark_writes_only_its_section(bench, tmp_path):
    sizes = bench.Sizes(runs=3, batches=1, warmup_runs=2, delay=0.0)
    pool = bench.Pool(shards=2, connections=2)
    results = bench.run_all(["agentgraph", "httpx"], sizes, pool)
    for result in results:
        assert "error" not in result, result["error"]
        assert result["server"]["requests"] == 5 * bench.REQUESTS_PER_RUN
        summary = bench.summarize(result)
        assert summary["requests_agree"] and (summary["errors"], summary["wrong"]) == (0, 0)
    section = bench.render_section(results, sizes=sizes, pool=pool, load=(0.0, 0.0))
    assert section.startswith(bench.HEADING) and "| no errors, every final answer right" in section

    results_file = tmp_path / "RESULTS.md"
    results_file.write_text(
        "# Engine\n\nkept\n\n## LLM path\n\nold figures\n\n## RAG\n\nalso kept\n"
    )
    results_file.write_text(bench.replace_section(results_file.read_text(), section))
    text = results_file.read_text()
    assert "old figures" not in text and text.count(bench.HEADING) == 1
    assert text.startswith("# Engine\n\nkept\n\n## LLM path\n")
    assert text.endswith("\n## RAG\n\nalso kept\n")
    assert bench.replace_section("# Other\n", section) == "# Other\n\n" + section.rstrip() + "\n"


def test_the_extra_section_also_measures_an_mcp_tool_call(bench, monkeypatch):
    calls = []
    fake = types.ModuleType("_llm_path_mcp")
    fake.main = calls.append
    monkeypatch.setitem(sys.modules, "_llm_path_mcp", fake)
    monkeypatch.setattr(bench, "run_all", lambda names, sizes, pool: [])
    monkeypatch.setattr(bench, "render_section", lambda *a, **k: "## LLM path: extra\n")
    monkeypatch.setattr(bench, "publish", lambda *a, **k: None)
    bench.main(["--section", "extra", "--quick"])
    assert calls == [["--quick"]]
