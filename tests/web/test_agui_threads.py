"""AG-UI runs are turns of the thread the client names; a history that differs forks it."""

from pathlib import Path

import anyio
import httpx

from agentgraph.checkpoint import SQLiteStore, read_thread
from tests.web.test_agui_client import remembers

from .support import agui_run, serving, user


def body(run_id, *messages, thread="t-1"):
    return {"threadId": thread, "runId": run_id, "messages": list(messages)}


def assistant(text, message_id):
    return {"id": message_id, "role": "assistant", "content": text}


def result(events):
    return next(e for e in events if e["type"] == "RUN_FINISHED")["result"]


def test_a_client_history_that_differs_forks_the_thread_at_the_first_difference(tmp_path: Path):
    with serving(remembers(), tmp_path) as server, httpx.Client(base_url=server.url) as client:
        agui_run(client, body("r1", user("a", "u1")))
        agui_run(client, body("r2", user("a", "u1"), assistant("a", "m1"), user("b", "u2")))
        # The client edited its second message: the thread goes on from its first answer.
        edited = agui_run(
            client, body("r3", user("a", "u1"), assistant("a", "m1"), user("B!", "u2"))
        )
        assert result(edited) == "a | a | B!"
        # A client that sends only its new message continues the thread.
        alone = agui_run(client, body("r4", user("c", "u3")))
        assert result(alone) == "a | a | B! | a | a | B! | c"

    async def stored():
        async with SQLiteStore(tmp_path / "runs.db") as store:
            thread = await read_thread(store, "t-1")
            # The branch left behind is still a turn of the thread, readable by its run id.
            old = await read_thread(store, "t-1", run_id="r2")
            return thread, old

    thread, old = anyio.run(stored)
    assert [m.content for m in old.messages] == ["a", "a", "b", "a | a | b"]
    assert thread.head == "r4" and "r2" in [run for run, _ in thread.runs]


def test_a_run_on_a_busy_thread_ends_in_thread_busy(tmp_path: Path):
    from .support import gated

    graph, gate = gated()
    with serving(graph, tmp_path) as server, httpx.Client(base_url=server.url) as client:
        with client.stream("POST", "agui", json=body("b1", user("x"))) as first:
            lines = first.iter_lines()
            next(lines)
            events = agui_run(client, body("b2", user("y")))
            gate["closed"] = False
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "ThreadBusy"


def test_a_page_run_on_a_busy_thread_is_refused(tmp_path: Path):
    from .support import gated

    graph, gate = gated()
    with serving(graph, tmp_path) as server, httpx.Client(base_url=server.url) as client:
        first = client.post("api/runs", json={"input": "x", "thread": "t-1"})
        assert first.status_code == 200
        busy = client.post("api/runs", json={"input": "y", "thread": "t-1"})
        gate["closed"] = False
    assert busy.status_code == 409 and "thread 't-1' is busy" in busy.json()["error"]
