"""The `generate` node: prompt layers, native and prompt modes, attempts, errors and the trace."""

from __future__ import annotations

from typing import Annotated, Any

import attrs
import pytest

from agentgraph import (
    AgentContext,
    AuthenticationError,
    ContextEntry,
    GraphBuilder,
    GraphRunner,
    Guide,
    Message,
    ModelRequested,
    ModelResponded,
    NodeFailed,
    OutputAttempt,
    OutputError,
    ProviderConfigError,
    RetryPolicy,
    Section,
    ServerError,
    Settings,
    StructuredOutput,
    UnsupportedType,
    Usage,
    generable,
    generate,
    json_schema,
    prompt_fragment,
)
from agentgraph.llm import ChatResponse, OutputSchema
from agentgraph.testing import ScriptedModel

pytestmark = pytest.mark.anyio


@generable("The verdict on a change")
@attrs.frozen
class Verdict:
    approve: Annotated[bool, Guide("True if the change can be merged")]
    summary: str


@attrs.frozen
class Tally:
    counts: dict[str, int]


class NativeModel(ScriptedModel):
    """A scripted model that says it takes a response schema."""

    supports_output_schema = True


GOOD = '{"approve": true, "summary": "fine"}'
CONTRACT = prompt_fragment(Verdict)


async def run(node: Any, ctx: AgentContext[Any], **runner: Any) -> AgentContext[Any]:
    with GraphBuilder[Any, Any]("g") as g:
        g.start.edge_to(node).edge_to(g.finish)
    return await GraphRunner(**runner).run(g.build(), ctx)


async def events_of(node: Any, ctx: AgentContext[Any]) -> list[Any]:
    with GraphBuilder[Any, Any]("g") as g:
        g.start.edge_to(node).edge_to(g.finish)
    async with GraphRunner().stream(g.build(), ctx) as stream:
        return [event async for event in stream]


# -- the prompt ------------------------------------------------------------------------


async def test_four_layers_in_order_with_exact_text():
    model = ScriptedModel(GOOD)
    node = generate(
        Verdict,
        instruction="Review the change.",
        context=[Section("Diff", "diff"), Section("Ticket", lambda ctx: ctx.input)],
        model=model,
        input=False,  # the ticket section shows it
    )
    ctx = AgentContext("Fix the login bug", system_prompt="You review code.", state={"diff": "+x"})
    out = await run(node, ctx)
    assert out.input == Verdict(True, "fine")
    (request,) = model.requests
    assert request.messages == (
        Message.system("You review code."),
        Message.user(
            "## Context\n\n### Diff\n+x\n\n### Ticket\nFix the login bug\n\n"
            f"## Task\n\nReview the change.\n\n## Answer format\n\n{CONTRACT}"
        ),
    )
    assert request.output is None and request.tools == ()


async def test_without_sections_or_identity_only_task_and_contract_are_sent():
    model = ScriptedModel(GOOD)
    node = generate(Verdict, instruction=lambda ctx: f"Judge {ctx.input}.", model=model)
    await run(node, AgentContext("PR 7", history=[Message.user("earlier turn")]))
    (request,) = model.requests
    assert request.messages == (
        Message.user(
            f"## Context\n\n### Input\nPR 7\n\n## Task\n\nJudge PR 7.\n\n"
            f"## Answer format\n\n{CONTRACT}"
        ),
    )


async def test_history_is_neither_sent_nor_changed_and_usage_is_added():
    model = ScriptedModel(ChatResponse(Message.assistant(GOOD), usage=Usage(10, 5, 1)))
    ctx = AgentContext("x", history=[Message.user("hi")], usage=Usage(1, 1, 1))
    out = await run(generate(Verdict, instruction="Judge.", model=model), ctx)
    assert list(out.history) == [Message.user("hi")]
    assert out.usage == Usage(11, 6, 2)


async def test_clipped_sections_are_marked_in_the_prompt_and_the_trace():
    model = ScriptedModel(GOOD)
    node = generate(
        Verdict,
        instruction="Review.",
        context=[
            Section("Diff", "diff", budget=10),
            Section("Files", lambda ctx: {"paths": ["a.py", "b.py"]}, budget=100),
            Section("Empty budget", "diff", budget=0),
        ],
        model=model,
    )
    events = await events_of(node, AgentContext(None, state={"diff": "0123456789abcdef"}))
    prompt = model.requests[0].messages[0].content
    assert prompt.startswith(
        "## Context\n\n"
        "### Diff (clipped: the first 10 of 16 characters)\n0123456789\n"
        "[... 6 more characters clipped]\n\n"
        '### Files\n{\n  "paths": [\n    "a.py",\n    "b.py"\n  ]\n}\n\n'
        "### Empty budget (clipped: the first 0 of 16 characters)\n\n"
        "[... 16 more characters clipped]\n\n## Task\n\nReview.\n\n"
    )
    (trace,) = [e for e in events if isinstance(e, StructuredOutput)]
    files = '{\n  "paths": [\n    "a.py",\n    "b.py"\n  ]\n}'
    source = "test_clipped_sections_are_marked_in_the_prompt_and_the_trace.<locals>.<lambda>"
    assert trace.context == (
        ContextEntry("Diff", 16, 10, True, "state['diff']", "0123456789"),
        ContextEntry("Files", 43, 43, False, source, files),
        ContextEntry("Empty budget", 16, 0, True, "state['diff']", ""),
    )


async def test_a_mapping_of_sections_reads_state_keys_and_functions():
    model = ScriptedModel(GOOD)
    context = {"Notes": "notes", "Size": lambda ctx: len(ctx.input)}
    node = generate(Verdict, instruction="Go.", context=context, model=model)
    await run(node, AgentContext("abc", state={"notes": "n"}))
    assert (
        model.requests[0]
        .messages[0]
        .content.startswith(
            "## Context\n\n### Input\nabc\n\n### Notes\nn\n\n### Size\n3\n\n## Task"
        )
    )


async def test_settings_come_from_the_context_unless_the_node_overrides_them():
    model = ScriptedModel(GOOD, GOOD)
    ctx = AgentContext(None, settings=Settings("m-1", temperature=0.9, max_output=50, think=True))
    await run(generate(Verdict, instruction="Go.", model=model), ctx)
    node = generate(
        Verdict, instruction="Go.", model=model, temperature=0.0, max_output=200, think="low"
    )
    await run(node, ctx)
    first, second = model.requests
    assert (first.model, first.temperature, first.max_output, first.think) == ("m-1", 0.9, 50, True)
    assert (second.model, second.temperature, second.max_output, second.think) == (
        "m-1",
        0.0,
        200,
        "low",
    )


# -- native or prompt mode -------------------------------------------------------------


async def test_native_mode_sends_the_strict_schema_and_a_short_contract():
    model = NativeModel(GOOD)
    await run(generate(Verdict, instruction="Go.", model=model), AgentContext(None))
    (request,) = model.requests
    assert request.output == OutputSchema(
        "Verdict", json_schema(Verdict, strict=True), "The verdict on a change", True
    )
    assert request.messages[0].content == (
        "## Task\n\nGo.\n\n## Answer format\n\nAnswer with one JSON object of type `Verdict` "
        "and nothing else; the response format attached to this request gives its exact schema."
    )


async def test_native_can_be_forced_either_way():
    on = ScriptedModel(GOOD)
    await run(generate(Verdict, instruction="Go.", model=on, native=True), AgentContext(None))
    assert on.requests[0].output is not None
    off = NativeModel(GOOD)
    await run(generate(Verdict, instruction="Go.", model=off, native=False), AgentContext(None))
    assert off.requests[0].output is None
    assert off.requests[0].messages[0].content.endswith(CONTRACT)


async def test_a_type_without_a_strict_schema_goes_native_with_the_plain_one():
    model = NativeModel('{"counts": {"a": 1}}')
    out = await run(generate(Tally, instruction="Count.", model=model), AgentContext(None))
    assert out.input == Tally({"a": 1})
    assert model.requests[0].output == OutputSchema("Tally", json_schema(Tally), "", False)


async def test_a_root_that_is_not_a_class_uses_the_prompt():
    model = NativeModel("[1, 2]")
    out = await run(generate(list[int], instruction="Count.", model=model), AgentContext(None))
    assert out.input == [1, 2]
    assert model.requests[0].output is None
    with pytest.raises(UnsupportedType, match="needs a class at the root"):
        generate(list[int], instruction="Count.", model=model, native=True)


# -- attempts ----------------------------------------------------------------------------


async def test_a_malformed_first_answer_is_sent_back_and_the_second_recovers():
    first = '{"approve": "maybe", "summary": '
    model = ScriptedModel('{"approve": "maybe"}', GOOD, chunk_size=4)
    node = generate(Verdict, instruction="Go.", attempts=2, model=model)
    out = await run(node, AgentContext(None, system_prompt="Be brief."))
    assert out.input == Verdict(True, "fine")
    assert out.usage.requests == 2
    prompt = model.requests[0].messages
    assert model.requests[1].messages == (
        *prompt,
        Message.assistant('{"approve": "maybe"}'),
        Message.user(
            "Your answer could not be used:\n"
            '- approve: expected bool, got "maybe"\n'
            "- summary: required field missing\n\n"
            "Answer again with the corrected JSON and nothing else."
        ),
    )
    model = ScriptedModel(first, GOOD)
    out = await run(generate(Verdict, instruction="Go.", attempts=2, model=model), AgentContext(0))
    assert out.input == Verdict(True, "fine")
    assert "cannot parse JSON: unexpected end of text" in model.requests[1].messages[-1].content


async def test_every_attempt_failing_raises_with_every_raw_answer():
    answers = ("no JSON at all", '{"approve": 1}', '{"approve": "x", "summary": 2}')
    model = ScriptedModel(*answers)
    node = generate(Verdict, instruction="Go.", attempts=3, model=model, name="judge")
    with pytest.raises(NodeFailed) as info:
        await run(node, AgentContext(None))
    error = info.value.error
    assert isinstance(error, OutputError) and info.value.__cause__ is error
    assert error.attempts == answers
    assert error.errors == ('approve: expected bool, got "x"', "summary: expected str, got 2")
    assert isinstance(error.__cause__, OutputError)
    assert str(error) == (
        "judge: no valid Verdict after 3 attempts; the last answer had 2 problems:\n"
        '  approve: expected bool, got "x"\n  summary: expected str, got 2'
    )
    assert info.value.attempts == 1  # an output error is not the runner's to retry
    assert len(model.requests) == 3


async def test_a_cut_off_answer_says_so_in_the_feedback():
    cut = ChatResponse(Message.assistant('{"approve": true, "summ'), finish_reason="length")
    model = ScriptedModel(cut)
    with pytest.raises(NodeFailed) as info:
        await run(generate(Verdict, instruction="Go.", model=model), AgentContext(None))
    error = info.value.error
    assert isinstance(error, OutputError)
    assert error.errors[-1] == "$: the answer was cut off by the output limit"
    assert "after 1 attempt;" in str(error)


@pytest.mark.parametrize(
    "error",
    [
        AuthenticationError("bad key", provider="p", status=401),
        ServerError("overloaded", provider="p", status=503),
    ],
)
async def test_provider_errors_are_not_retried_by_generate(error):
    model = ScriptedModel(error, GOOD)
    node = generate(Verdict, instruction="Go.", attempts=3, model=model)
    with pytest.raises(NodeFailed) as info:
        await run(node, AgentContext(None), retry=RetryPolicy(attempts=1))
    assert info.value.error is error
    assert len(model.requests) == 1


async def test_the_runner_retries_a_transient_provider_error():
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    model = ScriptedModel(ServerError("overloaded", provider="p", status=503), GOOD)
    node = generate(Verdict, instruction="Go.", model=model)
    out = await run(node, AgentContext(None), retry=RetryPolicy(attempts=2, sleep=no_sleep))
    assert out.input == Verdict(True, "fine") and len(waits) == 1


# -- the trace -----------------------------------------------------------------------------


async def test_one_trace_record_per_call_with_every_attempt():
    bad = ChatResponse(Message.assistant('{"approve": "x"}'), usage=Usage(7, 3, 1))
    good = ChatResponse(Message.assistant(GOOD), usage=Usage(9, 4, 1))
    model = ScriptedModel(bad, good)
    node = generate(
        Verdict,
        instruction="Go.",
        context=[Section("Diff", "diff", budget=2)],
        attempts=2,
        temperature=0.5,
        model=model,
    )
    events = await events_of(node, AgentContext(None, state={"diff": "abc"}))
    (trace,) = [e for e in events if isinstance(e, StructuredOutput)]
    assert trace == StructuredOutput(
        index=1,
        path=("g", "generate"),
        model="scripted",
        output_type="Verdict",
        instruction="Go.",
        config={
            "attempts": 2,
            "strict": False,
            "native": False,
            "stream": False,
            "temperature": 0.5,
            "max_output": None,
            "think": None,
        },
        context=(ContextEntry("Diff", 3, 2, True, "state['diff']", "ab"),),
        attempts=(
            OutputAttempt(
                1,
                '{"approve": "x"}',
                False,
                ('approve: expected bool, got "x"', "summary: required field missing"),
                "stop",
                Usage(7, 3, 1),
            ),
            OutputAttempt(2, GOOD, True, (), "stop", Usage(9, 4, 1)),
        ),
        ok=True,
        value=Verdict(True, "fine"),
        usage=Usage(16, 7, 2),
    )
    traced = (ModelRequested, ModelResponded, StructuredOutput)
    kinds = [type(e).__name__ for e in events if isinstance(e, traced)]
    assert kinds == [
        "ModelRequested",
        "ModelResponded",
        "ModelRequested",
        "ModelResponded",
        "StructuredOutput",
    ]


async def test_a_failed_call_is_traced_before_it_raises():
    model = ScriptedModel("nope")
    node = generate(Verdict, instruction="Go.", model=model, strict=True)
    with GraphBuilder[Any, Any]("g") as g:
        g.start.edge_to(node).edge_to(g.finish)
    seen: list[Any] = []
    with pytest.raises(NodeFailed):
        async with GraphRunner().stream(g.build(), AgentContext(None)) as stream:
            seen.extend([event async for event in stream])
    (trace,) = [e for e in seen if isinstance(e, StructuredOutput)]
    assert (trace.ok, trace.value, trace.config["strict"]) == (False, None, True)
    assert [a.raw for a in trace.attempts] == ["nope"]
    assert trace.attempts[0].errors[0].startswith("$: cannot parse JSON")


async def test_answers_before_a_provider_error_are_traced_before_it_raises():
    overloaded = ServerError("overloaded", provider="p", status=503)
    model = ScriptedModel('{"approve": "x"}', overloaded)
    node = generate(Verdict, instruction="Go.", model=model, attempts=3)
    with GraphBuilder[Any, Any]("g") as g:
        g.start.edge_to(node).edge_to(g.finish)
    seen: list[Any] = []
    with pytest.raises(NodeFailed) as info:
        async with GraphRunner(retry=RetryPolicy(attempts=1)).stream(
            g.build(), AgentContext(None)
        ) as stream:
            seen.extend([event async for event in stream])
    assert info.value.error is overloaded and len(model.requests) == 2
    (trace,) = [e for e in seen if isinstance(e, StructuredOutput)]
    assert (trace.ok, trace.value, trace.usage.requests) == (False, None, 1)
    assert [(a.number, a.raw, a.ok) for a in trace.attempts] == [(1, '{"approve": "x"}', False)]
    kinds = [type(e).__name__ for e in seen]
    assert kinds.index("StructuredOutput") > kinds.index("ModelRequested")
    assert kinds.count("ModelRequested") == 2


async def test_a_provider_error_on_the_first_attempt_leaves_no_answers_to_trace():
    model = ScriptedModel(ServerError("overloaded", provider="p", status=503))
    node = generate(Verdict, instruction="Go.", model=model, attempts=3)
    with GraphBuilder[Any, Any]("g") as g:
        g.start.edge_to(node).edge_to(g.finish)
    seen: list[Any] = []
    with pytest.raises(NodeFailed):
        async with GraphRunner(retry=RetryPolicy(attempts=1)).stream(
            g.build(), AgentContext(None)
        ) as stream:
            seen.extend([event async for event in stream])
    assert [e for e in seen if isinstance(e, StructuredOutput)] == []
    assert any(isinstance(e, ModelRequested) for e in seen)


# -- bad input -------------------------------------------------------------------------------


def test_bad_options_are_refused_when_the_node_is_built():
    model = ScriptedModel()
    with pytest.raises(ValueError, match="attempts must be an int >= 1"):
        generate(Verdict, instruction="Go.", model=model, attempts=0)
    with pytest.raises(ValueError, match="must not be empty"):
        generate(Verdict, instruction=" ", model=model)
    with pytest.raises(TypeError, match="instruction is a str or a function"):
        generate(Verdict, instruction=3, model=model)  # type: ignore[arg-type]
    with pytest.raises(ProviderConfigError, match="write 'provider:model'"):
        generate(Verdict, instruction="Go.", model="gpt-4o")
    with pytest.raises(TypeError, match="must be a ChatModel or a 'provider:model' string"):
        generate(Verdict, instruction="Go.", model=42)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedType):
        generate(set[int], instruction="Go.", model=model)
    with pytest.raises(ValueError, match="two context sections are labelled 'A'"):
        generate(Verdict, instruction="Go.", model=model, context=[Section("A", "a")] * 2)
    with pytest.raises(TypeError, match="takes Section objects"):
        generate(Verdict, instruction="Go.", model=model, context=["a"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="budget"):
        Section("A", "a", budget=-1)
    with pytest.raises(ValueError, match="label"):
        Section("", "a")
    with pytest.raises(TypeError, match="state key or a function"):
        Section("A", 3)  # type: ignore[arg-type]


async def test_a_missing_state_key_or_a_bad_instruction_fails_the_node():
    model = ScriptedModel(GOOD)
    node = generate(Verdict, instruction="Go.", context={"Diff": "diff"}, model=model)
    with pytest.raises(NodeFailed) as info:
        await run(node, AgentContext(None, state={"other": 1}))
    assert isinstance(info.value.error, KeyError)
    assert "reads the state key 'diff'" in str(info.value.error)
    node = generate(Verdict, instruction=lambda ctx: 3, model=model)  # type: ignore[arg-type,return-value]
    with pytest.raises(NodeFailed) as info:
        await run(node, AgentContext(None))
    assert "returned int, not str" in str(info.value.error)
    assert model.requests == ()
