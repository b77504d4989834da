"""Graphs the tracing tests run: nested, with a retry, a loop and (on request) a failure."""

from __future__ import annotations

from typing import Any

from agentgraph import AgentContext, Graph, GraphBuilder, Message, Node, RetryPolicy, node, tool
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel

FAKE_KEY = "sk-test-0123456789abcdefghijklmnop"

# The event kinds of `nested_graph(fail=True)` run on input 1, in order.
FAILED_RUN = [
    "run_started",
    "route_chosen",
    "node_started",  # prepare
    "node_finished",
    "route_chosen",
    "node_started",  # inner
    "route_chosen",
    "node_started",  # flaky
    "retry_scheduled",
    "node_finished",
    *["route_chosen", "node_started", "node_finished"] * 4,  # double, four times
    "route_chosen",
    "node_started",  # check
    "node_failed",
    "node_failed",  # inner
    "run_finished",
]


class Waits(list[float]):
    """A `RetryPolicy.sleep` that records the wait instead of sleeping."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


def nested_graph(*, fail: bool = False, waits: Waits | None = None) -> Graph[int, int]:
    """outer: prepare -> inner -> finish; inner: flaky (fails once) -> double (loops) -> check.

    On input 1: prepare makes 2, flaky fails once and is retried, double runs
    four times (to 32), and check ends the run, or raises when `fail`.
    """
    calls = {"flaky": 0}
    policy = RetryPolicy(
        attempts=3, initial=0.25, jitter=0.0, sleep=waits if waits is not None else Waits()
    )

    @node
    def prepare(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_input(ctx.input + 1).append(Message.user(f"start at {ctx.input + 1}"))

    @node
    async def flaky(ctx: AgentContext[int]) -> AgentContext[int]:
        calls["flaky"] += 1
        if calls["flaky"] == 1:
            raise TimeoutError("upstream slow")
        return ctx

    @node
    def double(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_input(ctx.input * 2)

    @node
    def check(ctx: AgentContext[int]) -> AgentContext[int]:
        if fail:
            raise ValueError(f"{ctx.input} is too big")
        return ctx.append(Message.assistant(f"ended at {ctx.input}"))

    flaky_retried = flaky.with_retry(policy)

    def again(ctx: AgentContext[int]) -> Node[int, int]:
        return double if ctx.input < 20 else check

    with GraphBuilder[int, int]("inner") as i:
        i.start.edge_to(flaky_retried).edge_to(double)
        double.edge_to(again, targets=(double, check))
        check.edge_to(i.finish)
    inner = i.build()

    with GraphBuilder[int, int]("outer") as o:
        o.start.edge_to(prepare).edge_to(inner).edge_to(o.finish)
    return o.build()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def lookup(name: str) -> str:
    """Find a person's email address."""
    raise KeyError(name)


def scripted_agent() -> tuple[Graph[str, str], ScriptedModel]:
    """A react agent whose model calls two tools at once (one fails), then answers."""
    model = ScriptedModel(
        ScriptedModel.tool_calls(("add", {"a": 2, "b": 3}), ("lookup", {"name": "Ann"})),
        "2 + 3 = 5; write to ann@example.com",
        name="scripted-model",
    )
    return react_agent(model, [add, lookup], system_prompt="You add numbers."), model


def secret_context(question: str) -> AgentContext[str]:
    """A context that carries a fake key in header-like fields and in message text."""
    earlier = Message(
        "user",
        f"my key is {FAKE_KEY}, keep it safe",
        provider_data={"openai.headers": {"x-api-key": FAKE_KEY, "Accept": "text/plain"}},
    )
    return AgentContext(
        question,
        history=[earlier, Message.assistant("noted")],
        state={"Authorization": f"Bearer {FAKE_KEY}", "region": "eu"},
    )


def mask_emails(field: str, text: str) -> str:
    """A redaction hook for personal data: email addresses in any field."""
    import re

    return re.sub(r"[\w.]+@[\w.]+", "<email>", text)


def kinds(records: list[dict[str, Any]]) -> list[str]:
    return [r["event"] for r in records]
