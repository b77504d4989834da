"""Prose about keys, tokens and passwords comes back as written; values stay masked."""

import pytest

from agentgraph import ProviderConfigError, UsageError
from agentgraph.tracing import Redactor

# Sentences a library, a user or a model writes about secrets without holding one.
PROSE = [
    "pass api_key= or set OPENAI_API_KEY",
    "pass api_key= or set X",
    "token: none given",
    "password must be 8+ characters",
    "password: must be 8+ characters",
    "the api_key is read from the environment",
    "set api_key= to your own key",
    "api_key: required",
    "api_key=None",
    "ModelConfig(api_key=None, timeout=30)",
    "api_key: missing",
    "Authorization: required",
    "x-api-key: missing",
    "password = unset",
    "password: optional",
    "password: see the vault",
    "access_token: expired.",
    "access_token: expired, please log in again",
    "API key: get one from your provider's dashboard",
    "api-key: keep it out of the repository",
    "apikey= is the old spelling",
    "Your password is too short.",
    "Reset your password at the sign-in page.",
    "A token is a piece of a word.",
    "The model used 1,204 tokens.",
    "tokens: 512 in, 128 out",
    "max_tokens=256",
    "token budget: 4000",
    "Pass the key with api_key= or the environment.",
    "No API key given: set OPENAI_API_KEY or pass api_key=",
    "api_key=... in the constructor",
    'api_key="..." in the constructor',
    "The password field is empty.",
    "password: hidden",
    "passwords must differ from the last five",
    "Basic usage of the api",
    "Bearer tokens expire after an hour",
    "Token limits apply per minute",
    "the authorization header is missing",
    "Authorization: none",
    "Authorization failed for this user",
    "authorization: denied.",
    "The access token endpoint answered 401",
    "password: ask your administrator",
    "api_key: the key from the console",
    "api key rotation happens monthly",
    "use an api_key or a token, not both",
    "api_key = true",
    "password=false",
    "set the password: later",
    "token: null",
    "Forgot password? Click here.",
    "Your token has been revoked.",
    "pass api_key= (or set ANTHROPIC_API_KEY)",
    "x-api-key: absent",
]

# Every form the redaction tests mask, and a few more: values, not words.
SECRETS = [
    ("Authorization: Bearer abc.def-123456", "Authorization: ***"),
    ("curl -H 'x-api-key: 9f8e7d6c5b4a'", "curl -H 'x-api-key: ***'"),
    ('{"api_key": "hunter2hunter2"}', '{"api_key": "***"}'),
    ('{"password": "swordfish"}', '{"password": "***"}'),
    ("api_KEY=Zq81hd9ak2mz0", "api_KEY=***"),
    ("PASSWORD: 's3cr3t-value'", "PASSWORD: '***'"),
    ("X-API-Key: Zq81hd9ak2mz0", "X-API-Key: ***"),
    ("password=swordfish", "password=***"),
    ("password: hunter2", "password: ***"),
    ("api_key: Zq81hd9ak2mz0QX", "api_key: ***"),
    ("access_token=abcdefghij", "access_token=***"),
    ("token eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeKKF2QT4", "token ***"),
    ("Basic dXNlcjpwYXNzd29yZA==", "Basic ***"),
    ("Bearer abcdefghijKLMNOP", "Bearer ***"),
]


def test_the_corpus_is_large_enough():
    assert len(PROSE) >= 50


@pytest.mark.parametrize("text", PROSE)
def test_prose_about_secrets_comes_back_unchanged(text):
    assert Redactor(environment=False).mask(text) == text


@pytest.mark.parametrize(("text", "expected"), SECRETS)
def test_secret_values_stay_masked(text, expected):
    assert Redactor(environment=False).mask(text) == expected


def test_an_error_about_a_missing_key_reads_as_written():
    assert str(UsageError("pass api_key= or set X")) == "pass api_key= or set X"


@pytest.mark.parametrize(
    ("spec", "variable"),
    [
        ("openai:gpt-4o", "OPENAI_API_KEY"),
        ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("openrouter:openai/gpt-4o", "OPENROUTER_API_KEY"),
    ],
)
def test_the_missing_key_message_names_both_ways_to_give_a_key(spec, variable, monkeypatch):
    from agentgraph.llm import model_from_string

    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ProviderConfigError) as caught:
        model_from_string(spec)
    message = str(caught.value)
    assert "***" not in message
    assert f"set the {variable} environment variable" in message
    assert "api_key=" in message
