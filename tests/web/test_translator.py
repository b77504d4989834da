"""The AG-UI translation on its own, fed by a real run: text beside tool calls, failures."""

from __future__ import annotations

import contextlib
from typing import Any

import attrs
import jsonpatch
import orjson
import pytest
from ag_ui.core import BaseEvent

from agentgraph import AgentContext, GraphBuilder, GraphRunner, NodeFailed, NodeFinished, node
from agentgraph.nodes import chat
from agentgraph.testing import ScriptedModel
from agentgraph.tracing import Redactor
from agentgraph.tracing._records import plain
from agentgraph.web import AguiTranslator

from .support import EVENTS, SECRET
from .test_agui import check_sequence

pytestmark = pytest.mark.anyio


async def translate(node: Any) -> list[dict[str, Any]]:
    translator = AguiTranslator(thread_id="t", run_id="r", redactor=Redactor())
    sent: list[dict[str, Any]] = []

    def sink(event: object) -> None:
        sent.extend(translator.data(event))

    with contextlib.suppress(NodeFailed):  # a failing run still sends its events
        await GraphRunner(sinks=[sink]).run(node, AgentContext("hi"))
    for event in sent:
        # Built without the models, the data is what the official models serialize to.
        assert EVENTS.validate_python(event).model_dump(mode="json", by_alias=True) == event
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


async def test_a_nodes_custom_data_is_a_custom_event_of_its_name_masked():
    from agentgraph import Runtime

    key = "sk-test-0123456789abcdefghijklmnop"

    @node(name="work")
    async def work(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        await rt.emit_custom({"progress": 0.5, "note": f"using {key}"}, name="progress")
        await rt.emit_custom("done")
        return ctx

    with GraphBuilder[str, str]("custom") as g:
        g.start.edge_to(work).edge_to(g.finish)
    sent = await translate(g.build())
    check_sequence(sent)
    customs = [e for e in sent if e["type"] == "CUSTOM"]
    assert customs == [
        {"type": "CUSTOM", "name": "progress", "value": {"progress": 0.5, "note": "using ***"}},
        {"type": "CUSTOM", "name": "custom", "value": "done"},
    ]
    at = sent.index(customs[0])
    assert sent[at - 1] == {"type": "STEP_STARTED", "stepName": "work"}


async def test_the_translator_gives_the_official_models_too():
    translator = AguiTranslator(thread_id="t", run_id="r", redactor=Redactor())
    models: list[Any] = []
    data: list[dict[str, Any]] = []
    twin = AguiTranslator(thread_id="t", run_id="r", redactor=Redactor())

    def sink(event: object) -> None:
        models.extend(translator(event))
        data.extend(twin.data(event))

    reply = ScriptedModel.tool_calls(("lookup", {"q": "x"}), content="Looking.")
    await GraphRunner(sinks=[sink]).run(chat(ScriptedModel(reply)), AgentContext("hi"))
    assert all(isinstance(m, BaseEvent) for m in models)
    assert [m.model_dump(mode="json", by_alias=True) for m in models] == data


@attrs.frozen
class Point:
    x: int
    y: int


STATES: list[dict[str, Any]] = [
    {"count": 0, "keep": "same", "nested": {"a": [1, 2], "b": {"c": True}}},
    {"count": 1, "keep": "same", "nested": {"a": [1, 2], "b": {"c": True}}},
    {"count": 1, "keep": "same", "nested": {"a": [1, 2, 3], "b": {"c": 1}}, "api_key": "x" * 9},
    {"count": 1.0, "keep": "same", "a/b~c": {"d": None}, "api_key": "y" * 9},
    {"count": True, "token_note": f"key {SECRET}", "nested": {"b": {}}},
    {},
    {"list": [{"x": 1}], "Point": Point(1, 2)},
    {"list": [{"x": 2}], "Point": Point(1, 3)},
]


def whole(state: dict[str, Any]) -> Any:
    """The state as a client must see it: converted and redacted as one record field."""
    return Redactor().record({"state": plain(state)})["state"]


async def test_state_patches_rebuild_the_redacted_state_step_by_step():
    @node(name="step")
    async def step(ctx: AgentContext[int]) -> AgentContext[int]:
        n = ctx.input + 1
        if n < len(STATES):
            # Unchanged entries pass on as the same objects, as `{**ctx.state, ...}` does.
            kept = {k: ctx.state[k] for k in STATES[n] if ctx.state.get(k) == STATES[n][k]}
            return ctx.evolve(input=n, state={**STATES[n], **kept})
        return ctx.with_input(n)

    def again(ctx: AgentContext[int]) -> Any:
        return step if ctx.input < len(STATES) else g.finish

    with GraphBuilder[int, int]("states") as g:
        g.start.edge_to(step)
        step.edge_to(again, targets=(step, g.finish))
    translator = AguiTranslator(thread_id="t", run_id="r", redactor=Redactor())
    shown: list[Any] = []
    seen: list[Any] = []

    def sink(event: object) -> None:
        for item in translator.data(event):
            EVENTS.validate_python(item)
            if item["type"] == "STATE_SNAPSHOT":
                shown.append(item["snapshot"])
            elif item["type"] == "STATE_DELTA":
                shown[-1] = jsonpatch.apply_patch(shown[-1], item["delta"])
        if isinstance(event, NodeFinished):
            seen.append((whole(dict(event.context.state)), shown[-1]))

    await GraphRunner(sinks=[sink]).run(g.build(), AgentContext(0, state=STATES[0]))
    assert len(seen) == len(STATES)
    for expected, got in seen:
        assert orjson.dumps(got, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
            expected, option=orjson.OPT_SORT_KEYS
        )
    assert SECRET not in orjson.dumps(seen).decode()
