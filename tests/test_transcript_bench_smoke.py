"""The transcript-check benchmark measures valid conversations of the sizes it names."""

import pytest

from agentgraph.llm import check_transcript
from tests.helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("transcripts")


@pytest.mark.parametrize("size", [10, 11, 100, 1000])
@pytest.mark.parametrize("wire", ["openai", "responses", "anthropic", "ollama", "gigachat"])
def test_the_measured_conversations_are_valid_and_encodable(bench, wire, size):
    messages = bench.valid(size)
    assert size - 1 <= len(messages) <= size
    assert any(m.tool_calls for m in messages)
    check_transcript(messages, wire=wire)
    assert bench.per_message_us(bench.ENCODERS[wire], messages, 0.001) > 0
