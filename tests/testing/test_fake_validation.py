"""The fake server refuses bad requests the way each real service does."""

import base64
import uuid

import httpx
import pytest

from agentgraph.llm import Message, OutputSchema, ToolCall, ToolSpec
from agentgraph.testing import FakeServer

OPENAI_AUTH = {"authorization": "Bearer sk-test"}
ANTHROPIC_AUTH = {"x-api-key": "sk-ant", "anthropic-version": "2023-06-01"}
USER = {"role": "user", "content": "hi"}


def call(call_id: str, arguments: object = "{}") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": arguments}}


@pytest.fixture
def http(server):
    with httpx.Client(base_url=server.url) as client:
        yield client


def openai_error(http, body, headers=OPENAI_AUTH):
    reply = http.post("/v1/chat/completions", json=body, headers=headers)
    return reply.status_code, reply.json()["error"]


# -- OpenAI ----------------------------------------------------------------------------


def test_openai_auth(http):
    status, error = openai_error(http, {"model": "m", "messages": [USER]}, headers={})
    assert status == 401 and "API key" in error["message"]
    with FakeServer(default="ok", api_key="right") as strict, httpx.Client() as client:
        url = f"{strict.openai_url}/chat/completions"
        body = {"model": "m", "messages": [USER]}
        wrong = client.post(url, json=body, headers={"authorization": "Bearer wrong"})
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_api_key"
        right = client.post(url, json=body, headers={"authorization": "Bearer right"})
        assert right.status_code == 200


def test_openai_invalid_json(http):
    reply = http.post("/v1/chat/completions", content=b"{", headers=OPENAI_AUTH)
    assert reply.status_code == 400
    assert "could not parse the JSON body" in reply.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "param", "fragment"),
    [
        ({"messages": [USER]}, "model", "provide a model"),
        ({"model": "m", "messages": []}, "messages", "non-empty array"),
        ({"model": "m", "messages": [{"role": "robot"}]}, "messages[0].role", "Invalid value"),
        (
            {"model": "m", "messages": [USER], "stream_options": {"include_usage": True}},
            "stream_options",
            "only allowed when 'stream' is enabled",
        ),
        (
            {"model": "o3-mini", "messages": [USER], "max_tokens": 5},
            "max_tokens",
            "Use 'max_completion_tokens'",
        ),
        (
            {
                "model": "m",
                "messages": [USER],
                "tools": [{"type": "function", "function": {"name": "bad name"}}],
            },
            "tools[0].function.name",
            "does not match pattern",
        ),
        (
            {"model": "m", "messages": [USER], "tools": [{"type": "retrieval"}]},
            "tools[0]",
            "expected a function tool",
        ),
        (
            {"model": "m", "messages": [{"role": "assistant", "content": None}]},
            "messages.[0].content",
            "got null",
        ),
        (
            {"model": "m", "messages": [{"role": "tool", "tool_call_id": "x", "content": "1"}]},
            "messages.[0].role",
            "preceding message with 'tool_calls'",
        ),
        (
            {
                "model": "m",
                "messages": [
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [{"id": "c", "function": {}}],
                    }
                ],
            },
            "messages[0].tool_calls[0]",
            "type 'function'",
        ),
    ],
)
def test_openai_request_checks(http, body, param, fragment):
    status, error = openai_error(http, body)
    assert status == 400
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert fragment in error["message"]


def test_openai_arguments_must_be_a_json_string(http):
    assistant = {"role": "assistant", "content": None, "tool_calls": [call("c1", {"a": 1})]}
    status, error = openai_error(http, {"model": "m", "messages": [USER, assistant]})
    assert status == 400 and error["code"] == "invalid_type"
    assert "expected a string, but got an object instead" in error["message"]


def test_openai_every_tool_call_needs_a_tool_message(http):
    assistant = {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]}
    answered = {"role": "tool", "tool_call_id": "c1", "content": "1"}
    status, error = openai_error(
        http, {"model": "m", "messages": [USER, assistant, answered, USER]}
    )
    assert status == 400
    assert error["message"].startswith("An assistant message with 'tool_calls' must be followed")
    assert error["message"].endswith("did not have response messages: c2")
    both = [USER, assistant, answered, {"role": "tool", "tool_call_id": "c2", "content": "2"}]
    server_reply = http.post(
        "/v1/chat/completions", json={"model": "m", "messages": both}, headers=OPENAI_AUTH
    )
    assert server_reply.status_code == 500  # valid; only the script is empty


def test_openai_embeddings_checks(http):
    def embed(body):
        reply = http.post("/v1/embeddings", json=body, headers=OPENAI_AUTH)
        return reply.status_code, reply.json()

    assert embed({"input": "x"})[0] == 400
    assert embed({"model": "e", "input": []})[1]["error"]["param"] == "input"
    assert embed({"model": "e", "input": ""})[0] == 400
    status, body = embed({"model": "e", "input": "x", "encoding_format": "int8"})
    assert status == 400 and body["error"]["param"] == "encoding_format"
    status, body = embed({"model": "e", "input": [[1, 2], [3]]})
    assert status == 200 and [d["index"] for d in body["data"]] == [0, 1]


def test_openai_decode_to_neutral_request(server, http):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    http.post(
        "/v1/chat/completions",
        headers=OPENAI_AUTH,
        json={
            "model": "m",
            "messages": [
                {"role": "developer", "content": "rules"},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                },
                {"role": "assistant", "content": None, "tool_calls": [call("c1", '{"x": 1}')]},
                {"role": "tool", "tool_call_id": "c1", "content": "done"},
            ],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": schema}}],
            "tool_choice": {"type": "function", "function": {"name": "f"}},
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "out", "schema": schema, "strict": True},
            },
            "max_completion_tokens": 9,
            "temperature": 0.5,
            "reasoning_effort": "low",
        },
    )
    request = server.requests[0].chat_request()
    assert request.messages == (
        Message.system("rules"),
        Message.user("ab"),
        Message.assistant(tool_calls=(ToolCall("c1", "f", {"x": 1}),)),
        Message.tool("c1", "done"),
    )
    assert request.tools == (ToolSpec("f", "", schema),)
    assert (request.tool_choice, request.max_output, request.temperature) == ("f", 9, 0.5)
    assert request.think == "low"
    assert request.output == OutputSchema("out", schema, "", True)


# -- Anthropic -------------------------------------------------------------------------


def anthropic_error(http, body, headers=ANTHROPIC_AUTH):
    reply = http.post("/v1/messages", json=body, headers=headers)
    payload = reply.json()
    assert payload["type"] == "error"
    return reply.status_code, payload["error"]["type"], payload["error"]["message"]


def test_anthropic_headers(http):
    body = {"model": "c", "max_tokens": 5, "messages": [USER]}
    assert anthropic_error(http, body, headers={"anthropic-version": "2023-06-01"}) == (
        401,
        "authentication_error",
        "x-api-key header is required",
    )
    assert anthropic_error(http, body, headers={"x-api-key": "k"}) == (
        400,
        "invalid_request_error",
        "anthropic-version: header is required",
    )


def tool_use(block_id: str, tool_input: object = None) -> dict:
    return {"type": "tool_use", "id": block_id, "name": "f", "input": tool_input or {}}


def result(block_id: str) -> dict:
    return {"type": "tool_result", "tool_use_id": block_id, "content": "ok"}


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"max_tokens": 5, "messages": [USER]}, "model: Field required"),
        ({"model": "c", "messages": [USER]}, "max_tokens: Field required"),
        ({"model": "c", "max_tokens": 0, "messages": [USER]}, "greater than or equal to 1"),
        ({"model": "c", "max_tokens": 5, "messages": []}, "at least one message"),
        (
            {"model": "c", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]},
            "messages.0.role: Input should be 'user' or 'assistant'",
        ),
        (
            {"model": "c", "max_tokens": 5, "messages": [USER], "tools": [{"name": "f"}]},
            "input_schema",
        ),
        (
            {
                "model": "c",
                "max_tokens": 2000,
                "messages": [USER],
                "thinking": {"type": "enabled", "budget_tokens": 10},
            },
            "budget_tokens",
        ),
        (
            {
                "model": "c",
                "max_tokens": 2000,
                "messages": [USER],
                "thinking": {"type": "enabled", "budget_tokens": 4000},
            },
            "must be greater than",
        ),
        (
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [USER, {"role": "assistant", "content": [tool_use("t1")]}, USER],
            },
            "messages.2: `tool_use` ids were found without `tool_result` blocks immediately "
            "after: t1",
        ),
        (
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [USER, {"role": "assistant", "content": [tool_use("t1")]}],
            },
            "messages.1: `tool_use` ids were found without `tool_result`",
        ),
        (
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": [result("t9")]}],
            },
            "unexpected `tool_use_id` found in `tool_result` blocks: t9",
        ),
        (
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [USER, {"role": "assistant", "content": [tool_use("t1", "{}")]}],
            },
            "Input should be a valid dictionary",
        ),
    ],
)
def test_anthropic_request_checks(http, body, fragment):
    status, kind, message = anthropic_error(http, body)
    assert (status, kind) == (400, "invalid_request_error")
    assert fragment in message


def test_anthropic_thinking_blocks_must_come_back_signed_and_first(server, http):
    server.add(Message.assistant(tool_calls=(ToolCall("t1", "f", {}),), reasoning="plan"), "ok")
    thinking = {"type": "enabled", "budget_tokens": 1024}
    body = {"model": "c", "max_tokens": 2048, "thinking": thinking, "messages": [USER]}
    first = http.post("/v1/messages", json=body, headers=ANTHROPIC_AUTH).json()
    assert [b["type"] for b in first["content"]] == ["thinking", "tool_use"]
    follow_up = [
        USER,
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": [result("t1")]},
    ]
    assert (
        http.post(
            "/v1/messages", json={**body, "messages": follow_up}, headers=ANTHROPIC_AUTH
        ).status_code
        == 200
    )
    forged = [dict(first["content"][0], thinking="edited"), first["content"][1]]
    follow_up[1] = {"role": "assistant", "content": forged}
    status, _, message = anthropic_error(http, {**body, "messages": follow_up})
    assert status == 400 and "Invalid `signature` in `thinking` block" in message
    follow_up[1] = {"role": "assistant", "content": first["content"][1:]}
    status, _, message = anthropic_error(http, {**body, "messages": follow_up})
    assert "Expected `thinking` or `redacted_thinking`, but found `tool_use`" in message
    without_thinking = {**body, "messages": follow_up}
    del without_thinking["thinking"]
    server.add("fine")
    assert (
        http.post("/v1/messages", json=without_thinking, headers=ANTHROPIC_AUTH).status_code == 200
    )


def test_anthropic_decode_to_neutral_request(server, http):
    server.add("fine")
    reply = http.post(
        "/v1/messages",
        headers=ANTHROPIC_AUTH,
        json={
            "model": "c",
            "max_tokens": 50,
            "system": [{"type": "text", "text": "sys"}],
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hm"},
                        {"type": "text", "text": "calling"},
                        tool_use("t1", {"a": 1}),
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {**result("t1"), "is_error": True},
                        {"type": "text", "text": "go on"},
                    ],
                },
            ],
            "tools": [{"name": "f", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any"},
            "thinking": {"type": "disabled"},
        },
    )
    assert reply.status_code == 200
    request = server.requests[0].chat_request()
    assert request.messages == (
        Message.system("sys"),
        Message.user("hi"),
        Message.assistant("calling", tool_calls=(ToolCall("t1", "f", {"a": 1}),), reasoning="hm"),
        Message.tool("t1", "ok", is_error=True),
        Message.user("go on"),
    )
    assert (request.tool_choice, request.think, request.max_output) == ("required", False, 50)


# -- Ollama ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"messages": [USER]}, "model is required"),
        ({"model": "m", "messages": [USER], "think": "deep"}, 'invalid think value: "deep"'),
        ({"model": "m", "messages": {"role": "user"}}, "messages must be an array"),
        ({"model": "m", "messages": [{"role": "robot"}]}, "messages[0]: invalid role 'robot'"),
    ],
)
def test_ollama_request_checks(http, body, message):
    reply = http.post("/api/chat", json=body)
    assert (reply.status_code, reply.json()) == (400, {"error": message})


def test_ollama_needs_object_arguments_and_embed_input_type(http):
    history = [
        USER,
        {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]},
    ]
    reply = http.post("/api/chat", json={"model": "m", "messages": history})
    assert reply.status_code == 400 and "cannot unmarshal str" in reply.json()["error"]
    assert http.post("/api/chat", content=b"nope").json()["error"].startswith("invalid character")
    embed = http.post("/api/embed", json={"model": "m", "input": [1, 2]})
    assert (embed.status_code, embed.json()) == (400, {"error": "invalid input type"})
    assert http.post("/api/embed", json={"model": "m", "input": []}).json()["embeddings"] == []


def test_ollama_decode_to_neutral_request(server, http):
    server.add("ok")
    schema = {"type": "object"}
    http.post(
        "/api/chat",
        json={
            "model": "m",
            "stream": False,
            "format": schema,
            "think": True,
            "options": {"temperature": 0.1, "num_predict": 7},
            "messages": [
                {"role": "SYSTEM", "content": "s"},
                {
                    "role": "assistant",
                    "content": "",
                    "thinking": "t",
                    "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}],
                },
                {"role": "tool", "tool_name": "f", "content": "1"},
            ],
        },
    )
    request = server.requests[0].chat_request()
    assert request.messages == (
        Message.system("s"),
        Message.assistant(tool_calls=(ToolCall("", "f", {"a": 1}),), reasoning="t"),
        Message.tool("", "1", name="f"),
    )
    assert (request.temperature, request.max_output, request.think) == (0.1, 7, True)
    assert request.output == OutputSchema("output", schema)


# -- GigaChat --------------------------------------------------------------------------

BASIC = base64.b64encode(b"id:secret").decode()


def token(http, *, scope="GIGACHAT_API_PERS", rquid=None, basic=BASIC):
    headers = {"authorization": f"Basic {basic}", "rquid": rquid or str(uuid.uuid4())}
    return http.post("/api/v2/oauth", data={"scope": scope}, headers=headers)


def test_gigachat_oauth_checks(http):
    assert token(http, basic="###").json() == {
        "code": 4,
        "message": "Can't decode 'Authorization' header",
    }
    assert token(http, rquid="not-a-uuid").status_code == 400
    assert token(http, scope="").json() == {"code": 5, "message": "scope is empty"}
    assert token(http, scope="ALL").json() == {"code": 5, "message": "invalid scope 'ALL'"}
    issued = token(http).json()
    assert issued["access_token"] and issued["expires_at"] > 0


def test_gigachat_oauth_checks_configured_credentials():
    with FakeServer(gigachat_credentials=BASIC) as server, httpx.Client(base_url=server.url) as c:
        assert token(c, basic=base64.b64encode(b"other:key").decode()).status_code == 401
        assert token(c).status_code == 200


def test_gigachat_tokens_expire(server, http):
    issued = token(http).json()["access_token"]
    body = {"model": "GigaChat", "messages": [USER]}
    url = "/api/v1/chat/completions"
    assert http.post(url, json=body).json() == {"status": 401, "message": "Unauthorized"}
    unknown = http.post(url, json=body, headers={"authorization": "Bearer forged"})
    assert unknown.status_code == 401
    server.add("hello")
    assert (
        http.post(url, json=body, headers={"authorization": f"Bearer {issued}"}).status_code == 200
    )
    server.expire_gigachat_tokens()
    expired = http.post(url, json=body, headers={"authorization": f"Bearer {issued}"})
    assert expired.json() == {"status": 401, "message": "Token has expired"}


def test_gigachat_short_token_lifetime():
    with FakeServer(gigachat_token_ttl=0) as server, httpx.Client(base_url=server.url) as http:
        issued = token(http).json()["access_token"]
        reply = http.post(
            "/api/v1/chat/completions",
            json={"messages": [USER]},
            headers={"authorization": f"Bearer {issued}"},
        )
        assert reply.json()["message"] == "Token has expired"


CALL = {"role": "assistant", "content": "", "function_call": {"name": "f", "arguments": {"a": 1}}}


@pytest.mark.parametrize(
    ("messages", "extra", "message"),
    [
        ([], {}, "messages: field required"),
        ([{"role": "robot"}], {}, "messages[0].role: invalid role 'robot'"),
        (
            [USER, CALL, {"role": "function", "name": "f", "content": "plain"}],
            {},
            "Invalid function result json string",
        ),
        (
            [USER, {"role": "function", "name": "f", "content": "{}"}],
            {},
            "messages[1]: function result without a function call",
        ),
        ([USER, CALL, USER], {}, "messages[2]: function call 'f' has no result"),
        ([USER, CALL], {}, "function call 'f' has no result"),
        (
            [USER, {**CALL, "function_call": {"name": "f", "arguments": '{"a": 1}'}}],
            {},
            "messages[1].function_call.arguments: must be an object",
        ),
        ([USER], {"function_call": {"name": "g"}}, "function_call: unknown function 'g'"),
    ],
)
def test_gigachat_request_checks(http, messages, extra, message):
    headers = {"authorization": f"Bearer {token(http).json()['access_token']}"}
    reply = http.post(
        "/api/v1/chat/completions", json={"messages": messages, **extra}, headers=headers
    )
    assert (reply.status_code, reply.json()) == (422, {"status": 422, "message": message})


def test_gigachat_decode_and_embeddings_checks(server, http):
    headers = {"authorization": f"Bearer {token(http).json()['access_token']}"}
    server.add("ok")
    http.post(
        "/api/v1/chat/completions",
        headers=headers,
        json={
            "model": "GigaChat",
            "max_tokens": 3,
            "function_call": "auto",
            "functions": [{"name": "f", "parameters": {"type": "object"}}],
            "messages": [
                USER,
                {**CALL, "functions_state_id": "s1"},
                {"role": "function", "name": "f", "content": '{"result": 2}'},
            ],
        },
    )
    request = server.requests[-1].chat_request()
    assert request.messages[1:] == (
        Message.assistant(tool_calls=(ToolCall("s1", "f", {"a": 1}),)),
        Message.tool("s1", '{"result": 2}', name="f"),
    )
    assert (request.tool_choice, request.max_output) == ("auto", 3)
    bad = http.post("/api/v1/embeddings", json={"input": [1]}, headers=headers)
    assert bad.status_code == 422
