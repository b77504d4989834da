"""A transcript a wire would refuse is refused before sending; outside ones can be repaired."""

import pickle
from collections.abc import Iterator

import pytest

from agentgraph import BadRequestError, InvalidTranscript
from agentgraph.llm import (
    AnthropicModel,
    ChatRequest,
    GigaChatModel,
    Message,
    OllamaModel,
    OpenAIModel,
    OpenAIResponsesModel,
    ToolCall,
    TranscriptRepair,
    check_transcript,
    repair_transcript,
)
from agentgraph.llm._transcript import NOT_COMPLETED
from agentgraph.testing import FakeServer

pytestmark = pytest.mark.anyio

WIRES = ["openai", "responses", "anthropic", "ollama", "gigachat"]
BASIC = "Y2xpZW50OnNlY3JldA=="


@pytest.fixture(scope="module")
def shared() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


@pytest.fixture
def server(shared: FakeServer) -> Iterator[FakeServer]:
    shared.reset()
    yield shared
    shared.reset()


def model(wire, server):
    if wire == "openai":
        return OpenAIModel("gpt-4o-mini", base_url=server.openai_url, api_key="sk-t")
    if wire == "responses":
        return OpenAIResponsesModel("o4-mini", base_url=server.openai_url, api_key="sk-t")
    if wire == "anthropic":
        return AnthropicModel("claude-sonnet-4-5", base_url=server.url, api_key="sk-ant-t")
    if wire == "ollama":
        return OllamaModel("llama3.2", base_url=server.url)
    return GigaChatModel(
        "GigaChat",
        credentials=BASIC,
        base_url=server.gigachat_url,
        auth_url=server.gigachat_auth_url,
    )


ASK = Message.user("weather in Oslo and Rome?")
ONE = Message.assistant(tool_calls=(ToolCall("c1", "weather", {"city": "Oslo"}),))
TWO = Message.assistant(
    tool_calls=(ToolCall("c1", "weather", {"city": "Oslo"}), ToolCall("c2", "weather", {}))
)
OSLO = Message.tool("c1", "rain", name="weather")
ROME = Message.tool("c2", "sun", name="weather")

# (name, messages, rule, position), each refused by every wire
BROKEN = [
    ("orphan result", [ASK, OSLO], "result-without-call", 1),
    ("call without its result", [ASK, ONE], "missing-result", 1),
    ("result after a new user turn", [ASK, ONE, Message.user("well?"), OSLO], "missing-result", 2),
    ("second result for one call", [ASK, ONE, OSLO, OSLO], "duplicate-result", 3),
    ("result with no call id", [ASK, Message("tool", "x")], "result-without-call", 1),
    (
        "assistant before the results",
        [ASK, ONE, Message.assistant("done"), OSLO],
        "missing-result",
        2,
    ),
]


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(("case", "messages", "rule", "index"), BROKEN, ids=[b[0] for b in BROKEN])
async def test_a_broken_transcript_is_refused_before_any_request(
    wire, case, messages, rule, index, server
):
    server.add("never sent")
    async with model(wire, server) as m:
        with pytest.raises(InvalidTranscript) as refused:
            await m.request(ChatRequest(messages))
        with pytest.raises(InvalidTranscript):
            async with m.stream(ChatRequest(messages)) as events:
                async for _ in events:
                    pass
    error = refused.value
    assert (error.rule, error.index, error.wire) == (rule, index, wire)
    assert f"({rule}, message {index})" in str(error)
    assert isinstance(error, BadRequestError) and not error.retryable
    assert [r for r in server.requests if r.endpoint != "token"] == []


@pytest.mark.parametrize("wire", ["openai", "responses", "anthropic", "ollama"])
async def test_both_results_in_either_order_are_taken(wire, server):
    server.add("Oslo has rain, Rome sun.")
    async with model(wire, server) as m:
        out = await m.request(ChatRequest([ASK, TWO, ROME, OSLO]))
    assert out.message.content == "Oslo has rain, Rome sun."


def test_one_of_two_results_is_a_missing_result():
    with pytest.raises(InvalidTranscript, match=r"missing-result, message 1.*'c2'"):
        check_transcript([ASK, TWO, OSLO], wire="openai")


def test_gigachat_takes_one_call_per_turn():
    check_transcript([ASK, TWO, OSLO, ROME], wire="ollama")
    with pytest.raises(InvalidTranscript, match="one-call-per-turn, message 1"):
        check_transcript([ASK, TWO, OSLO, ROME], wire="gigachat")


def test_anthropic_with_thinking_needs_the_last_calling_turn_s_thinking():
    history = [ASK, ONE, OSLO]
    check_transcript(history, wire="anthropic")
    with pytest.raises(InvalidTranscript, match="thinking-first, message 1"):
        check_transcript(history, wire="anthropic", think=True)
    thought = Message(
        "assistant",
        tool_calls=ONE.tool_calls,
        provider_data={"anthropic.thinking": ({"type": "thinking", "thinking": "t"},)},
    )
    check_transcript([ASK, thought, OSLO], wire="anthropic", think=True)
    # an earlier unthinking turn is fine once a plain answer closed it
    check_transcript(
        [ASK, ONE, OSLO, Message.assistant("rain"), Message.user("ok")],
        wire="anthropic",
        think=True,
    )


def test_anthropic_needs_more_than_system_text():
    with pytest.raises(InvalidTranscript, match="no-messages, message 0"):
        check_transcript([Message.system("be brief")], wire="anthropic")
    check_transcript([Message.system("be brief")], wire="openai")


def test_documents_only_in_user_messages():
    from agentgraph.llm import Document

    pdf = Document(b"%PDF-1.4", media_type="application/pdf", name="a.pdf")
    check_transcript([Message.user("read", pdf)], wire="openai")
    result = Message("tool", "", tool_call_id="c1", parts=("x", pdf))
    with pytest.raises(InvalidTranscript, match="media-placement, message 2"):
        check_transcript([ASK, ONE, result], wire="anthropic")


def test_an_unknown_wire_is_a_value_error():
    with pytest.raises(ValueError, match="wire is one of"):
        check_transcript([ASK], wire="bedrock")  # type: ignore[arg-type]


async def test_the_check_can_be_turned_off_per_request(server):
    server.add("sent anyway")
    async with model("openai", server) as m:
        with pytest.raises(BadRequestError) as refused:
            await m.request(ChatRequest([ASK, OSLO], check_transcript=False))
    assert not isinstance(refused.value, InvalidTranscript)  # the server's own 400
    assert len(server.requests) == 1


def test_the_error_pickles_with_its_rule_and_position():
    error = InvalidTranscript("missing-result", 3, "calls ['c1'] open", wire="openai", provider="p")
    back = pickle.loads(pickle.dumps(error))
    assert (back.rule, back.index, back.wire, str(back)) == (
        "missing-result",
        3,
        "openai",
        str(error),
    )


@pytest.mark.parametrize("wire", WIRES)
def test_repair_records_a_missing_result_and_drops_orphans(wire):
    history = [ASK, OSLO, ONE, Message.user("well?"), OSLO, Message.assistant("?")]
    fixed, changes = repair_transcript(history, wire=wire)
    check_transcript(fixed, wire=wire)
    assert [m.role for m in fixed] == ["user", "assistant", "tool", "user", "assistant"]
    assert fixed[2] == Message.tool("c1", NOT_COMPLETED, name="weather", is_error=True)
    assert changes == (
        TranscriptRepair(1, "dropped-result", "result for 'c1': no call before it made it"),
        TranscriptRepair(2, "added-result", "call 'c1' (weather) had no result"),
        TranscriptRepair(4, "dropped-result", "result for 'c1': no call before it made it"),
    )


def test_repair_drops_duplicates_and_gigachat_s_extra_calls():
    fixed, changes = repair_transcript([ASK, TWO, OSLO, OSLO, ROME], wire="gigachat")
    assert fixed == (ASK, Message.assistant(tool_calls=TWO.tool_calls[:1]), OSLO)
    assert [c.action for c in changes] == ["dropped-call", "dropped-result", "dropped-result"]
    assert "a second result" in changes[1].detail and "its call was dropped" in changes[2].detail


def test_a_valid_transcript_is_repaired_to_itself():
    history = [Message.system("s"), ASK, TWO, ROME, OSLO, Message.assistant("done")]
    assert repair_transcript(history, wire="openai") == (tuple(history), ())


async def test_after_a_cancel_mid_tool_call_the_next_turn_is_refused_until_repaired():
    # A cancelled run's context ends on the calls it was running: continuing from it
    # as is would send calls without results, which the check names.
    import anyio

    from agentgraph import AgentContext, GraphCancelled, GraphRunner, RunHandle, tool
    from agentgraph.nodes import react_agent
    from agentgraph.testing import ScriptedModel

    started = anyio.Event()

    @tool
    async def slow(x: int) -> int:
        """Wait, then answer."""
        started.set()
        await anyio.sleep(30)
        return x

    handle = RunHandle()
    agent = react_agent(ScriptedModel(ScriptedModel.tool_call("slow", x=1)), [slow])
    errors: list[GraphCancelled] = []

    async def go() -> None:
        try:
            await GraphRunner().run(agent, AgentContext("go"), handle=handle)
        except GraphCancelled as error:
            errors.append(error)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await started.wait()
            handle.cancel()
    (cancelled,) = errors
    history = [*cancelled.context.history, Message.user("and now?")]
    with pytest.raises(InvalidTranscript, match="missing-result, message 2"):
        check_transcript(history, wire="openai")
    fixed, changes = repair_transcript(history, wire="openai")
    assert [c.action for c in changes] == ["added-result"]
    assert [m.role for m in fixed] == ["user", "assistant", "tool", "user"]
