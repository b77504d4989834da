"""Carrying out tool calls: results in call order, every failure a readable tool message."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import attrs
import pytest

from agentgraph import AgentContext, ContextEncodingError, Message, ToolCall, ToolError
from agentgraph.tools import RAW_ARGUMENTS, ToolOutcome, execute_calls, run_tool_calls, tool

pytestmark = pytest.mark.anyio


@attrs.frozen
class Point:
    x: int
    y: int


@tool
def add(a: int, b: int = 0) -> int:
    """Add two numbers."""
    return a + b


@tool
async def echo(text: str) -> str:
    return text


@tool
def where(p: Point) -> Point:
    return Point(p.x + 1, p.y)


@tool
def fails(reason: str) -> str:
    raise RuntimeError(reason)


@tool
def strange() -> set[int]:
    return {1}


def call(name: str, call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments)


async def test_results_answer_their_calls_in_order():
    calls = [
        call("add", "c1", a="2", b=3),
        call("echo", "c2", text="hi"),
        call("where", "c3", p={"x": 1, "y": 2}),
    ]
    messages = await execute_calls([add, echo, where], calls)
    assert messages == [
        Message.tool("c1", "5", name="add"),
        Message.tool("c2", "hi", name="echo"),
        Message.tool("c3", '{"x":2,"y":2}', name="where"),
    ]


async def test_outcomes_record_duration_and_success():
    outcomes = await run_tool_calls([add], [call("add", a=1)])
    assert len(outcomes) == 1
    outcome = outcomes[0]
    assert isinstance(outcome, ToolOutcome)
    assert outcome.ok
    assert outcome.error is None
    assert outcome.call == call("add", a=1)
    assert outcome.duration >= 0
    assert outcome.message.content == "1"
    assert await run_tool_calls([add], []) == []


async def test_unknown_tool_is_refused_listing_only_the_allowed_names():
    (outcome,) = await run_tool_calls([add, echo], [call("delete_everything", x=1)])
    assert outcome.error == "unknown_tool"
    message = outcome.message
    assert message.is_error
    assert message.tool_call_id == "c1"
    assert message.name == "delete_everything"
    assert message.content == (
        'there is no tool named "delete_everything" here; the tools you may call are: "add", "echo"'
    )
    # A tool that exists elsewhere but was not given is refused the same way.
    (outcome,) = await run_tool_calls([echo], [call("add", a=1)])
    assert outcome.message.content == (
        'there is no tool named "add" here; the tools you may call are: "echo"'
    )
    assert "where" not in outcome.message.content
    (outcome,) = await run_tool_calls([], [call("add", a=1)])
    assert outcome.message.content.endswith("no tools are available")


async def test_arguments_that_were_not_json():
    (outcome,) = await run_tool_calls([add], [call("add", **{RAW_ARGUMENTS: '{"a": 1,,'})])
    assert outcome.error == "bad_arguments"
    assert outcome.message.is_error
    assert outcome.message.content == (
        'the arguments for tool "add" are not valid JSON ("{\\"a\\": 1,,"); '
        "call it again with a JSON object that matches its parameters"
    )


async def test_invalid_arguments_list_every_path():
    (outcome,) = await run_tool_calls([add, where], [call("where", p={"x": "one", "z": 1})])
    assert outcome.error == "bad_arguments"
    assert outcome.message.content == (
        'invalid arguments for tool "where":\n'
        '- p.x: expected int, got "one"\n'
        "- p.y: required field missing\n"
        "Fix these and call the tool again."
    )
    (outcome,) = await run_tool_calls([add], [call("add")])
    assert "- a: required field missing" in outcome.message.content


async def test_a_tool_that_raises():
    (outcome,) = await run_tool_calls([fails], [call("fails", reason="disk full")])
    assert outcome.error == "raised"
    assert isinstance(outcome.exception, RuntimeError)
    assert outcome.message.is_error
    assert outcome.message.content == 'tool "fails" failed: RuntimeError: disk full'


async def test_a_result_that_is_not_json():
    (outcome,) = await run_tool_calls([strange], [call("strange")])
    assert outcome.error == "bad_result"
    assert outcome.message.is_error
    assert outcome.message.content.startswith('tool "strange" returned a set that cannot be sent')


class Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("cannot print")


@tool
def obscure() -> str:
    raise Unprintable


@tool
def looped() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


async def test_an_exception_that_cannot_print_itself():
    outcomes = await run_tool_calls([obscure, add], [call("obscure"), call("add", "c2", a=1)])
    first, second = outcomes
    assert first.error == "raised" and isinstance(first.exception, Unprintable)
    assert first.message.content == 'tool "obscure" failed: Unprintable: <unprintable Unprintable>'
    assert second.error is None and second.message.content == "1"


async def test_a_result_that_contains_itself():
    (outcome,) = await run_tool_calls([looped], [call("looped")])
    assert outcome.error == "bad_result" and outcome.message.is_error
    assert isinstance(outcome.exception, ContextEncodingError)
    assert outcome.message.content.startswith(
        'tool "looped" returned a list that cannot be sent as JSON: cannot encode value[0]'
    )
    assert "deeper than 100 levels" in outcome.message.content


async def test_timeouts_for_async_and_sync_tools():
    release = threading.Event()

    @tool
    async def slow() -> str:
        await anyio.sleep(30)
        return "late"

    @tool(timeout=0.05)
    def blocking() -> str:
        release.wait(10)
        return "late"

    with anyio.fail_after(5):
        outcomes = await run_tool_calls(
            [slow, blocking], [call("slow", "a"), call("blocking", "b")], timeout=0.05
        )
    release.set()
    assert [o.error for o in outcomes] == ["timeout", "timeout"]
    assert (
        outcomes[0].message.content == 'tool "slow" did not finish within 0.05s and was abandoned'
    )
    assert all(o.message.is_error for o in outcomes)


async def test_a_tool_timeout_overrides_the_default():
    @tool(timeout=5)
    async def patient() -> str:
        await anyio.sleep(0.05)
        return "done"

    (outcome,) = await run_tool_calls([patient], [call("patient")], timeout=0.01)
    assert outcome.ok
    assert outcome.message.content == "done"


async def test_concurrency_is_bounded_and_order_kept():
    running = 0
    peak = 0

    @tool
    async def work(n: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.01 * (6 - n))  # later calls finish first
        running -= 1
        return n

    calls = [call("work", f"c{n}", n=n) for n in range(6)]
    messages = await execute_calls([work], calls, limit=2)
    assert peak == 2
    assert [m.content for m in messages] == ["0", "1", "2", "3", "4", "5"]
    assert [m.tool_call_id for m in messages] == [f"c{n}" for n in range(6)]

    peak = 0
    await execute_calls([work], calls, limit=8)
    assert peak == 6


async def test_sync_tools_run_in_worker_threads_without_blocking_the_loop():
    loop_thread = threading.get_ident()
    started = threading.Event()
    release = threading.Event()

    @tool
    def blocking() -> bool:
        started.set()
        # Waits for the event loop to release it: this deadlocks if run on the loop.
        return release.wait(5) and threading.get_ident() != loop_thread

    async def releaser() -> None:
        while not started.is_set():
            await anyio.sleep(0.001)
        release.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(releaser)
            (outcome,) = await run_tool_calls([blocking], [call("blocking")])
    assert outcome.message.content == "true"


async def test_cancellation_is_not_swallowed():
    cancelled = anyio.Event()

    @tool
    async def forever() -> str:
        try:
            await anyio.sleep(30)
        finally:
            cancelled.set()
        return "never"

    result: list[Message] | None = None
    with anyio.move_on_after(0.05) as scope:
        result = await execute_calls([forever, echo], [call("forever"), call("echo", text="x")])
    assert scope.cancelled_caught
    assert result is None
    assert cancelled.is_set()


async def test_context_is_injected():
    @tool
    def whoami(ctx: AgentContext[str], suffix: str = "") -> str:
        return ctx.input + suffix

    ctx = AgentContext("ada")
    messages = await execute_calls([whoami], [call("whoami", suffix="!")], context=ctx)
    assert messages[0].content == "ada!"
    with pytest.raises(ToolError, match="takes the agent context"):
        await execute_calls([whoami], [call("whoami")])


async def test_configuration_errors():
    @tool(name="add")
    def other_add(a: int) -> int:
        return a

    with pytest.raises(ToolError, match="two different tools are named 'add'"):
        await execute_calls([add, other_add], [call("add", a=1)])
    assert await execute_calls([add, add], [call("add", a=1)]) == [
        Message.tool("c1", "1", name="add")
    ]
    with pytest.raises(ValueError, match="limit must be at least 1"):
        await execute_calls([add], [call("add", a=1)], limit=0)


async def test_failures_do_not_disturb_the_other_calls():
    calls = [
        call("fails", "c1", reason="x"),
        call("add", "c2", a=1, b=1),
        call("nope", "c3"),
        call("add", "c4", a="x"),
    ]
    outcomes = await run_tool_calls([add, fails], calls)
    assert [o.error for o in outcomes] == ["raised", None, "unknown_tool", "bad_arguments"]
    assert [o.message.tool_call_id for o in outcomes] == ["c1", "c2", "c3", "c4"]
    assert outcomes[1].message == Message.tool("c2", "2", name="add")
