"""The memory tools stay in the namespace the graph fixes; the example runs offline."""

import runpy
import sqlite3

import pytest

from agentgraph import AgentContext, ToolCall
from agentgraph.memory import InMemoryMemory, memory_tools
from agentgraph.memory._tools import fact_key
from agentgraph.tools import execute_calls
from tests.memory.crash import ROOT, kill_after_write, resume_after_kill

pytestmark = pytest.mark.anyio


def mine(ctx):
    return ("user", ctx.state["user_id"])


async def call(tools, ctx, name, **arguments):
    [message] = await execute_calls(tools, [ToolCall("c1", name, arguments)], context=ctx)
    return message


async def test_remember_recall_forget_in_the_contexts_namespace():
    memory = InMemoryMemory()
    tools = memory_tools(memory, mine)
    alice = AgentContext("", state={"user_id": "alice"})
    bob = AgentContext("", state={"user_id": "bob"})
    said = await call(tools, alice, "remember", fact="Alice is vegetarian")
    assert not said.is_error and "remembered (fact-" in said.content
    assert await memory.list_namespaces() == [("user", "alice")]
    found = await call(tools, alice, "recall", query="vegetarian")
    key = found.content.split(":")[0]
    assert found.content == f"{key}: Alice is vegetarian"
    assert (await call(tools, bob, "recall", query="vegetarian")).content == (
        "nothing remembered about that"
    )
    assert (await call(tools, bob, "forget", key=key)).content == f"nothing was remembered as {key}"
    assert (await call(tools, alice, "forget", key=key)).content == f"forgot {key}"
    assert await memory.list_namespaces() == []


async def test_the_model_cannot_name_a_namespace():
    memory = InMemoryMemory()
    tools = memory_tools(memory, mine)
    for t in tools:
        assert set(t.spec.parameters["properties"]) <= {"fact", "query", "key"}
    alice = AgentContext("", state={"user_id": "alice"})
    # An argument the tool does not have is dropped: the fact lands in Alice's namespace.
    await call(tools, alice, "remember", fact="x", namespace=["user", "bob"])
    await call(tools, alice, "forget", key="k", user_id="bob")
    assert await memory.list_namespaces() == [("user", "alice")]


async def test_a_context_without_a_user_fails_the_call_and_stores_nothing():
    memory = InMemoryMemory()
    tools = memory_tools(memory, mine)
    failed = await call(tools, AgentContext(""), "remember", fact="x")
    assert failed.is_error and "user_id" in failed.content
    odd = memory_tools(memory, lambda ctx: ("user", 7))
    failed = await call(odd, AgentContext(""), "remember", fact="x")
    assert failed.is_error and "namespace[1] is a string" in failed.content
    assert await memory.list_namespaces() == []


def test_the_tools_are_retry_safe_and_the_arguments_are_checked():
    remember, recall, forget = memory_tools(InMemoryMemory(), mine)
    assert (remember.retry_safe, recall.retry_safe, forget.retry_safe) == (True, True, True)
    with pytest.raises(TypeError, match="Memory store"):
        memory_tools(object(), mine)


def test_the_memory_agent_example_runs_offline(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("sys.argv", ["memory_agent.py", str(tmp_path)])
    runpy.run_path(str(ROOT / "examples" / "memory_agent.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "-> Noted, I will remember that." in out
    assert "Knowing that I love spicy food and I am vegetarian, I suggest" in out
    assert "bob: What should I cook tonight?\n  -> I don't know your tastes yet" in out
    assert "namespaces: [('user', 'alice')]" in out


async def test_sigkill_inside_remember_then_resume_writes_once(tmp_path):
    """The store committed `remember`, the journal never heard: the resumed call is applied once."""
    runs, mem = tmp_path / "runs.db", tmp_path / "memory.db"
    await kill_after_write("crash_tools", runs, mem)
    with sqlite3.connect(mem) as conn:
        assert conn.execute("SELECT count(*) FROM memory_items").fetchone()[0] == 1
    out = (await resume_after_kill("crash_tools", runs, mem)).splitlines()
    gone = fact_key("Alice eats meat.")
    assert out == [
        f"tool remembered ({fact_key('Alice is vegetarian.')})",
        f"tool nothing was remembered as {gone}",
        f"tool remembered ({fact_key('Alice loves spicy food.')})",
        "answer Noted.",
    ]
    with sqlite3.connect(mem) as conn:
        rows = conn.execute("SELECT value, version FROM memory_items ORDER BY value").fetchall()
        effects = [e for (e,) in conn.execute("SELECT effect FROM memory_effects")]
    assert rows == [
        (b'{"text":"Alice is vegetarian."}', 1),  # written before the kill, not again
        (b'{"text":"Alice loves spicy food."}', 1),
    ]
    assert len(effects) == 3 and all(e.startswith("remember/") for e in effects)
