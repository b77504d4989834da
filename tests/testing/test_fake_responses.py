"""The fake `/v1/responses` refuses what the service refuses, with OpenAI's error shape."""

import httpx
import pytest

from agentgraph.llm import ChatRequest, Message, OpenAIResponsesModel, ToolCall, ToolSpec

CLOSED = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
TOOL = {"type": "function", "name": "weather", "parameters": CLOSED, "strict": True}
USER = {"role": "user", "content": "hi"}
CALL = {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def post(server, body: dict) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(
            f"{server.openai_url}/responses",
            json=body,
            headers={"authorization": "Bearer sk-test"},
        )


def reasoning(server_id: str = "rs_1", content: str | None = None) -> dict:
    item = {"type": "reasoning", "id": server_id, "summary": []}
    if content is not None:
        item["encrypted_content"] = content
    return item


REFUSED = [
    ({"model": "gpt-4o", "messages": [USER]}, "Unknown parameter: 'messages'."),
    ({"input": "hi"}, "Missing required parameter: 'model'."),
    (
        {"model": "gpt-4o", "input": "hi", "tools": [{"type": "function", "function": {}}]},
        "Missing required parameter: 'tools[0].name'.",
    ),
    (
        {"model": "gpt-4o", "input": "hi", "tools": [{**TOOL, "parameters": {"type": "object"}}]},
        "'additionalProperties' is required to be supplied and to be false",
    ),
    (
        {"model": "gpt-4o", "input": "hi", "tools": [{**TOOL, "strict": None}]},
        None,  # strict unless said otherwise: this closed schema passes
    ),
    (
        {"model": "gpt-4o", "input": "hi", "tools": [TOOL], "tool_choice": {"type": "function"}},
        "Tool choice 'function' not found in 'tools' parameter.",
    ),
    (
        {"model": "gpt-4o", "input": "hi", "reasoning": {"effort": "low"}},
        "Unsupported parameter: 'reasoning.effort' is not supported with this model.",
    ),
    (
        {"model": "gpt-5", "input": "hi", "reasoning": {"effort": "none"}},
        "Unsupported value: 'none' is not supported with the 'gpt-5' model.",
    ),
    (
        {"model": "o4-mini", "input": "hi", "temperature": 0.2},
        "Unsupported parameter: 'temperature' is not supported with this model.",
    ),
    ({"model": "gpt-4o", "input": "hi", "max_output_tokens": 5}, "Expected a value >= 16"),
    ({"model": "gpt-4o", "input": "hi", "include": ["everything"]}, "Invalid value: 'everything'"),
    (
        {"model": "gpt-4o", "input": [USER, OUTPUT]},
        "No tool call found for function call output with call_id call_1.",
    ),
    ({"model": "gpt-4o", "input": [USER, CALL]}, "No tool output found for function call call_1."),
    (
        {"model": "gpt-4o", "input": [USER, CALL, {"role": "user", "content": "?"}, OUTPUT]},
        "No tool output found for function call call_1.",
    ),
    (
        {"model": "gpt-4o", "input": [USER, {**CALL, "arguments": {}}, OUTPUT]},
        "Invalid type for 'input[1].arguments': expected a string.",
    ),
    (
        {"model": "gpt-5", "input": [USER, reasoning("rs_x", "forged"), CALL, OUTPUT]},
        "The encrypted content for item rs_x could not be verified.",
    ),
    (
        {"model": "gpt-5", "input": [USER, reasoning(), USER]},
        "Item 'rs_1' of type 'reasoning' was provided without its required following item.",
    ),
    (
        {"model": "gpt-4o", "input": "hi", "text": {"format": {"type": "json_schema"}}},
        "Missing required parameter: 'text.format.name'.",
    ),
    (
        {
            "model": "gpt-4o",
            "input": "hi",
            "text": {"format": {"type": "json_schema", "json_schema": {"name": "x"}}},
        },
        "Unknown parameter: 'text.format.json_schema'.",
    ),
    (
        {
            "model": "gpt-4o",
            "input": "hi",
            "text": {
                "format": {
                    "type": "json_schema",
                    "name": "answer",
                    "strict": True,
                    "schema": {**CLOSED, "required": []},
                }
            },
        },
        "Missing 'city'.",
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("body", "message"), REFUSED)
async def test_refusals(server, body, message):
    server.add("ok")
    response = await post(server, body)
    if message is None:
        assert response.status_code == 200, response.text
        return
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert message in error["message"]
    assert error["type"] == "invalid_request_error"


@pytest.mark.anyio
async def test_a_reasoning_item_cannot_be_sent_back_without_its_content_when_not_stored(server):
    body = {"model": "gpt-5", "input": [USER, reasoning(), CALL, OUTPUT], "store": False}
    response = await post(server, body)
    assert response.status_code == 404
    assert (
        "Items are not persisted when `store` is set to false"
        in response.json()["error"]["message"]
    )


@pytest.mark.anyio
async def test_the_clients_long_history_passes(server):
    spec = ToolSpec("weather", "Weather", CLOSED)
    server.add(Message.assistant(tool_calls=(ToolCall("c1", "weather", {}),)))
    server.add("It is sunny.", "Anything else?")
    async with OpenAIResponsesModel(
        "gpt-5-mini", api_key="sk-test", base_url=server.openai_url
    ) as model:
        history = [Message.system("Be brief."), Message.user("weather?")]
        first = await model.request(ChatRequest(history, tools=[spec], think=True))
        history += [first.message, Message.tool("c1", "sunny")]
        second = await model.request(ChatRequest(history, tools=[spec], think=True))
        history += [second.message, Message.user("thanks")]
        third = await model.request(ChatRequest(history, tools=[spec], think=False))
    assert third.message.content == "Anything else?"
    sent = [item["type"] for item in server.requests[-1].body["input"]]
    assert sent == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "reasoning",
        "message",
        "message",
    ]


@pytest.mark.anyio
async def test_an_answer_item_sent_back_by_id_needs_its_reasoning(server):
    server.add(Message.assistant(tool_calls=(ToolCall("c1", "weather", {"city": "Oslo"}),)))
    body = {"model": "gpt-5-mini", "input": "weather?", "tools": [TOOL]}
    items = (await post(server, body)).json()["output"]
    assert [item["type"] for item in items] == ["reasoning", "function_call"]
    call = items[1]
    output = {"type": "function_call_output", "call_id": "c1", "output": "sunny"}
    server.add("Sunny.")
    response = await post(server, {**body, "input": [USER, call, output]})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        f"Item '{call['id']}' of type 'function_call' was provided without its required "
        f"'reasoning' item: '{items[0]['id']}'."
    )
    without_id = {k: v for k, v in call.items() if k != "id"}
    assert (await post(server, {**body, "input": [USER, without_id, output]})).status_code == 200


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cfc0f01f0005000201a5f5a1e20000000049454e44ae426082"
)
PDF = b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"


@pytest.mark.anyio
async def test_images_and_documents_go_through_and_bad_parts_are_refused(server):
    from agentgraph.llm import Document, Image

    server.add("a cat and a report")
    asked = Message.user(
        "Compare these.",
        Image.from_bytes(PNG),
        Image.from_url("https://images.test/cat.png"),
        Document.from_bytes(PDF, name="report.pdf"),
    )
    async with OpenAIResponsesModel(
        "gpt-4o", api_key="sk-test", base_url=server.openai_url
    ) as model:
        answer = await model.request(ChatRequest([asked]))
    assert answer.message.content == "a cat and a report"
    for part, message in (
        ({"type": "input_image", "image_url": "https://images.test/x.png"}, "'detail'"),
        (
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
            "unsupported image",
        ),
        (
            {"type": "input_file", "filename": "x.pdf", "file_data": "data:text/plain;base64,eA=="},
            "PDF",
        ),
        ({"type": "image_url", "image_url": {"url": "https://images.test/x.png"}}, "'image_url'"),
    ):
        server.add("unused")
        body = {"model": "gpt-4o", "input": [{"role": "user", "content": [part]}]}
        response = await post(server, body)
        assert response.status_code == 400, part
        assert message in response.json()["error"]["message"], response.json()
