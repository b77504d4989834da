import anyio
import httpx
import orjson
import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    Message,
    ModelRequested,
    ModelResponded,
    NodeFinished,
    Settings,
    ToolCall,
    ToolFinished,
    tool,
)
from agentgraph.llm import OpenAIModel
from agentgraph.nodes import build_request, chat, react_agent, tool_turns, tool_use
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


@tool
async def shout(text: str) -> str:
    """Upper-case a text."""
    await anyio.sleep(0)
    return text.upper()


@tool
def secret() -> str:
    """A tool the agent is not given."""
    raise AssertionError("must never run")


async def test_react_agent_runs_tools_and_answers():
    model = ScriptedModel(
        ScriptedModel.tool_calls(("add", {"a": 2, "b": "3"}), ("shout", {"text": "hi"})),
        ScriptedModel.tool_call("add", a=5, b=5),
        "The answer is 10.",
    )
    agent = react_agent(model, [add, shout], system_prompt="You add numbers.")
    out = await GraphRunner().run(agent, AgentContext("what is 2+3, then +5?"))
    assert out.input == "The answer is 10."
    roles = [(m.role, m.name, m.content) for m in out.history]
    assert roles == [
        ("user", None, "what is 2+3, then +5?"),
        ("assistant", None, ""),
        ("tool", "add", "5"),
        ("tool", "shout", "HI"),
        ("assistant", None, ""),
        ("tool", "add", "10"),
        ("assistant", None, "The answer is 10."),
    ]
    # Each tool result answers its own call id, in call order.
    calls = out.history[1].tool_calls
    assert [out.history[2].tool_call_id, out.history[3].tool_call_id] == [c.id for c in calls]
    first = model.requests[0]
    assert first.messages[0] == Message.system("You add numbers.")
    assert [t.name for t in first.tools] == ["add", "shout"]
    assert first.tools[0].parameters["required"] == ["a", "b"]
    assert out.usage.requests == 3


async def test_tool_use_refuses_tools_it_was_not_given_and_lists_only_its_own():
    model = ScriptedModel(ScriptedModel.tool_call("secret"), "ok, I cannot.")
    agent = react_agent(model, [add])
    out = await GraphRunner().run(agent, AgentContext("tell me the secret"))
    refusal = out.history[2]
    assert refusal.role == "tool" and refusal.is_error
    assert "secret" in refusal.content and "add" in refusal.content
    assert "shout" not in refusal.content
    assert out.input == "ok, I cannot."


async def test_bad_arguments_become_an_error_the_model_can_read():
    model = ScriptedModel(ScriptedModel.tool_call("add", a="x", b=1), "sorry")
    out = await GraphRunner().run(react_agent(model, [add]), AgentContext("add"))
    result = out.history[2]
    assert result.is_error and "a" in result.content
    # The model saw the error in its next request.
    assert model.requests[1].messages[-1] == result


async def test_max_turns_ends_with_a_forced_answer():
    model = ScriptedModel(
        ScriptedModel.tool_call("add", a=1, b=1),
        ScriptedModel.tool_call("add", a=2, b=2),
        "done",
    )
    agent = react_agent(model, [add], max_turns=2)
    out = await GraphRunner().run(agent, AgentContext("loop"))
    assert out.input == "done"
    assert model.requests[2].tool_choice == "none"
    assert tool_turns(out) == 2


async def test_agent_events_record_requests_responses_and_tools():
    model = ScriptedModel(ScriptedModel.tool_call("add", a=1, b=2), "3")
    kinds = []
    async with GraphRunner().stream(react_agent(model, [add]), AgentContext("1+2")) as events:
        async for event in events:
            if isinstance(event, ModelRequested | ModelResponded | ToolFinished):
                kinds.append((type(event).__name__, "/".join(event.path)))
            elif isinstance(event, NodeFinished):
                kinds.append(("step", event.step.path[-1]))
    assert kinds == [
        ("step", "user_turn"),
        ("ModelRequested", "react_agent/chat"),
        ("ModelResponded", "react_agent/chat"),
        ("step", "chat"),
        ("ToolFinished", "react_agent/tools"),
        ("step", "tools"),
        ("ModelRequested", "react_agent/chat"),
        ("ModelResponded", "react_agent/chat"),
        ("step", "chat"),
        ("step", "answer"),
    ]


async def test_agent_nests_as_a_subgraph():
    model = ScriptedModel("inner answer")
    agent = react_agent(model, [add], name="inner")
    from agentgraph import node

    @node
    def wrap(ctx: AgentContext[str]) -> AgentContext[str]:
        return ctx.with_input(f"[{ctx.input}]")

    with GraphBuilder[str, str]("outer") as g:
        g.start.edge_to(agent).edge_to(wrap).edge_to(g.finish)
    out = await GraphRunner().run(g.build(), AgentContext("hi"))
    assert out.input == "[inner answer]"
    assert "subgraph" in g.build().to_mermaid()


def test_build_request_layers_settings_and_never_rewrites_prompts():
    ctx = AgentContext(
        None,
        system_prompt="sys",
        settings=Settings(model="m1", temperature=0.5, max_output=100),
    ).append(Message.user("hello"))
    request = build_request(ctx, settings=Settings(temperature=0.1))
    assert request.messages == (Message.system("sys"), Message.user("hello"))
    assert (request.model, request.temperature, request.max_output) == ("m1", 0.1, 100)
    assert request.tool_choice is None and request.tools == ()


async def test_chat_node_settings_override_and_usage():
    model = ScriptedModel("hi there")
    with GraphBuilder[None, Message]("one") as g:
        g.start.edge_to(chat(model, settings=Settings(max_output=5))).edge_to(g.finish)
    out = await GraphRunner().run(g.build(), AgentContext(None).append(Message.user("hi")))
    assert out.input.content == "hi there"
    assert model.requests[0].max_output == 5
    assert out.usage.requests == 1


def test_tool_use_rejects_duplicate_names():
    with pytest.raises(ValueError, match="unique"):
        tool_use([add, add])


async def test_tool_use_without_calls_passes_through():
    node = tool_use([add])
    with GraphBuilder[Message, Message]("t") as g:
        g.start.edge_to(node).edge_to(g.finish)
    ctx = AgentContext(Message.assistant("no calls"))
    assert (await GraphRunner().run(g.build(), ctx)) == ctx
    call = ToolCall("c1", "add", {"a": 1, "b": 2})
    out = await GraphRunner().run(g.build(), AgentContext(Message.assistant(tool_calls=(call,))))
    assert out.history[-1] == Message.tool("c1", "3", name="add")


async def test_truncated_tool_arguments_from_the_wire_do_not_end_the_run():
    bodies: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/chat/completions"
        bodies.append(orjson.loads(request.content))
        if len(bodies) == 1:
            call = {"name": "add", "arguments": '{"a": 1, "b'}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": call}],
            }
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": "done"}
            finish = "stop"
        choice = {"index": 0, "message": message, "finish_reason": finish}
        return httpx.Response(200, json={"id": "x", "model": "m", "choices": [choice]})

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    model = OpenAIModel("m", base_url="http://fake/v1", http_client=client)
    out = await GraphRunner().run(react_agent(model, [add]), AgentContext("1 + 2?"))
    assert out.input == "done"
    result = out.history[2]
    assert result.role == "tool" and result.is_error
    assert "not valid JSON" in result.content
    # The call goes back exactly as the model sent it, followed by the error result.
    sent = bodies[1]["messages"]
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == '{"a": 1, "b'
    assert sent[2]["role"] == "tool" and sent[2]["tool_call_id"] == "c1"
    await client.aclose()
