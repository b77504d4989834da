"""Values cross process boundaries by pickle (between your own processes only)."""

import pickle

from agentgraph import AgentContext, History, Message, Settings, ToolCall, ToolSpec, Usage
from agentgraph.checkpoint import Effect, RunRecord, StepRecord
from agentgraph.llm import ChatRequest, ChatResponse


def round_trip(value):
    back = pickle.loads(pickle.dumps(value))
    assert back == value and type(back) is type(value)
    return back


def test_contexts_and_their_parts_pickle():
    call = ToolCall("c1", "add", {"a": 1, "nested": {"b": [1, 2]}})
    message = Message("assistant", "hi", (call,), provider_data={"state": "x"})
    ctx = AgentContext(
        {"k": (1, 2)},
        history=History([Message.user("q"), message, Message.tool("c1", "3", name="add")]),
        system_prompt="sys",
        settings=Settings(model="m", temperature=0.1),
        tools=(ToolSpec("add", "Add.", {"type": "object", "properties": {}}),),
        state={"seen": 3},
        usage=Usage(1, 2),
    )
    back = round_trip(ctx)
    assert back.state["seen"] == 3 and back.history[1].tool_calls[0].arguments["a"] == 1
    round_trip(ctx.history)
    round_trip(message)
    round_trip(call)
    back.append(Message.user("more"))  # still an ordinary, appendable context


def test_model_requests_responses_and_records_pickle():
    request = ChatRequest((Message.user("q"),), temperature=0.5)
    round_trip(request)
    round_trip(ChatResponse(Message.assistant("a"), Usage(3, 4)))
    round_trip(RunRecord("r", "g", b"{}", b"{}", 1.0))
    round_trip(StepRecord("r", 1, 1, ("g",), "n", "finish", 1, 1, b"{}", 1.0, 0.1))
    round_trip(Effect("r", "1.1.1:model", "model", b"{}"))
