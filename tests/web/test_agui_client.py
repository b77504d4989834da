"""The AG-UI endpoint driven by the protocol's official TypeScript client, `@ag-ui/client`.

A short Node script (tests/js/agui_client.mjs) runs each scenario against a
server started here on a loopback port and prints what the client saw; the
client checks every stream itself (one start, one end, events in order).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import orjson

from agentgraph import AgentContext, Graph, GraphBuilder, node
from agentgraph.llm import ChatRequest
from agentgraph.nodes import answer, chat
from agentgraph.testing import ScriptedModel
from tests.npm import JS, need_npm_package

from .support import ANSWER, agent, serving


def drive(url: str, scenario: str) -> dict[str, Any]:
    node_bin, _ = need_npm_package("@ag-ui/client")
    done = subprocess.run(
        [node_bin, str(JS / "agui_client.mjs"), url, scenario],
        capture_output=True,
        timeout=45,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return orjson.loads(done.stdout)


def waits_the_first_time() -> Graph[str, str]:
    """`before`, then `wait`, which hangs on its first run (until cancelled) and passes after."""
    tries: list[int] = []

    @node(name="before")
    async def before(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx.with_input(ctx.input + " before")

    @node(name="wait")
    async def wait(ctx: AgentContext[str]) -> AgentContext[str]:
        tries.append(1)
        if len(tries) == 1:
            await anyio.sleep_forever()
        return ctx.with_input(ctx.input + " after")

    with GraphBuilder[str, str]("waits") as g:
        g.start.edge_to(before).edge_to(wait).edge_to(g.finish)
    return g.build()


def test_the_official_client_approves_a_tool_call_and_the_run_goes_on(tmp_path: Path):
    with serving(agent(), tmp_path) as server:
        seen = drive(server.url + "agui", "approval")
    first, second = seen["first"], seen["second"]
    assert "rejected" not in first and "rejected" not in second, seen
    assert first["events"][0] == "RUN_STARTED" and first["events"][-1] == "RUN_FINISHED"
    assert first["outcome"] == "interrupt"
    assert seen["interrupt"]["reason"] == "tool_approval"
    assert second["outcome"] == "success" and second["result"] == ANSWER
    assert "TOOL_CALL_RESULT" in second["events"]


def test_the_official_client_resumes_a_run_it_left_and_reads_why_a_resume_failed(
    tmp_path: Path,
):
    with serving(waits_the_first_time(), tmp_path) as server:
        seen = drive(server.url + "agui", "disconnect")
    assert seen["cancelled"] is True
    assert "STEP_STARTED" in seen["left"]["events"]
    # An answer for a run that asked nothing: a whole run, ending in the reason.
    unasked = seen["unasked"]
    assert unasked["events"] == ["RUN_STARTED", "RUN_ERROR"], unasked
    assert "no question is waiting" in unasked["error"]["message"]
    # No payload: the cancelled run goes on from its last step and finishes.
    resumed = seen["resumed"]
    assert "rejected" not in resumed, resumed
    assert resumed["events"][0] == "RUN_STARTED" and resumed["events"][-1] == "RUN_FINISHED"
    assert resumed["outcome"] == "success" and resumed["result"] == "go before after"
    assert seen["finally"] == "ok"


def remembers() -> Graph[str, str]:
    """A chat whose model answers with what it was sent: the whole conversation it saw."""

    def reply(request: ChatRequest) -> str:
        return " | ".join(m.content for m in request.messages)

    talk = chat(ScriptedModel(reply, repeat=True), stream=True)
    reply_text = answer()
    with GraphBuilder[str, str]("remembers") as g:
        g.start.edge_to(talk).edge_to(reply_text).edge_to(g.finish)
    return g.build()


def test_the_official_client_continues_a_thread_across_two_requests(tmp_path: Path):
    with serving(remembers(), tmp_path) as server:
        seen = drive(server.url + "agui", "thread")
    first, second = seen["first"], seen["second"]
    assert "rejected" not in first and "rejected" not in second, seen
    assert first["result"] == "My name is Ann."
    # The second request resent the first turn: the model saw it once, with its answer.
    assert second["result"] == "My name is Ann. | My name is Ann. | What is my name?"
    assert ["assistant", "My name is Ann."] in seen["history"]


def team() -> Graph[str, str]:
    from agentgraph.teams import Agent, Handoff, swarm

    triage = ScriptedModel(ScriptedModel.tool_call("transfer_to_billing", task="refund order 7"))
    return swarm(
        [
            Agent("triage", triage, handoffs=[Handoff("billing", history="full")]),
            Agent("billing", ScriptedModel("Order 7 is refunded.")),
        ]
    )


def test_the_official_client_reads_a_teams_handoff_as_a_custom_event(tmp_path: Path):
    with serving(team(), tmp_path) as server:
        seen = drive(server.url + "agui", "handoff")
    run = seen["run"]
    assert "rejected" not in run, run
    assert run["outcome"] == "success" and run["result"] == "Order 7 is refunded."
    assert run["custom"] == [
        {
            "name": "agentgraph.handoff",
            "value": {
                "from": "triage",
                "to": "billing",
                "policy": "full",
                "messages": 3,
                "task": "refund order 7",
                "step": "handoff",
            },
        }
    ]
    assert run["events"].count("CUSTOM") == 1
