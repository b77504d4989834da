"""The AG-UI translation on its own, fed by a real run: text beside tool calls, failures."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from agentgraph import AgentContext, GraphRunner, NodeFailed
from agentgraph.nodes import chat
from agentgraph.testing import ScriptedModel
from agentgraph.tracing import Redactor
from agentgraph.web import AguiTranslator

from .support import EVENTS
from .test_agui import check_sequence

pytestmark = pytest.mark.anyio


async def translate(node: Any) -> list[dict[str, Any]]:
    translator = AguiTranslator(thread_id="t", run_id="r", redactor=Redactor())
    sent: list[dict[str, Any]] = []

    def sink(event: object) -> None:
        sent.extend(e.model_dump(mode="json", by_alias=True) for e in translator(event))

    with contextlib.suppress(NodeFailed):  # a failing run still sends its events
        await GraphRunner(sinks=[sink]).run(node, AgentContext("hi"))
    for event in sent:
        EVENTS.validate_python(event)
    return sent


@pytest.mark.parametrize("stream", [True, False])
async def test_text_beside_a_tool_call_ends_before_the_call_starts(stream):
    reply = ScriptedModel.tool_calls(("lookup", {"q": "x"}), content="Let me look that up.")
    events = await translate(chat(ScriptedModel(reply, chunk_size=4), stream=stream))
    check_sequence(events)
    kinds = [e["type"] for e in events if e["type"].startswith(("TEXT", "TOOL"))]
    assert kinds.index("TEXT_MESSAGE_END") < kinds.index("TOOL_CALL_START")
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "Let me look that up."
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    message = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
    assert start["parentMessageId"] == message["messageId"]


async def test_a_failed_streamed_step_closes_its_message_and_step():
    broken = ScriptedModel(ValueError("the model broke"))
    events = await translate(chat(broken, stream=True))
    check_sequence(events)
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "NodeFailed"
    assert [e["type"] for e in events[-3:-1]] == ["STEP_STARTED", "STEP_FINISHED"]


async def test_a_handoff_is_a_custom_event_with_the_task_masked():
    from agentgraph.teams import Agent, Handoff, swarm

    key = "sk-test-0123456789abcdefghijklmnop"
    team = swarm(
        [
            Agent(
                "triage",
                ScriptedModel(ScriptedModel.tool_call("transfer_to_billing", task=f"refund {key}")),
                handoffs=[Handoff("billing", history="none")],
            ),
            Agent("billing", ScriptedModel("Refunded.")),
        ]
    )
    sent = await translate(team)
    (custom,) = [e for e in sent if e["type"] == "CUSTOM"]
    assert custom == {
        "type": "CUSTOM",
        "name": "agentgraph.handoff",
        "value": {
            "from": "triage",
            "to": "billing",
            "policy": "none",
            "messages": 1,
            "task": "refund ***",
            "step": "handoff",
        },
    }
    at = sent.index(custom)
    assert sent[at - 1] == {"type": "STEP_STARTED", "stepName": "handoff"}
    assert sent[at + 1]["type"] == "STATE_DELTA"  # the team state: billing holds it now
    assert sent[at + 2] == {"type": "STEP_FINISHED", "stepName": "handoff"}
