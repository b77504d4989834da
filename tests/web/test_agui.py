"""The AG-UI endpoint on a real loopback server, read as raw SSE and checked with the SDK's models.

Each event is validated by `ag_ui.core`'s own pydantic models, and each
sequence against the protocol's rules: one run start and end, steps,
messages and tool calls opened before they are used and closed before the
run ends, state deltas that apply (as JSON Patch) to the snapshot.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import jsonpatch
import pytest

from agentgraph import AgentContext, CheckpointError, GraphBuilder, GraphRunner, node
from agentgraph.checkpoint import MemoryStore
from agentgraph.nodes import answer, chat
from agentgraph.testing import ScriptedModel
from agentgraph.web import RunInputError, WebServer, agui_app, dev_app

from .support import (
    ANSWER,
    QUESTION,
    SECRET,
    agent,
    agui_run,
    gated,
    run_input,
    serving,
    sse,
    stateful,
    user,
    wait_for,
)


def check_sequence(events: list[dict[str, Any]], known_calls: set[str] = frozenset()) -> None:
    """The protocol's ordering rules, as the TypeScript client's verifier applies them."""
    kinds = [e["type"] for e in events]
    assert kinds[0] == "RUN_STARTED"
    assert kinds[-1] in ("RUN_FINISHED", "RUN_ERROR")
    assert kinds.count("RUN_STARTED") == 1
    assert kinds.count("RUN_FINISHED") + kinds.count("RUN_ERROR") == 1
    steps: list[str] = []
    texts: set[str] = set()
    calls: set[str] = set()
    ended: set[str] = set(known_calls)
    for e in events:
        kind = e["type"]
        if kind == "STEP_STARTED":
            steps.append(e["stepName"])
        elif kind == "STEP_FINISHED":
            assert e["stepName"] in steps, e
            steps.remove(e["stepName"])
        elif kind == "TEXT_MESSAGE_START":
            assert e["messageId"] not in texts
            texts.add(e["messageId"])
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert e["messageId"] in texts and e["delta"], e
        elif kind == "TEXT_MESSAGE_END":
            texts.remove(e["messageId"])
        elif kind == "TOOL_CALL_START":
            assert not texts, "a text message is closed before a tool call starts"
            assert e["toolCallId"] not in calls
            calls.add(e["toolCallId"])
        elif kind == "TOOL_CALL_ARGS":
            assert e["toolCallId"] in calls, e
        elif kind == "TOOL_CALL_END":
            calls.remove(e["toolCallId"])
            ended.add(e["toolCallId"])
        elif kind == "TOOL_CALL_RESULT":
            assert e["toolCallId"] in ended, e
    assert not steps and not texts and not calls


def state_after(events: list[dict[str, Any]]) -> Any:
    """The state a client holds after applying the snapshot and every delta."""
    state: Any = None
    for e in events:
        if e["type"] == "STATE_SNAPSHOT":
            state = e["snapshot"]
        elif e["type"] == "STATE_DELTA":
            state = jsonpatch.apply_patch(state, e["delta"])
    return state


def test_a_run_streams_text_tool_calls_an_interrupt_and_resumes(tmp_path):
    with serving(agent(), tmp_path) as server, httpx.Client(base_url=server.url) as client:
        first = agui_run(client, run_input("run-a", user(QUESTION)))
        check_sequence(first)
        finished = first[-1]
        assert finished["type"] == "RUN_FINISHED"
        interrupt = finished["outcome"]["interrupts"][0]
        assert finished["outcome"]["type"] == "interrupt"
        assert interrupt["reason"] == "tool_approval"
        assert interrupt["id"] == "run-a"
        assert interrupt["metadata"]["question"]["name"] == "book_table"
        calls = {
            e["toolCallId"]: e["toolCallName"] for e in first if e["type"] == "TOOL_CALL_START"
        }
        assert sorted(calls.values()) == ["book_table", "weather"]
        assert interrupt["toolCallId"] in calls
        results = [e for e in first if e["type"] == "TOOL_CALL_RESULT"]
        assert [r["content"] for r in results] == [
            "sunny in Paris, 21 degrees (fetched with key ***)"
        ]
        assert SECRET not in str(first)
        steps = [e["stepName"] for e in first if e["type"] == "STEP_STARTED"]
        assert steps == ["user_turn", "chat", "tools", "chat", "tools"]

        resume = {"interruptId": interrupt["id"], "status": "resolved", "payload": True}
        second = agui_run(client, run_input("run-a-2", resume=[resume]))
        check_sequence(second, known_calls=set(calls))
        assert second[0]["runId"] == "run-a-2"
        assert second[-1]["type"] == "RUN_FINISHED" and second[-1]["result"] == ANSWER
        booked = [e["content"] for e in second if e["type"] == "TOOL_CALL_RESULT"]
        assert booked == ["booked a table for 2 in Paris"]
        # The answer streamed in pieces (the scripted model sends 5 characters at a time).
        pieces = [e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT"]
        assert len(pieces) > 3 and "".join(pieces) == ANSWER


def test_a_refused_approval_goes_back_to_the_model(tmp_path):
    with serving(agent(stream=False), tmp_path) as server, httpx.Client(base_url=server.url) as c:
        first = agui_run(c, run_input("run-r", user(QUESTION)))
        interrupt = first[-1]["outcome"]["interrupts"][0]
        cancelled = {"interruptId": interrupt["id"], "status": "cancelled"}
        second = agui_run(c, run_input("run-r-2", resume=[cancelled]))
        check_sequence(second, known_calls={interrupt["toolCallId"]})
        refused = [e["content"] for e in second if e["type"] == "TOOL_CALL_RESULT"]
        assert refused == ["the call to tool 'book_table' was refused by the user"]
        # Not streamed: the whole answer is one content event.
        assert [e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT"] == [ANSWER]


def test_the_clients_messages_and_state_are_the_runs_context(tmp_path):
    messages = (
        user("first", "u1"),
        {"id": "a1", "role": "assistant", "content": "an answer"},
        user("second", "u2"),
    )
    body = run_input("run-s", *messages, state={"theme": "dark"})
    with serving(stateful(), tmp_path) as server, httpx.Client(base_url=server.url) as client:
        events = agui_run(client, body)
    check_sequence(events)
    assert events[1] == {"type": "STATE_SNAPSHOT", "snapshot": {"theme": "dark"}}
    deltas = [e["delta"] for e in events if e["type"] == "STATE_DELTA"]
    assert len(deltas) == 2
    assert state_after(events) == {
        "theme": "dark",
        "seen": ["first", "an answer"],
        "count": 2,
        "done": True,
    }
    assert events[-1]["result"] == "2 earlier messages"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "not an AG-UI RunAgentInput"),
        (b'{"threadId": "t", "runId": "x"}', "not an AG-UI RunAgentInput"),
        (run_input("x"), "must end with a user message"),
        (
            run_input("x", user("hi"), {"id": "a", "role": "assistant", "content": "yo"}),
            "must end with a user message",
        ),
        (run_input("x", user("hi"), state=[1, 2]), "state must be a JSON object"),
        (
            run_input(
                "x",
                {
                    "id": "u",
                    "role": "user",
                    "content": [{"type": "image", "source": {"type": "url", "value": "http://x"}}],
                },
            ),
            "only text is supported",
        ),
        (run_input("", user("hi")), "a run id is 1 to 128 printable characters"),
        (
            run_input(
                "x",
                user("hi"),
                {"id": "t", "role": "tool", "toolCallId": "c1", "content": "x"},
                user("and?"),
            ),
            "message 1 breaks the rule 'result-without-call'",
        ),
        (
            run_input("x", resume=[{"interruptId": "nope", "status": "resolved"}]),
            "no run 'nope' in the store",
        ),
    ],
)
def test_a_request_that_cannot_run_is_refused_with_the_reason(tmp_path, body, reason):
    with serving(stateful(), tmp_path) as server, httpx.Client(base_url=server.url) as client:
        content = body if isinstance(body, bytes) else None
        response = client.post("agui", content=content, json=None if content else body)
        assert response.status_code == 422
        assert reason in response.json()["error"]
        assert client.get("api/runs").json()["runs"] == []


def test_a_run_id_is_used_once(tmp_path):
    with serving(stateful(), tmp_path) as server, httpx.Client(base_url=server.url) as client:
        agui_run(client, run_input("same", user("hi")))
        again = client.post("agui", json=run_input("same", user("hi")))
        assert again.status_code == 422
        assert "run id 'same' is taken" in again.json()["error"]


def test_a_failing_run_ends_with_run_error(tmp_path):
    @node(name="boom")
    async def boom(ctx: AgentContext[str]) -> AgentContext[str]:
        raise ValueError(f"the service said no (key {SECRET})")

    with GraphBuilder[str, str]("failing") as g:
        g.start.edge_to(boom).edge_to(g.finish)
    with serving(g.build(), tmp_path) as server, httpx.Client(base_url=server.url) as client:
        events = agui_run(client, run_input("run-f", user("hi")))
    check_sequence(events)
    error = events[-1]
    assert error["type"] == "RUN_ERROR" and error["code"] == "NodeFailed"
    assert "the service said no" in error["message"]
    assert SECRET not in str(events)


def read_until_step(events: Iterator[dict[str, Any]], name: str) -> None:
    for event in events:
        if event["type"] == "STEP_STARTED" and event["stepName"] == name:
            return
    raise AssertionError(f"no step {name!r} started")


def test_a_client_that_leaves_cancels_its_run_which_can_resume(tmp_path):
    graph, gate = gated()
    with serving(graph, tmp_path) as server, httpx.Client(base_url=server.url) as client:
        with client.stream("POST", "agui", json=run_input("run-c", user("go"))) as response:
            read_until_step(sse(response.iter_lines()), "wait")
        # The client is gone: its run ends GraphCancelled, with the context it had.
        view = wait_for(client, "run-c", "cancelled")
        assert view["status"] == "cancelled"
        assert [s["path"] for s in view["steps"]] == [["before"], ["wait"]]
        assert view["steps"][0]["output"] == "go before"
        seen = list(sse(client.get("api/runs/run-c/events").iter_lines()))
        assert seen[-1]["type"] == "RUN_FINISHED"
        assert seen[-1]["outcome"] == {"type": "cancelled"}
        gate["closed"] = False
        resumed = client.post("api/runs/run-c/resume", json={})
        assert resumed.status_code == 200
        view = wait_for(client, "run-c", "ok")
        assert view["output"] == "go before after"


def cancel_by_leaving(client: httpx.Client, run_id: str) -> None:
    with client.stream("POST", "agui", json=run_input(run_id, user("go"))) as response:
        read_until_step(sse(response.iter_lines()), "wait")
    assert wait_for(client, run_id, "cancelled")["status"] == "cancelled"


def test_a_run_cancelled_by_its_client_resumes_over_agui_with_no_payload(tmp_path):
    graph, gate = gated()
    with serving(graph, tmp_path) as server, httpx.Client(base_url=server.url) as client:
        cancel_by_leaving(client, "run-l")
        gate["closed"] = False
        entry = {"interruptId": "run-l", "status": "resolved"}
        events = agui_run(client, run_input("run-l-2", resume=[entry]))
    check_sequence(events)
    assert events[0]["runId"] == "run-l-2"
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["result"] == "go before after"
    assert [e["stepName"] for e in events if e["type"] == "STEP_STARTED"] == ["wait"]


def test_a_resume_that_cannot_start_is_a_whole_run_ending_in_its_error(tmp_path):
    graph, _ = gated()
    with serving(graph, tmp_path) as server, httpx.Client(base_url=server.url) as client:
        cancel_by_leaving(client, "run-e")
        # An answer for a run that asked nothing: refused by the record, after the
        # earlier (cancelled) segment's events, which must not stand in for this start.
        entry = {"interruptId": "run-e", "status": "resolved", "payload": True}
        events = agui_run(client, run_input("run-e-2", resume=[entry]))
    check_sequence(events)
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert events[0]["runId"] == "run-e-2"
    assert "no question is waiting" in events[-1]["message"]


class BrokenStore(MemoryStore):
    async def load(self, run_id: str):
        raise OSError("the disk is gone")


def test_a_store_that_fails_before_a_run_begins_still_gives_a_whole_run():
    app = agui_app(stateful(), store=BrokenStore())
    entry = {"interruptId": "x", "status": "resolved"}
    with WebServer(app) as server, httpx.Client(base_url=server.url) as client:
        events = agui_run(client, run_input("x-2", resume=[entry]), url="")
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert events[-1]["code"] == "OSError" and "the disk is gone" in events[-1]["message"]


class FailedStore(MemoryStore):
    """A store whose database is gone: every read fails as the stores say it, with a key."""

    async def load(self, run_id: str):
        raise CheckpointError(f"the database is gone (key {SECRET})")

    async def load_thread(self, thread_id: str):
        raise CheckpointError(f"the database is gone (key {SECRET})")


@pytest.mark.parametrize("thread", [None, "t-1"])
def test_a_page_run_the_store_cannot_start_is_a_503_with_the_masked_reason(thread):
    app = dev_app(stateful(), store=FailedStore())
    with WebServer(app) as server, httpx.Client(base_url=server.url) as client:
        started = client.post("api/runs", json={"input": "hi", "thread": thread})
        resumed = client.post("api/runs/gone/resume", json={})
        events = agui_run(client, {**run_input("run-f", user("hi")), "threadId": thread or "t"})
        listed = client.get("api/runs")
    for response in (started, resumed):
        assert response.status_code == 503, response.text
        body = response.json()
        assert body["code"] == "CheckpointError"
        assert body["error"] == "CheckpointError: the database is gone (key ***)"
    # The AG-UI endpoint frames the same failure as a whole run ending in its error.
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert events[-1]["code"] == "CheckpointError" and SECRET not in str(events)
    assert listed.status_code == 200


def test_a_watcher_that_leaves_does_not_cancel(tmp_path):
    graph, gate = gated()
    with serving(graph, tmp_path) as server, httpx.Client(base_url=server.url) as client:
        run_id = client.post("api/runs", json={"input": "go"}).json()["id"]
        with client.stream("GET", f"api/runs/{run_id}/events") as response:
            read_until_step(sse(response.iter_lines()), "wait")
        time.sleep(0.2)
        assert client.get(f"api/runs/{run_id}").json()["status"] == "running"
        gate["closed"] = False
        assert wait_for(client, run_id, "ok")["output"] == "go before after"


def test_every_watcher_sees_the_same_events(tmp_path):
    graph, gate = gated()
    with serving(graph, tmp_path) as server, httpx.Client(base_url=server.url) as client:
        run_id = client.post("api/runs", json={"input": "go"}).json()["id"]
        seen: list[list[dict[str, Any]]] = []
        with (
            client.stream("GET", f"api/runs/{run_id}/events") as one,
            client.stream("GET", f"api/runs/{run_id}/events") as two,
        ):
            events_one = sse(one.iter_lines())
            read_until_step(events_one, "wait")
            gate["closed"] = False
            rest_one = list(events_one)
            rest_two = list(sse(two.iter_lines()))
        seen = [rest_one, rest_two]
        late = list(sse(client.get(f"api/runs/{run_id}/events").iter_lines()))
    assert seen[0][-1]["type"] == "RUN_FINISHED"
    check_sequence(seen[1])
    assert late == seen[1]
    # The first watcher read the start itself; what followed is the same for both.
    assert seen[1][-len(seen[0]) :] == seen[0]


def test_the_agui_app_alone_serves_at_its_root(tmp_path):
    app = agui_app(stateful(), runner=GraphRunner())
    with WebServer(app) as server, httpx.Client(base_url=server.url) as client:
        events = agui_run(client, run_input("solo", user("hi")), url="")
        assert client.get("").status_code == 405
    check_sequence(events)
    assert events[-1]["result"] == "0 earlier messages"


def test_a_server_without_a_store_cannot_resume(tmp_path):
    app = agui_app(stateful())
    body = run_input("x", resume=[{"interruptId": "x", "status": "resolved", "payload": True}])
    with WebServer(app) as server, httpx.Client(base_url=server.url) as client:
        response = client.post("", json=body)
    assert response.status_code == 422
    assert "no checkpoint store" in response.json()["error"]


def test_runs_are_listed_with_an_in_memory_store():
    app = dev_app(stateful(), store=MemoryStore())
    with WebServer(app) as server, httpx.Client(base_url=server.url) as client:
        run_id = client.post("api/runs", json={"input": "hi"}).json()["id"]
        wait_for(client, run_id, "ok")
        listed = client.get("api/runs").json()["runs"]
    assert [(r["id"], r["status"], r["source"]) for r in listed] == [(run_id, "ok", "live")]


def test_a_secret_streamed_in_pieces_is_never_sent_even_in_part(tmp_path):
    text = f"Here is the key {SECRET} for you."
    model = ScriptedModel(text, chunk_size=3)
    with GraphBuilder[str, str]("streamer") as g:
        g.start.edge_to(chat(model, stream=True)).edge_to(answer()).edge_to(g.finish)
    with serving(g.build(), tmp_path) as server, httpx.Client(base_url=server.url) as client:
        events = agui_run(client, run_input("run-k", user("the key?")))
    check_sequence(events)
    deltas = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert len(deltas) > 3
    assert "".join(deltas) == "Here is the key *** for you."
    assert not any(piece in str(events) for piece in ("sk-", "Q7xQ7x"))


def test_the_page_api_rejects_a_call_with_a_reason_the_model_reads(tmp_path):
    with serving(agent(stream=False), tmp_path) as server, httpx.Client(base_url=server.url) as c:
        run_id = c.post("api/runs", json={"input": QUESTION}).json()["id"]
        view = wait_for(c, run_id, "interrupted")
        assert view["question"]["name"] == "book_table"
        refused = c.post(
            f"api/runs/{run_id}/resume", json={"approve": False, "reason": "not today"}
        )
        assert refused.status_code == 200
        view = wait_for(c, run_id, "ok")
    results = [t["result"] for s in view["steps"] for t in s["tool_calls"]]
    assert "the call to tool 'book_table' was refused by the user: not today" in results


def test_the_page_api_refuses_what_cannot_work(tmp_path):
    graph, gate = gated()
    with serving(graph, tmp_path) as server, httpx.Client(base_url=server.url) as c:
        assert c.post("api/runs", json={"input": " "}).status_code == 422
        assert (
            c.post("api/runs", content=b"[1")
            .json()["error"]
            .startswith("cannot run this request: the request body is not JSON")
        )
        run_id = c.post("api/runs", json={"input": "go"}).json()["id"]
        busy = c.post(f"api/runs/{run_id}/resume", json={})
        assert busy.status_code == 422 and "still running" in busy.json()["error"]
        assert c.post(f"api/runs/{run_id}/resume", json=[1]).status_code == 422
        for url in ("api/runs/nope", "api/runs/nope/events"):
            assert c.get(url).status_code == 404
        assert c.post("api/runs/nope/cancel").status_code == 404
        gate["closed"] = False
        wait_for(c, run_id, "ok")
        assert c.post(f"api/runs/{run_id}/cancel").status_code == 404  # over already
        done = c.post(f"api/runs/{run_id}/resume", json={})
        assert done.status_code == 422 and "nothing to resume" in done.json()["error"]
        assert c.get(f"api/runs/{run_id}").json()["status"] == "ok"


def test_a_broken_client_history_is_repaired_when_asked_and_the_changes_are_kept():
    from ag_ui.core import RunAgentInput

    from agentgraph import Message, ToolCall
    from agentgraph.web import context_from_input

    called = {
        "id": "a",
        "role": "assistant",
        "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    body = RunAgentInput.model_validate(
        run_input(
            "x", user("hi"), called, {"id": "r", "role": "reasoning", "content": "hm"}, user("and?")
        )
    )
    with pytest.raises(RunInputError, match="message 3 breaks the rule 'missing-result'"):
        context_from_input(body)
    ctx = context_from_input(body, repair=True)
    assert ctx.input == "and?"
    assert ctx.history[1] == Message.assistant(tool_calls=(ToolCall("c1", "f", {}),))
    assert ctx.history[2].tool_call_id == "c1" and ctx.history[2].is_error
    assert ctx.state["transcript_repairs"] == [
        {"message": 1, "action": "added-result", "detail": "call 'c1' (f) had no result"}
    ]
