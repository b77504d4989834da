"""The live page in a real browser: Debian's Chromium, driven by Playwright, on a loopback server.

`AGENTGRAPH_WEB_SCREENSHOT=path` keeps the first test's screenshot there
(`make web-screenshot` refreshes the README's picture that way); otherwise
it goes to a temporary folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from agentgraph import AgentContext, GraphRunner
from agentgraph.tracing import JsonlSink, load_traces

from .browser import browser, need_chromium, open_page, start_run
from .support import ANSWER, QUESTION, SECRET, agent, gated, serving, stateful, wait_for

pytestmark = pytest.mark.timeout(120)


def test_a_person_watches_a_run_approves_a_tool_call_and_sees_the_answer(tmp_path):
    need_chromium()
    shot = Path(os.environ.get("AGENTGRAPH_WEB_SCREENSHOT") or tmp_path / "page.png")
    with serving(agent(), tmp_path) as server, browser(tmp_path / "profile") as (page, _):
        open_page(page, server.url)
        assert page.locator("#graph-box g.box[data-node='tools']").count() == 1
        start_run(page, QUESTION)
        # The steps appear while the run goes on, then it stops for approval.
        page.wait_for_selector("#step-list details.step")
        page.wait_for_selector("#interrupt:not([hidden])")
        assert "book_table" in page.inner_text("#question")
        assert page.get_attribute("body", "data-status") == "interrupted"
        page.click("#approve")
        page.wait_for_selector("body[data-status='ok']", state="attached")
        page.wait_for_selector("#answer-box:not([hidden])")
        assert page.inner_text("#answer") == ANSWER
        assert page.text_content("#live-text") == ANSWER  # streamed, then hidden
        for name in ("user_turn", "chat", "tools", "answer"):
            ran = page.locator(f"#graph-box g.box.status-ran[data-node='{name}']")
            assert ran.count() == 1, name
        assert page.locator("#graph-box g.box.status-idle[data-node='final_chat']").count() == 1
        assert page.locator("#graph-box path.edge-taken").count() >= 5
        steps = page.locator("#step-list details.step").count()
        # user_turn, chat, tools, chat, tools (stopped for approval), tools again, chat, answer
        assert steps == 8
        assert page.locator("#step-list details.step .st-interrupted").count() == 1
        assert page.locator("#timeline-box svg .row").count() == steps
        # Tool input and output are on the page, the planted secret is not.
        html = page.content()
        assert "fetched with key ***" in html
        assert "booked a table for 2 in Paris" in html
        assert SECRET not in html
        page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000


def test_the_active_node_lights_up_and_every_tab_sees_the_same_run(tmp_path):
    need_chromium()
    graph, gate = gated()
    with serving(graph, tmp_path) as server, browser(tmp_path / "profile") as (one, two):
        open_page(one, server.url)
        run_id = start_run(one, "go")
        one.wait_for_selector("#graph-box g.box.active[data-node='wait']")
        open_page(two, server.url)
        two.click(f"#runs li[data-run='{run_id}']")
        two.wait_for_selector("#graph-box g.box.active[data-node='wait']")
        gate["closed"] = False
        for tab in (one, two):
            tab.wait_for_selector("body[data-status='ok']", state="attached")
            tab.wait_for_selector("#answer-box:not([hidden])")
            assert tab.inner_text("#answer") == "go before after"
            assert tab.locator("#graph-box g.box.active").count() == 0
        assert one.get_attribute("body", "data-events") == two.get_attribute("body", "data-events")


def test_a_run_is_cancelled_from_the_page(tmp_path):
    need_chromium()
    graph, _ = gated()
    with serving(graph, tmp_path) as server, browser(tmp_path / "profile") as (page, _):
        open_page(page, server.url)
        start_run(page, "go")
        page.wait_for_selector("#graph-box g.box.active[data-node='wait']")
        page.click("#cancel")
        page.wait_for_selector("body[data-status='cancelled']", state="attached")
        assert page.locator("#step-list details.step").count() == 2


def test_past_runs_open_from_the_store_and_from_a_trace_file(tmp_path):
    trace_file = tmp_path / "earlier.jsonl"
    with JsonlSink(trace_file) as sink:
        GraphRunner(sinks=[sink]).run_sync(stateful(), AgentContext("from a trace"))
    traces = load_traces(trace_file)
    # A first server records a run in the store; a second one, on the same file, lists it.
    with serving(stateful(), tmp_path) as server, httpx.Client(base_url=server.url) as client:
        run_id = client.post("api/runs", json={"input": "stored"}).json()["id"]
        assert wait_for(client, run_id, "ok")["status"] == "ok"
    need_chromium()
    with (
        serving(stateful(), tmp_path, traces=traces) as server,
        browser(tmp_path / "profile") as (page, _),
    ):
        open_page(page, server.url)
        stored = page.locator(f"#runs li[data-run='{run_id}']")
        assert "store" in stored.inner_text()
        stored.click()
        page.wait_for_selector(f"body[data-run='{run_id}'][data-status='ok']", state="attached")
        assert page.locator("#step-list details.step").count() == 2
        traced = page.locator(f"#runs li[data-run='{traces[0].run}']")
        assert "trace" in traced.inner_text()
        traced.click()
        page.wait_for_selector(f"body[data-run='{traces[0].run}']", state="attached")
        page.wait_for_function("document.body.getAttribute('data-steps') === '2'")
        assert page.locator("#graph-box g.box.status-ran[data-node='count']").count() == 1


def test_runs_are_told_apart_and_the_page_says_the_model_is_scripted(tmp_path):
    need_chromium()
    graph, gate = gated()
    with serving(graph, tmp_path) as server, browser(tmp_path / "profile") as (page, _):
        open_page(page, server.url)
        # gated() asks no model: no banner.
        assert page.locator("#offline").count() == 0
        assert page.locator("#cancel").is_hidden()  # nothing runs yet
        first = start_run(page, "the first question")
        page.wait_for_selector("#graph-box g.box.active[data-node='wait']")
        assert page.locator("#cancel").is_visible()
        assert page.inner_text("#run-question") == "the first question"
        gate["closed"] = False
        page.wait_for_selector("body[data-status='ok']", state="attached")
        assert page.locator("#cancel").is_hidden()
        page.fill("#run-input", "the second question")
        page.click("#start")
        page.wait_for_function(f"document.body.getAttribute('data-run') !== '{first}'")
        second = page.get_attribute("body", "data-run")
        page.wait_for_selector(f"body[data-run='{second}'][data-status='ok']", state="attached")
        page.wait_for_function("document.querySelectorAll('#runs li').length === 2")
        rows = [page.inner_text(f"#runs li[data-run='{rid}']") for rid in (first, second)]
        assert "the first question" in rows[0] and "the second question" in rows[1]
        # The part of the id that differs is shown, with the time the run started.
        assert first[-1] in rows[0].split()[0] and second[-1] in rows[1].split()[0]
        assert rows[0].split()[0] != rows[1].split()[0]
        assert ":" in rows[0]  # hh:mm:ss

    with serving(agent(), tmp_path) as server, browser(tmp_path / "profile2") as (page, _):
        open_page(page, server.url)
        assert "offline scripted" in page.inner_text("#offline")


def test_a_teams_handoff_shows_in_the_run_view(tmp_path):
    from agentgraph.teams import Agent, Handoff, swarm
    from agentgraph.testing import ScriptedModel

    need_chromium()
    triage = ScriptedModel(ScriptedModel.tool_call("transfer_to_billing", task="refund order 7"))
    team = swarm(
        [
            Agent("triage", triage, handoffs=[Handoff("billing", history="full")]),
            Agent("billing", ScriptedModel("Order 7 is refunded.")),
        ]
    )
    with serving(team, tmp_path) as server, browser(tmp_path / "profile") as (page, _):
        open_page(page, server.url)
        start_run(page, "Please refund order 7.")
        page.wait_for_selector("body[data-status='ok']", state="attached")
        page.wait_for_selector("#step-list span.handoff")
        shown = page.locator("#step-list span.handoff").all_inner_texts()
        assert [s.strip() for s in shown] == [
            "⇄ handoff triage → billing · full · 3 messages · task: refund order 7"
        ]
        assert page.locator("#timeline-box svg path.handoff").count() == 1


def test_the_page_reads_its_input_as_the_command_line_does_and_asks_for_nothing_missing(
    tmp_path,
):
    from agentgraph import GraphBuilder, node
    from agentgraph._cli import parse_input

    @node(name="describe")
    def describe(ctx: AgentContext[object]) -> AgentContext[str]:
        return ctx.with_input(f"{type(ctx.input).__name__}: {ctx.input!r}")

    with GraphBuilder[object, str]("describe") as g:
        g.start.edge_to(describe).edge_to(g.finish)
    graph = g.build()

    need_chromium()
    missing: list[str] = []
    with serving(graph, tmp_path) as server, browser(tmp_path / "profile") as (page, _):
        page.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
        open_page(page, server.url)
        assert page.get_attribute("link[rel='icon']", "href").startswith("data:image/svg+xml")
        previous = ""
        with httpx.Client(base_url=server.url) as client:
            for typed in ('"quoted text"', "[1, 2]", "42", "plain words", '{"a": 1}'):
                page.fill("#run-input", typed)
                page.click("#start")
                page.wait_for_function(
                    f"(document.body.getAttribute('data-run') || '') !== '{previous}'"
                )
                previous = run_id = page.get_attribute("body", "data-run")
                value = parse_input(typed)  # what `agentgraph run --input` runs on
                assert wait_for(client, run_id, "ok")["output"] == (
                    f"{type(value).__name__}: {value!r}"
                )
            refused = client.post("api/runs", json={"input": '{"a": '})
            assert refused.status_code == 422
            assert "looks like JSON but does not parse" in refused.text
    assert missing == []
