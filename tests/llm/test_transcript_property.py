"""Random conversations: what the check passes, and what `repair_transcript` makes, the fakes take.

The fake servers refuse what the services refuse (each written from the
provider's documentation, apart from the check), so a conversation the
check lets through and a fake refuses is a rule the check misses.
"""

from collections.abc import Iterator

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgraph import BadRequestError, InvalidTranscript
from agentgraph.llm import ChatRequest, Message, ToolCall, check_transcript, repair_transcript
from agentgraph.testing import FakeServer

from .test_transcript import WIRES, model

IDS = ["c1", "c2", "c3"]


def _assistant(calls: list[str]) -> Message:
    made = tuple(ToolCall(i, "lookup", {"q": i}) for i in dict.fromkeys(calls))
    return Message.assistant("" if made else "an answer", tool_calls=made)


MESSAGES = st.one_of(
    st.just(Message.user("a question")),
    st.lists(st.sampled_from(IDS), max_size=2).map(_assistant),
    st.sampled_from(IDS).map(lambda i: Message.tool(i, f"result {i}", name="lookup")),
)
CONVERSATIONS = st.lists(MESSAGES, min_size=1, max_size=8).map(
    lambda ms: [Message.user("start"), *ms]
)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


async def _taken(wire: str, server: FakeServer, messages: list[Message]) -> bool:
    server.reset()
    server.add("fine")
    async with model(wire, server) as m:
        try:
            await m.request(ChatRequest(messages, check_transcript=False))
        except BadRequestError:
            return False
    return True


def _valid(messages: list[Message], wire: str) -> bool:
    try:
        check_transcript(messages, wire=wire)  # type: ignore[arg-type]
    except InvalidTranscript:
        return False
    return True


@pytest.mark.parametrize("wire", WIRES)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(conversation=CONVERSATIONS)
def test_what_the_check_passes_and_what_repair_makes_the_fake_takes(wire, server, conversation):
    fixed, changes = repair_transcript(conversation, wire=wire)
    assert _valid(list(fixed), wire)
    assert (changes == ()) == _valid(conversation, wire)
    messages = list(fixed) if fixed[-1].role != "assistant" else [*fixed, Message.user("go on")]
    assert anyio.run(_taken, wire, server, messages)
    if _valid(conversation, wire) and conversation[-1].role != "assistant":
        assert anyio.run(_taken, wire, server, conversation)
