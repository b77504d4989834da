"""ScriptedModel, SchemaTestModel and schema_example."""

import orjson
import pytest

from agentgraph import AgentGraphError, RateLimitError
from agentgraph.llm import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    Message,
    OutputSchema,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from agentgraph.testing import (
    BrokenStream,
    SchemaTestModel,
    ScriptedModel,
    ScriptExhausted,
    schema_example,
    stream_events,
)

HI = ChatRequest([Message.user("hello there")])


async def collect(model, request=HI):
    async with model.stream(request) as events:
        return [event async for event in events]


# -- ScriptedModel ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_plays_the_script_in_order_and_records_requests():
    usage = Usage(input_tokens=1, output_tokens=2, requests=1)
    scripted = ChatResponse(Message.assistant("third"), finish_reason="length", usage=usage)
    model = ScriptedModel("first", Message.assistant("second"), scripted, name="m")
    assert isinstance(model, ChatModel) and model.name == "m"
    replies = [await model.request(HI) for _ in range(3)]
    assert [r.message.content for r in replies] == ["first", "second", "third"]
    assert [r.finish_reason for r in replies] == ["stop", "stop", "length"]
    assert replies[2].usage == usage
    assert replies[0].usage == Usage(input_tokens=3, output_tokens=2, requests=1)
    assert replies[0].message.usage == replies[0].usage
    assert replies[0].model == "m"
    assert model.requests == (HI, HI, HI)
    assert model.remaining == 0


@pytest.mark.anyio
async def test_running_out_raises_a_typed_assertion():
    model = ScriptedModel("only", name="m")
    await model.request(HI)
    with pytest.raises(ScriptExhausted, match="received request #2 but was scripted with 1") as e:
        await model.request(HI)
    assert isinstance(e.value, AgentGraphError) and isinstance(e.value, AssertionError)
    assert (e.value.model, e.value.number, e.value.scripted) == ("m", 2, 1)
    assert not getattr(e.value, "retryable", False)
    model.add("more")
    assert (await model.request(HI)).message.content == "more"


@pytest.mark.anyio
async def test_scripted_exceptions_and_functions():
    error = RateLimitError("slow down", retry_after=1.0)
    model = ScriptedModel(error, lambda request: f"{len(request.messages)} messages")
    with pytest.raises(RateLimitError) as caught:
        await model.request(HI)
    assert caught.value is error
    assert (await model.request(HI)).message.content == "1 messages"
    assert len(model.requests) == 2


@pytest.mark.anyio
async def test_tool_call_builders_number_missing_ids():
    model = ScriptedModel(
        ScriptedModel.tool_call("add", a=1, name="x"),
        ScriptedModel.tool_calls(("f", {"q": 1}), ToolCall("mine", "g", {}), content="both"),
        ScriptedModel.tool_call("h", call_id="fixed"),
    )
    first = await model.request(HI)
    assert first.finish_reason == "tool_calls"
    assert first.message.tool_calls == (ToolCall("call_1", "add", {"a": 1, "name": "x"}),)
    second = (await model.request(HI)).message
    assert second.content == "both"
    assert [(c.id, c.name) for c in second.tool_calls] == [("call_2", "f"), ("mine", "g")]
    assert (await model.request(HI)).message.tool_calls[0].id == "fixed"


@pytest.mark.anyio
async def test_stream_splits_text_reasoning_and_tool_arguments():
    reply = Message.assistant(
        "Twelve chars",
        tool_calls=(ToolCall("", "f", {"text": "long enough"}), ToolCall("", "g", {})),
        reasoning="why",
    )
    events = await collect(ScriptedModel(reply, chunk_size=5))
    assert events[0] == ReasoningDelta("why")
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Twelv", "e cha", "rs"]
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert deltas[0] == ToolCallDelta(0, id="call_1", name="f")
    first_args = "".join(d.arguments for d in deltas if d.index == 0)
    assert orjson.loads(first_args) == {"text": "long enough"}
    assert ToolCallDelta(1, id="call_2", name="g") in deltas
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.message.tool_calls[0].id == "call_1"


@pytest.mark.anyio
async def test_stream_errors_raise_on_entering_and_broken_streams_midway():
    model = ScriptedModel(
        RateLimitError("busy"),
        BrokenStream("abcdefghijklmnop", RateLimitError("cut"), after_events=1),
        BrokenStream("x", ValueError("no stream")),
        chunk_size=4,
    )
    with pytest.raises(RateLimitError, match="busy"):
        await collect(model)
    received = []
    with pytest.raises(RateLimitError, match="cut"):
        async with model.stream(HI) as events:
            async for event in events:
                received.append(event)
    assert received == [TextDelta("abcd")]
    with pytest.raises(ValueError, match="no stream"):
        await model.request(HI)


def test_stream_events_for_an_empty_answer():
    response = ChatResponse(Message.assistant(""), finish_reason="stop")
    assert stream_events(response) == [ResponseDone(response)]


# -- SchemaTestModel -------------------------------------------------------------------

WEATHER = ToolSpec(
    "weather",
    "Weather for a city",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 2},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
            "units": {"enum": ["c", "f"]},
            "hourly": {"type": "boolean"},
            "note": {"type": ["string", "null"]},
        },
        "required": ["city", "days"],
    },
)
ADD = ToolSpec(
    "add", "", {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}
)


def with_results(request: ChatRequest, response: ChatResponse) -> ChatRequest:
    results = [Message.tool(c.id, "ok", name=c.name) for c in response.message.tool_calls]
    return ChatRequest(
        [*request.messages, response.message, *results],
        request.tools,
        tool_choice=request.tool_choice,
        output=request.output,
    )


@pytest.mark.anyio
async def test_schema_model_calls_every_tool_once_then_answers():
    model = SchemaTestModel(final="all done")
    request = ChatRequest([Message.user("go")], (WEATHER, ADD))
    first = await model.request(request)
    assert [(c.name, dict(c.arguments)) for c in first.message.tool_calls] == [
        ("weather", {"city": "city", "days": 1, "units": "c", "hourly": True, "note": "note"}),
        ("add", {"a": 1.5}),
    ]
    second = await model.request(with_results(request, first))
    assert second.message.content == "all done" and second.finish_reason == "stop"
    assert len(model.requests) == 2


@pytest.mark.anyio
async def test_schema_model_one_tool_a_turn_required_only_and_tool_choice():
    model = SchemaTestModel(parallel=False, include_optional=False)
    request = ChatRequest([Message.user("go")], (WEATHER, ADD))
    first = await model.request(request)
    assert [dict(c.arguments) for c in first.message.tool_calls] == [{"city": "city", "days": 1}]
    second = await model.request(with_results(request, first))
    assert [c.name for c in second.message.tool_calls] == ["add"]
    only_add = ChatRequest([Message.user("go")], (WEATHER, ADD), tool_choice="add")
    assert [c.name for c in (await model.request(only_add)).message.tool_calls] == ["add"]
    none = ChatRequest([Message.user("go")], (WEATHER,), tool_choice="none")
    assert (await model.request(none)).message.content == "done"


@pytest.mark.anyio
async def test_schema_model_structured_output_and_stream():
    schema = {
        "type": "object",
        "properties": {"score": {"type": "integer", "minimum": 3}},
        "required": ["score"],
    }
    request = ChatRequest([Message.user("rate")], output=OutputSchema("Rating", schema))
    model = SchemaTestModel(chunk_size=4)
    response = await model.request(request)
    assert orjson.loads(response.message.content) == {"score": 3}
    events = await collect(model, request)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert orjson.loads(text) == {"score": 3}


# -- schema_example --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string", "format": "date-time"}, "2024-01-02T03:04:05Z"),
        ({"type": "string", "maxLength": 3}, "val"),
        ({"type": "string", "minLength": 8}, "valuexxx"),
        ({"type": "string", "default": "d"}, "d"),
        ({"const": 5}, 5),
        ({"type": "integer", "exclusiveMinimum": 4, "multipleOf": 3}, 6),
        ({"type": "integer", "minimum": 2, "exclusiveMinimum": True}, 3),
        ({"type": "integer", "exclusiveMaximum": 0}, -1),
        ({"type": "number", "minimum": 1, "maximum": 2}, 1.5),
        ({"type": "number", "exclusiveMinimum": 0.5, "multipleOf": 0.5}, 1.0),
        ({"type": "number", "maximum": 0}, -1.5),
        ({"type": "null"}, None),
        ({"anyOf": [{"type": "null"}, {"type": "boolean"}]}, True),
        ({"type": "array", "items": {"type": "integer"}, "minItems": 2}, [1, 1]),
        ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}, ["value", 1]),
        ({"type": "array", "items": {"type": "string"}, "maxItems": 0}, []),
        (
            {
                "allOf": [
                    {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                    {"properties": {"b": {"type": "boolean"}}},
                ]
            },
            {"a": 1, "b": True},
        ),
    ],
)
def test_schema_example_values(schema, expected):
    assert schema_example(schema) == expected


def test_schema_example_refs_and_recursion():
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
                "required": ["name"],
            }
        },
        "$ref": "#/$defs/Node",
    }
    value = schema_example(schema)
    depth = 0
    while value.get("children"):
        value = value["children"][0]
        depth += 1
    assert value["name"] == "name" and 0 < depth < 10
    assert schema_example(schema, include_optional=False) == {"name": "name"}


def test_schema_example_bad_refs_are_value_errors():
    with pytest.raises(ValueError, match="cannot resolve"):
        schema_example({"$ref": "#/$defs/Missing"})
    with pytest.raises(ValueError, match="does not point to a schema"):
        schema_example({"$defs": {"x": 3}, "$ref": "#/$defs/x"})


# -- the public surface ----------------------------------------------------------------


def test_public_names_and_docstring_examples():
    import ast
    import re
    import textwrap

    import agentgraph.testing as testing

    assert isinstance(testing.__all__, tuple)
    assert list(testing.__all__) == sorted(testing.__all__)
    for name in testing.__all__:
        assert getattr(testing, name) is not None, name
    public = {name for name in vars(testing) if not name.startswith("_")}
    assert public == set(testing.__all__)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = testing.Nope
    for name in testing.__all__:
        doc = getattr(testing, name).__doc__ or ""
        for block in re.findall(r"```python\n(.*?)```", doc, flags=re.S):
            compile(textwrap.dedent(block), name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def test_models_import_without_the_testing_extra():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "sys.modules['uvicorn'] = sys.modules['starlette'] = None\n"
        "import agentgraph.testing as t\n"
        "assert t.ScriptedModel('x').remaining == 1\n"
        "try:\n"
        "    t.FakeServer\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert "needs the testing extra" in result.stdout
    assert "starlette is not installed" in result.stdout
