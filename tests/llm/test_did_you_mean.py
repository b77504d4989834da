"""A misspelt provider, or a model named without one, gets the line that was meant."""

import pytest

from agentgraph import ProviderConfigError
from agentgraph.llm import model_from_string


@pytest.mark.parametrize(
    ("spec", "hint"),
    [
        ("opneai:gpt-4o", "Did you mean `openai`?"),
        ("antropic:claude-sonnet-4-5", "Did you mean `anthropic`?"),
        ("olama:qwen2.5:7b", "Did you mean `ollama`?"),
        ("gpt-4o-mini", "Did you mean `openai:gpt-4o-mini`?"),
        ("o3-mini", "Did you mean `openai:o3-mini`?"),
        ("claude-sonnet-4-5", "Did you mean `anthropic:claude-sonnet-4-5`?"),
        ("GigaChat-Pro", "Did you mean `gigachat:GigaChat-Pro`?"),
        ("qwen2.5", "Did you mean `ollama:qwen2.5`?"),
        ("meta-llama/llama-3-70b", "Did you mean `openrouter:meta-llama/llama-3-70b`?"),
        ("openai:", "no model name follows 'openai:'"),
    ],
)
def test_the_message_names_the_line_that_was_meant(spec, hint):
    with pytest.raises(ProviderConfigError) as caught:
        model_from_string(spec)
    message = str(caught.value)
    assert hint in message
    assert "provider one of anthropic, gigachat" in message


def test_no_guess_for_a_name_like_no_provider():
    with pytest.raises(ProviderConfigError) as caught:
        model_from_string("zzz:model")
    assert "Did you mean" not in str(caught.value)
