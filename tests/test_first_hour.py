"""Mistakes caught early with the fix in the message, error transitions and retry rules."""

import anyio
import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphDefinitionError,
    GraphRunner,
    NodeFailed,
    RetryPolicy,
    RouteChosen,
    RoutingError,
    StepLimitExceeded,
    UsageError,
    node,
)
from agentgraph.checkpoint import MemoryStore
from agentgraph.testing import ScriptedModel
from tests.helpers import chain

pytestmark = pytest.mark.anyio


class Flaky(Exception):
    pass


def failing(name: str, times: int, error: type[Exception] = Flaky):
    calls = {"n": 0}

    @node(name=name)
    async def step(ctx):
        calls["n"] += 1
        if calls["n"] <= times:
            raise error(f"{name} failed (key sk-abcdefghijklmnopqrstuvwxyz123456)")
        return ctx.with_input(f"{name} ok")

    return step, calls


@node
def recover(ctx):
    failure = ctx.input
    return ctx.with_input(f"recovered from {failure.error} at {failure.node}")


# -- error transitions ----------------------------------------------------------------


async def test_a_failed_step_routes_to_its_error_handler_with_a_failure_record():
    flaky, _ = failing("flaky", 1)
    events = []
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(flaky).edge_to(g.finish)
        flaky.on_error(recover).edge_to(g.finish)
    runner = GraphRunner(sinks=[events.append])
    out = await runner.run(g.build(), AgentContext("x"))
    assert out.input == "recovered from Flaky at g/flaky"
    routes = [e for e in events if isinstance(e, RouteChosen)]
    assert [(r.source, r.target, r.on_error) for r in routes] == [
        ("start", "flaky", False),
        ("flaky", "recover", True),
        ("recover", "finish", False),
    ]


async def test_the_failure_record_is_data_with_secrets_masked():
    flaky, _ = failing("flaky", 1)
    seen = []

    @node
    def keep(ctx):
        seen.append(ctx.input)
        return ctx.with_input("done")

    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(flaky).edge_to(g.finish)
        flaky.on_error(keep).edge_to(g.finish)
    await GraphRunner().run(g.build(), AgentContext("x"))
    (failure,) = seen
    assert (failure.node, failure.step, failure.attempts, failure.error) == (
        "g/flaky",
        1,
        1,
        "Flaky",
    )
    assert "sk-abc" not in failure.message and "flaky failed" in failure.message


async def test_when_picks_which_failures_are_routed():
    flaky, _ = failing("flaky", 5, ValueError)
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(flaky).edge_to(g.finish)
        flaky.on_error(recover, when=lambda failure, error: isinstance(error, KeyError))
        recover.edge_to(g.finish)
    with pytest.raises(NodeFailed) as failed:
        await GraphRunner().run(g.build(), AgentContext("x"))
    assert isinstance(failed.value.error, ValueError)


async def test_error_transitions_come_after_retries():
    flaky, calls = failing("flaky", 2, TimeoutError)
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(flaky).edge_to(g.finish)
        flaky.on_error(recover).edge_to(g.finish)
    policy = RetryPolicy(attempts=2, initial=0, jitter=0)
    out = await GraphRunner(retry=policy).run(g.build(), AgentContext("x"))
    assert calls["n"] == 2 and out.input == "recovered from TimeoutError at g/flaky"


async def test_step_limits_and_cancellation_are_never_routed():
    @node
    def loop(ctx):
        return ctx

    with GraphBuilder[str, str]("inner") as i:
        i.start.edge_to(loop)
        loop.edge_to(lambda ctx: loop, targets=(loop, i.finish))
    inner = i.build()
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(inner).edge_to(g.finish)
        inner.on_error(recover).edge_to(g.finish)
    with pytest.raises(StepLimitExceeded):
        await GraphRunner(max_steps=20).run(g.build(), AgentContext("x"))

    @node
    async def slow(ctx):
        await anyio.sleep(10)
        return ctx

    with GraphBuilder[str, str]("h") as h:
        h.start.edge_to(slow).edge_to(h.finish)
        slow.on_error(recover).edge_to(h.finish)
    with anyio.move_on_after(0.05) as scope:
        await GraphRunner().run(h.build(), AgentContext("x"))
    assert scope.cancelled_caught


async def test_an_error_route_is_checkpointed_resumed_and_replayed():
    class Crash(BaseException):
        pass

    def build(crash: bool):
        flaky, calls = failing("flaky", 1)

        @node
        def after(ctx):
            if crash:
                raise Crash
            return ctx

        with GraphBuilder[str, str]("g") as g:
            g.start.edge_to(flaky).edge_to(g.finish)
            flaky.on_error(recover).edge_to(after).edge_to(g.finish)
        return g.build(), calls

    store = MemoryStore()
    crashing, _ = build(crash=True)
    with pytest.raises(Crash):
        await GraphRunner().run(crashing, AgentContext("x"), store=store, run_id="r")
    graph, calls = build(crash=False)
    out = await GraphRunner().resume(graph, "r", store)
    assert out.input == "recovered from Flaky at g/flaky" and calls["n"] == 0
    replayed, _ = build(crash=False)
    assert (await GraphRunner().replay(replayed, "r", store)) == out


def test_error_transitions_are_drawn():
    flaky, _ = failing("flaky", 1)
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(flaky).edge_to(g.finish)
        flaky.on_error(recover).edge_to(g.finish)
    assert "-. error .->" in g.build().to_mermaid()


# -- retry rules and a graph's own policy ----------------------------------------------


async def test_a_retry_rule_sees_the_error_node_context_and_attempt():
    flaky, calls = failing("flaky", 3, KeyError)
    seen = []

    def rule(attempt):
        seen.append(
            (type(attempt.error).__name__, attempt.node, attempt.context.input, attempt.attempt)
        )
        return attempt.attempt < 3

    policy = RetryPolicy(attempts=5, initial=0, jitter=0, rule=rule)
    with pytest.raises(NodeFailed):
        await GraphRunner(retry=policy).run(chain("g", flaky), AgentContext("in"))
    assert seen == [
        ("KeyError", "flaky", "in", 1),
        ("KeyError", "flaky", "in", 2),
        ("KeyError", "flaky", "in", 3),
    ]
    assert calls["n"] == 3


async def test_a_graph_sets_the_retry_policy_of_its_nodes():
    flaky, calls = failing("flaky", 3, KeyError)
    own, own_calls = failing("own", 1, KeyError)
    everything = RetryPolicy(attempts=4, initial=0, jitter=0, retry_on=lambda e: True)
    with GraphBuilder[str, str]("g", retry=everything) as g:
        g.start.edge_to(flaky).edge_to(own.with_retry(attempts=1)).edge_to(g.finish)
    with pytest.raises(NodeFailed) as failed:
        await GraphRunner().run(g.build(), AgentContext("x"))
    assert calls["n"] == 4 and own_calls["n"] == 1
    assert failed.value.path == ("g", "own")


# -- mistakes, caught with the fix in the message ---------------------------------------


@node
def echo(ctx):
    return ctx


async def test_a_builder_passed_to_the_runner_says_to_build_it():
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(echo).edge_to(g.finish)
    with pytest.raises(UsageError, match=r"call build\(\)"):
        await GraphRunner().run(g, AgentContext("x"))


async def test_a_bare_node_runs_as_a_graph_of_one():
    out = await GraphRunner().run(echo, AgentContext("x"))
    assert out.input == "x"


async def test_a_plain_value_is_refused_naming_agent_context():
    with pytest.raises(UsageError, match=r"AgentContext\('x'\)"):
        await GraphRunner().run(chain("g", echo), "x")


async def test_a_function_that_forgot_node_is_named_when_it_routes():
    def shout(ctx):
        return ctx.with_input(ctx.input.upper())

    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(echo)
        echo.edge_to(shout)
    with pytest.raises(RoutingError, match="decorate it with @node"):
        await GraphRunner().run(g.build(), AgentContext("x"))


def test_a_step_of_ctx_and_runtime_is_refused_as_a_router():
    def work(ctx, rt):
        return ctx

    with GraphBuilder[str, str]("g") as g, pytest.raises(TypeError, match="Decorate it with @node"):
        g.start.edge_to(work)


def test_a_node_chained_twice_is_refused_at_build():
    with GraphBuilder[str, str]("g") as g:
        g.start.edge_to(echo).edge_to(echo).edge_to(g.finish)
    with pytest.raises(GraphDefinitionError, match=r"with_name"):
        g.build()


async def test_run_sync_inside_a_running_loop_says_to_await():
    with pytest.raises(UsageError, match=r"await runner.run"):
        GraphRunner().run_sync(chain("g", echo), AgentContext("x"))


def test_run_sync_outside_a_loop_runs():
    model = ScriptedModel("hi")
    assert model.remaining == 1
    assert GraphRunner().run_sync(echo, AgentContext(1)).input == 1


# -- gaps the source designs needed ------------------------------------------------------


def test_think_auto_leaves_the_choice_to_the_model_and_nonsense_is_refused():
    from agentgraph import Settings
    from agentgraph.llm import ChatRequest

    assert ChatRequest((), think="auto").think is None
    assert Settings(think="auto").think == "auto"
    with pytest.raises(ValueError, match="think is True, False"):
        Settings(think="maximum")
    with pytest.raises(ValueError, match="think is True, False"):
        ChatRequest((), think=2)


def test_tool_call_arguments_may_be_json_text():
    from agentgraph import ToolCall

    assert ToolCall("c1", "add", '{"a": 1}').arguments == {"a": 1}
    with pytest.raises(ValueError, match="not JSON"):
        ToolCall("c1", "add", "{a: 1")
    with pytest.raises(ValueError, match="JSON object"):
        ToolCall("c1", "add", "[1]")


def test_new_types_are_their_base_type_on_the_wire():
    from typing import NewType

    import attrs

    from agentgraph import json_schema, parse

    UserId = NewType("UserId", int)

    @attrs.frozen
    class Account:
        owner: UserId

    assert json_schema(Account)["properties"]["owner"] == {"type": "integer"}
    assert parse(Account, '{"owner": "7"}') == Account(UserId(7))


def test_try_parse_is_none_only_when_there_is_no_json():
    import attrs

    from agentgraph import OutputError, try_parse

    @attrs.frozen
    class Point:
        x: int

    assert try_parse(Point, "Sorry, I cannot help with that.") is None
    assert try_parse(Point, 'Sure: {"x": 2}') == Point(2)
    with pytest.raises(OutputError):
        try_parse(Point, '{"y": 2}')


def test_a_partial_object_built_by_hand():
    import attrs

    from agentgraph import OutputError, Partial

    @attrs.frozen
    class Review:
        title: str
        stars: int

    partial = Partial({}).with_field("title", "Good").with_field("stars", "4")
    assert partial.get("stars") == "4" and not partial.complete
    done = partial.to_complete(Review)
    assert done.complete and done.result == Review("Good", 4)
    with pytest.raises(OutputError, match="stars"):
        Partial({}).with_field("title", "x").to_complete(Review)


async def test_chat_sends_a_text_input_as_the_first_turn():
    from agentgraph import Message
    from agentgraph.nodes import chat

    model = ScriptedModel("Hello!")
    out = await GraphRunner().run(chat(model), AgentContext("hi there"))
    assert model.requests[0].messages == (Message.user("hi there"),)
    assert [m.role for m in out.history] == ["user", "assistant"]
    with pytest.raises(NodeFailed) as failed:
        await GraphRunner().run(chat(ScriptedModel("x")), AgentContext(42))
    assert isinstance(failed.value.error, UsageError) and "user_turn()" in str(failed.value)


async def test_a_scripted_model_repeats_its_last_answer_or_a_function():
    from agentgraph.llm import ChatRequest

    always = ScriptedModel("42", repeat=True)
    answers = [(await always.request(ChatRequest(()))).message.content for _ in range(3)]
    assert answers == ["42", "42", "42"]
    count = ScriptedModel(lambda request: f"seen {len(request.messages)}", repeat=True)
    assert (
        await count.request(
            ChatRequest(
                (),
            )
        )
    ).message.content == "seen 0"
    with pytest.raises(ValueError, match="needs at least one"):
        ScriptedModel(repeat=True)


async def test_generate_without_a_type_asks_for_free_text_with_the_same_layers(capsys):
    from agentgraph import StructuredOutput, generate

    model = ScriptedModel("   ", "A short poem.\n")
    events = []
    poem = generate(
        instruction="Write a poem.",
        model=model,
        context={"Topic": "topic"},
        attempts=2,
        debug=True,
    )
    ctx = AgentContext(None, state={"topic": "the sea, key sk-abcdefghijklmnopqrstuvwx"})
    out = await GraphRunner(sinks=[events.append]).run(poem, ctx)
    assert out.input == "A short poem."
    prompt = model.requests[0].messages[0].content
    assert "## Task\n\nWrite a poem." in prompt and "Answer format" not in prompt
    (trace,) = [e for e in events if isinstance(e, StructuredOutput)]
    assert [a.ok for a in trace.attempts] == [False, True] and trace.output_type == "text"
    shown = capsys.readouterr().err
    assert "Write a poem." in shown and "attempt 1 (the answer is empty)" in shown
    assert "sk-abc" not in shown


async def test_free_text_streams_as_growing_partials():
    from agentgraph import PartialOutput, generate

    model = ScriptedModel("Once upon a time.", chunk_size=4)
    events = []
    story = generate(instruction="Tell a story.", model=model, stream=True)
    out = await GraphRunner(sinks=[events.append]).run(story, AgentContext(None))
    texts = [e.partial.text for e in events if isinstance(e, PartialOutput)]
    assert out.input == "Once upon a time." and texts[0] == "Once" and texts[-1] == out.input


async def test_a_tool_whose_one_parameter_is_a_class_takes_its_fields():
    import attrs

    from agentgraph import ToolCall, ToolError, generable, tool
    from agentgraph.tools import run_tool_calls

    @generable("Where and when to book.")
    @attrs.frozen
    class Booking:
        city: str
        nights: int = 1

    @tool(unpack=True)
    def book(request: Booking) -> str:
        return f"{request.nights} nights in {request.city}"

    assert set(book.spec.parameters["properties"]) == {"city", "nights"}
    assert book.spec.parameters["required"] == ["city"]
    assert book.spec.description == "Where and when to book."
    (outcome,) = await run_tool_calls([book], [ToolCall("c1", "book", '{"city": "Oslo"}')])
    assert outcome.message.content == "1 nights in Oslo"
    with pytest.raises(ToolError, match="unpack=True needs one parameter"):
        tool(name="two", unpack=True)(lambda a, b: a)


async def test_a_tool_answers_bad_arguments_in_its_own_words():
    from agentgraph import ToolCall, tool
    from agentgraph.tools import run_tool_calls

    @tool(on_invalid=lambda problems: f"Please give a whole number of days ({len(problems)}).")
    def wait(days: int) -> str:
        return f"waited {days}"

    (outcome,) = await run_tool_calls([wait], [ToolCall("c1", "wait", {"days": "soon"})])
    assert outcome.message.is_error
    assert outcome.message.content == "Please give a whole number of days (1)."


def test_enum_values_are_documented_in_the_schema():
    import enum

    import attrs

    from agentgraph import UnsupportedType, generable, json_schema

    @generable("How urgent it is.", values={"LOW": "can wait a week", "HIGH": "today"})
    class Priority(enum.Enum):
        LOW = "low"
        HIGH = "high"

    @attrs.frozen
    class Ticket:
        priority: Priority

    field = json_schema(Ticket)["properties"]["priority"]
    assert field["enum"] == ["low", "high"]
    assert field["description"] == (
        "How urgent it is. Values: `low`: can wait a week; `high`: today."
    )

    @generable(values={"MEDIUM": "?"})
    class Wrong(enum.Enum):
        LOW = "low"

    with pytest.raises(UnsupportedType, match="MEDIUM"):
        json_schema(Wrong)
