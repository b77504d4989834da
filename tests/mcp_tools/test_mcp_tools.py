"""MCP servers' tools as agentgraph tools: in process, over stdio and over streamable HTTP.

Every server here is a real one on the official SDK (`server.py`), started by
the test; the stdio and HTTP ones are subprocesses that the tests end.
"""

from __future__ import annotations

import os
import re
import signal

import anyio
import pytest

from agentgraph import (
    AgentContext,
    GraphRunner,
    Interrupted,
    RunStarted,
    ToolCall,
    ToolError,
    ToolFinished,
)
from agentgraph.checkpoint import MemoryStore
from agentgraph.mcp import CALL_TIMEOUT, MCPConnectionError, MCPToolError, MCPTools
from agentgraph.nodes import react_agent, tool_use
from agentgraph.testing import ScriptedModel
from agentgraph.tools import run_tool_calls

from .conftest import alive, free_port, stdio_command
from .server import build

pytestmark = pytest.mark.anyio

ALLOWED = ("add", "echo", "pid", "fail", "slow", "crash")
# Tests that start server processes several times run on one backend: each process
# costs about a second, and what they check (how the keeper reconnects) is the
# same code on both; the crash, restart and agent tests still run on trio too.
ONE_BACKEND = pytest.mark.parametrize("anyio_backend", ["asyncio"])


def call(name: str, call_id: str = "c1", **arguments: object) -> ToolCall:
    return ToolCall(call_id, name, arguments)


async def one(tools: MCPTools, name: str, **arguments: object):
    [outcome] = await run_tool_calls(tools.tools, [call(name, **arguments)])
    return outcome


def stdio(**options) -> MCPTools:
    command, script = stdio_command()
    return MCPTools.stdio(command, script, **{"allow": ALLOWED, **options})


# -- listing -------------------------------------------------------------------------------
async def test_the_allowed_tools_are_listed_with_the_servers_schemas():
    server = build()
    async with MCPTools(server, allow=["add", "echo"]) as mcp_tools:
        assert [t.name for t in mcp_tools.tools] == ["add", "echo"]
        listed = {t.name: t for t in await server.list_tools()}
        add = mcp_tools.tools[0]
        assert add.spec.parameters == listed["add"].input_schema
        assert add.spec.description == "Add two integers."
        assert add.retry_safe and add.timeout == CALL_TIMEOUT == 300.0
        assert set(mcp_tools.hidden) == {"pid", "fail", "slow", "crash", "delete_everything"}


async def test_a_tool_outside_the_allowlist_is_never_shown_nor_run():
    seen: list[str] = []
    async with MCPTools(build(seen), allow=["add"]) as mcp_tools:
        model = ScriptedModel(ScriptedModel.tool_call("delete_everything"), "I cannot.")
        agent = react_agent(model, mcp_tools.tools)
        out = await GraphRunner().run(agent, AgentContext("clean up"))
    assert [spec.name for spec in model.requests[0].tools] == ["add"]
    refusal = out.history[2]
    assert refusal.is_error
    assert refusal.content == (
        'there is no tool named "delete_everything" here; the tools you may call are: "add"'
    )
    assert seen == [] and out.input == "I cannot."


async def test_an_allowed_name_the_server_does_not_list_is_refused_at_connect():
    with pytest.raises(ToolError, match=r"does not list the allowed tools \['nope'\]"):
        async with MCPTools(build(), allow=["add", "nope"]):
            pass


async def test_names_from_two_servers_collide_until_a_prefix_keeps_them_apart():
    first, second = build(), build()
    async with MCPTools(first, allow=["add"]) as a, MCPTools(second, allow=["add"]) as b:
        with pytest.raises(ValueError, match="tool names must be unique"):
            tool_use([*a.tools, *b.tools])
    seen: list[str] = []
    async with (
        MCPTools(build(), allow=["add"], prefix="left_") as a,
        MCPTools(build(seen), allow=["add"], prefix="right_") as b,
    ):
        assert [t.name for t in (*a.tools, *b.tools)] == ["left_add", "right_add"]
        [outcome] = await run_tool_calls([*a.tools, *b.tools], [call("right_add", a=1, b=2)])
        assert outcome.message.content == "3" and seen == ["add"]


async def test_options_are_checked_when_made():
    with pytest.raises(ValueError, match="unsafe names tools that allow does not"):
        MCPTools(build(), allow=["add"], unsafe=["crash"])
    with pytest.raises(TypeError, match="not one string"):
        MCPTools(build(), allow="add")
    with pytest.raises(ValueError, match="timeout"):
        MCPTools(build(), allow=["add"], timeout=0)
    with pytest.raises(ValueError, match="prefix"):
        MCPTools(build(), allow=["add"], prefix="a b")
    with pytest.raises(TypeError, match="server must be"):
        MCPTools(object(), allow=["add"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mode must be"):
        MCPTools(build(), allow=["add"], mode="2024-11-05")
    with pytest.raises(ToolError, match="enter `async with`"):
        _ = MCPTools(build(), allow=["add"]).tools


# -- calls -----------------------------------------------------------------------------------
async def test_react_agent_calls_an_mcp_tool_through_the_runtime():
    seen: list[str] = []
    async with MCPTools(build(seen), allow=["add"]) as mcp_tools:
        model = ScriptedModel(ScriptedModel.tool_call("add", a=2, b="3"), "2 + 3 = 5")
        agent = react_agent(model, mcp_tools.tools)
        out = await GraphRunner().run(agent, AgentContext("what is 2 + 3?"))
    assert out.input == "2 + 3 = 5"
    assert [m.role for m in out.history] == ["user", "assistant", "tool", "assistant"]
    # The server's schema says integer and nothing is coerced: "3" is refused.
    assert out.history[2].is_error and "'3' is not of type 'integer'" in out.history[2].content
    assert seen == []
    model = ScriptedModel(ScriptedModel.tool_call("add", a=2, b=3), "2 + 3 = 5")
    async with MCPTools(build(seen), allow=["add"]) as mcp_tools:
        out = await GraphRunner().run(react_agent(model, mcp_tools.tools), AgentContext("sum"))
    assert out.history[2].content == "5" and not out.history[2].is_error
    assert seen == ["add"]


async def test_each_call_is_a_tool_finished_event_and_a_recorded_effect():
    seen: list[str] = []
    store = MemoryStore()
    events = []
    async with MCPTools(build(seen), allow=["add"]) as mcp_tools:
        model = ScriptedModel(ScriptedModel.tool_call("add", a=2, b=3), "5")
        agent = react_agent(model, mcp_tools.tools)
        async with GraphRunner().stream(agent, AgentContext("sum"), store=store) as stream:
            events = [event async for event in stream]
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [(e.call.name, e.result.content) for e in finished] == [("add", "5")]
    run_id = next(e.run_id for e in events if isinstance(e, RunStarted))
    # The connection is closed: a replay gets the answer from the record, not the server.
    replayed = await GraphRunner().replay(agent, run_id, store)
    assert replayed.history[2].content == "5" and seen == ["add"]


async def test_a_tool_error_result_reaches_the_model_as_an_error():
    async with MCPTools(build(), allow=["fail"]) as mcp_tools:
        outcome = await one(mcp_tools, "fail", message="the disk is full")
        with pytest.raises(MCPToolError) as info:
            await mcp_tools.call("fail", {"message": "again"})
    assert outcome.error == "raised" and outcome.message.is_error
    assert outcome.message.content == (
        "tool \"fail\" failed: MCPToolError: MCP server 'test-tools', tool 'fail': "
        "Error executing tool fail: the disk is full"
    )
    assert isinstance(outcome.exception, MCPToolError)
    assert (info.value.server, info.value.tool, info.value.detail) == (
        "test-tools",
        "fail",
        "Error executing tool fail: again",
    )


async def test_bad_arguments_are_refused_before_the_server_sees_them():
    seen: list[str] = []
    async with MCPTools(build(seen), allow=["add"]) as mcp_tools:
        outcome = await one(mcp_tools, "add", a="two")
    assert outcome.error == "bad_arguments"
    assert outcome.message.content == (
        'invalid arguments for tool "add":\n'
        "- $: 'b' is a required property\n"
        "- a: 'two' is not of type 'integer'\n"
        "Fix these and call the tool again."
    )
    assert seen == []


async def test_a_slow_call_times_out_and_the_connection_stays_usable():
    seen: list[str] = []
    async with MCPTools(build(seen), allow=["slow", "add"], timeout=0.2) as mcp_tools:
        assert {t.timeout for t in mcp_tools.tools} == {0.2}
        outcome = await one(mcp_tools, "slow", seconds=30)
        assert outcome.error == "timeout"
        assert outcome.message.content == 'tool "slow" did not finish within 0.2s and was abandoned'
        assert (await one(mcp_tools, "add", a=1, b=1)).message.content == "2"
        assert mcp_tools.connections == 1
    assert seen == ["slow", "slow cancelled", "add"]  # the server saw the cancellation


async def test_cancelling_a_run_cancels_the_call_on_the_server():
    seen: list[str] = []
    async with MCPTools(build(seen), allow=["slow", "add"]) as mcp_tools:
        model = ScriptedModel(ScriptedModel.tool_call("slow", seconds=30), "done")
        agent = react_agent(model, mcp_tools.tools)
        with anyio.move_on_after(0.5) as scope:
            await GraphRunner().run(agent, AgentContext("wait"))
        assert scope.cancelled_caught
        assert (await one(mcp_tools, "add", a=2, b=2)).message.content == "4"
    assert seen == ["slow", "slow cancelled", "add"]


async def test_an_unsafe_tool_makes_the_tool_node_unsafe_to_retry():
    async with MCPTools(build(), allow=["add", "echo"], unsafe=["echo"]) as mcp_tools:
        assert [t.retry_safe for t in mcp_tools.tools] == [True, False]
        assert not tool_use(mcp_tools.tools).retry_safe


async def test_an_approved_mcp_call_runs_once_after_the_answer():
    seen: list[str] = []
    async with MCPTools(build(seen), allow=["add"]) as mcp_tools:
        model = ScriptedModel(ScriptedModel.tool_call("add", a=4, b=5), "9")
        agent = react_agent(model, mcp_tools.tools, approve=["add"])
        store = MemoryStore()
        with pytest.raises(Interrupted) as info:
            await GraphRunner().run(agent, AgentContext("sum"), store=store)
        assert seen == []
        out = await GraphRunner().resume(agent, info.value.run_id, store, answer=True)
    assert out.input == "9" and seen == ["add"]


# -- stdio: a real subprocess -------------------------------------------------------------------
async def test_stdio_server_runs_a_react_agent_and_ends_with_the_connection():
    async with stdio() as mcp_tools:
        assert mcp_tools.label.startswith("python") and mcp_tools.label.endswith("server.py")
        model = ScriptedModel(
            ScriptedModel.tool_calls(("add", {"a": 20, "b": 22}), ("pid", {})), "42"
        )
        out = await GraphRunner().run(react_agent(model, mcp_tools.tools), AgentContext("sum"))
        pid = int(out.history[3].content)
        assert out.history[2].content == "42" and alive(pid)
    assert not alive(pid)


async def test_a_server_that_crashes_mid_call_answers_with_an_error_then_reconnects():
    async with stdio(unsafe=["crash"]) as mcp_tools:
        first = int((await one(mcp_tools, "pid")).message.content)
        model = ScriptedModel(
            ScriptedModel.tool_call("crash"), ScriptedModel.tool_call("pid"), "it restarted"
        )
        out = await GraphRunner().run(react_agent(model, mcp_tools.tools), AgentContext("go"))
        crashed, after = out.history[2], out.history[4]
        assert crashed.is_error and crashed.content.startswith(
            'tool "crash" failed: MCPConnectionError: MCP server'
        )
        assert "the connection was lost during the call to 'crash'" in crashed.content
        assert "may or may not have taken effect" in crashed.content
        assert not after.is_error and int(after.content) != first
        assert model.requests[1].messages[-1] == crashed  # the model read it; the run went on
        assert out.input == "it restarted" and mcp_tools.connections == 2
        second = int(after.content)
    assert not alive(first) and not alive(second)


@ONE_BACKEND
async def test_a_safe_call_lost_mid_call_is_sent_once_more_on_a_new_connection():
    async with stdio() as mcp_tools:
        outcome = await one(mcp_tools, "crash")
        assert outcome.error == "raised"
        assert "the connection was lost again calling 'crash'" in outcome.message.content
        assert isinstance(outcome.exception, MCPConnectionError)
        assert mcp_tools.connections == 2  # the first, and the one the call was sent again on
        assert (await one(mcp_tools, "add", a=1, b=2)).message.content == "3"
        assert mcp_tools.connections == 3


@ONE_BACKEND
async def test_a_server_that_died_between_calls_is_reconnected_by_the_next_call():
    async with stdio() as mcp_tools:
        first = int((await one(mcp_tools, "pid")).message.content)
        os.kill(first, signal.SIGKILL)
        with anyio.fail_after(10):
            while alive(first):
                await anyio.sleep(0.02)
        again = await one(mcp_tools, "pid")
        assert again.ok and int(again.message.content) != first
        assert mcp_tools.connections == 2


async def test_calls_that_find_the_server_gone_together_share_one_reconnection():
    async with stdio() as mcp_tools:
        first = int((await one(mcp_tools, "pid")).message.content)
        os.kill(first, signal.SIGKILL)
        with anyio.fail_after(10):
            while alive(first):
                await anyio.sleep(0.02)
        calls = [call("pid", f"c{i}") for i in range(4)]
        outcomes = await run_tool_calls(mcp_tools.tools, calls)
        assert all(o.ok for o in outcomes), [o.message.content for o in outcomes]
        assert len({o.message.content for o in outcomes}) == 1  # one new server answered all
        assert mcp_tools.connections == 2


async def test_a_stdio_command_that_is_no_server_fails_to_connect_clearly():
    with pytest.raises(MCPConnectionError, match="could not connect") as info:
        async with MCPTools.stdio("python3", "-c", "pass", allow=["add"], name="empty"):
            pass
    assert info.value.server == "empty"


@ONE_BACKEND
async def test_a_server_that_never_answers_times_out_connecting_and_is_ended(tmp_path):
    marker = tmp_path / "pid"
    script = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    with pytest.raises(MCPConnectionError, match=r"no answer within 0\.5s"):
        async with MCPTools.stdio("python3", "-c", script, allow=["add"], connect_timeout=0.5):
            pass
    assert not alive(int(marker.read_text()))


# -- streamable HTTP on a loopback port ----------------------------------------------------------
async def test_http_server_tools_run_and_survive_a_server_restart(http_server):
    async with MCPTools.http(http_server.url, allow=ALLOWED, headers={"x-test": "1"}) as mcp_tools:
        model = ScriptedModel(ScriptedModel.tool_call("add", a=1, b=2), "3")
        out = await GraphRunner().run(react_agent(model, mcp_tools.tools), AgentContext("sum"))
        assert out.history[2].content == "3"
        before = int((await one(mcp_tools, "pid")).message.content)
        http_server.restart()
        after = await one(mcp_tools, "pid")
        assert after.ok and int(after.message.content) != before


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_restarted_stateful_server_gets_a_new_session_and_the_call_again(http_server):
    # With the initialize handshake the server keeps a session; after a restart it
    # no longer knows it and refuses the call unrun, so even an unsafe call is sent again.
    options = {"allow": ["pid"], "unsafe": ["pid"], "mode": "legacy"}
    async with MCPTools(http_server.url, **options) as mcp_tools:
        before = int((await one(mcp_tools, "pid")).message.content)
        http_server.restart()
        after = await one(mcp_tools, "pid")
        assert after.ok and int(after.message.content) != before
        assert mcp_tools.connections == 2


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_a_handshake_era_http_session_is_refused_on_trio(http_server):
    with pytest.raises(MCPConnectionError, match="sessions cleanly on trio; run on asyncio"):
        async with MCPTools(http_server.url, allow=["pid"], mode="legacy"):
            pass


@ONE_BACKEND
async def test_http_server_that_is_gone_gives_an_error_result_not_a_crash(http_server):
    async with MCPTools(http_server.url, allow=["add"]) as mcp_tools:
        http_server.stop()
        outcome = await one(mcp_tools, "add", a=1, b=2)
    assert outcome.error == "raised" and isinstance(outcome.exception, MCPConnectionError)
    # Reconnecting fails, or (without a handshake to make) the call on the new connection.
    assert re.search("could not reconnect|lost again", outcome.message.content)


@pytest.mark.parametrize("depth", [0, 150, 400])
def test_a_stdio_label_keeps_the_script_name_wherever_the_checkout_lives(depth):
    folder = "/" + "/".join(["d" * 9] * (depth // 10)) if depth else ""
    script = f"{folder}/tests/mcp_tools/server.py"
    tools = MCPTools.stdio("/usr/local/bin/python3.11", script, "--port", "8000", allow=["a"])
    assert len(script) >= depth
    assert tools.label.startswith("python3.11 ") and len(tools.label) <= 80
    assert "mcp_tools/server.py --port 8000" in tools.label


def test_credentials_stay_out_of_labels_and_reprs():
    secret = "Bearer s3cret"
    tools = MCPTools.http(
        "https://user:pw@mcp.example.invalid/mcp?token=t0k", allow=["a"], headers={"auth": secret}
    )
    shown = f"{tools!r} {tools._transport!r} {tools._transport.target!r} {tools.label}"
    assert "s3cret" not in shown and "pw" not in shown and "t0k" not in shown
    assert tools.label == "mcp.example.invalid/mcp"


async def test_nothing_listening_is_a_connection_error():
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(MCPConnectionError, match="could not connect"):
        async with MCPTools(url, allow=["add"], connect_timeout=5):
            pass


# -- the application's own errors pass through unwrapped ------------------------------------------
@ONE_BACKEND
async def test_an_error_in_the_body_leaves_unwrapped_and_the_server_is_ended():
    with pytest.raises(KeyError, match="mine"):
        async with stdio() as mcp_tools:
            pid = int((await one(mcp_tools, "pid")).message.content)
            raise KeyError("mine")
    assert not alive(pid)
