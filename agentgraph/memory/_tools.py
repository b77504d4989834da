"""`memory_tools`: remember, recall and forget for an agent, in a namespace the graph fixes.

The namespace comes from the run's context (its `state`, usually), through a
function the graph's author writes; no tool takes a namespace argument, so
whatever the model sends it cannot reach another user's memory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from .._core._context import AgentContext
from .._util._tool_effect import effect_id
from ..tools._tool import Tool, tool
from ._items import Memory, Namespace, check_namespace

__all__ = ("memory_tools",)

NamespaceOf = Callable[[AgentContext[Any]], Sequence[str]]
"""Picks the namespace of a run from its context: `lambda ctx: ("user", ctx.state["user"])`."""


def fact_key(fact: str) -> str:
    """The key a fact is remembered under: its digest, so the same fact is kept once."""
    return "fact-" + hashlib.sha256(fact.strip().encode()).hexdigest()[:16]


def memory_tools(
    memory: Memory, namespace: NamespaceOf, *, limit: int = 5
) -> tuple[Tool[..., Any], Tool[..., Any], Tool[..., Any]]:
    """The tools `remember(fact)`, `recall(query)` and `forget(key)` over `memory`.

    ```python
    remember, recall, forget = memory_tools(
        memory, lambda ctx: ("user", ctx.state["user_id"], "facts")
    )
    agent = react_agent(model, [remember, recall, forget])
    ```
    Facts are stored as `{"text": fact}` under a key made from the fact.
    In a run with a checkpoint store, `remember` and `forget` write with the
    call's effect id (`agentgraph.tools.effect_id`): a call that a crash cut
    off runs again on resume, and the store applies it once (no second
    version, and `forget` answers as it did the first time). A namespace
    function that fails, or returns something that is not a namespace,
    fails the call (the model reads the error).
    """
    if not isinstance(memory, Memory):
        raise TypeError(f"memory_tools() takes a Memory store, not {type(memory).__name__}")
    if not callable(namespace):
        raise TypeError("namespace is a function of the context that returns the namespace")

    def where(ctx: AgentContext[Any]) -> Namespace:
        return check_namespace(namespace(ctx))

    @tool
    async def remember(fact: str, ctx: AgentContext[Any]) -> str:
        """Remember a fact about the user for later conversations.

        Args:
            fact: the fact, as one self-contained sentence.
        """
        key = fact_key(fact)
        await memory.put(where(ctx), key, {"text": fact.strip()}, effect=effect_id())
        return f"remembered ({key})"

    @tool
    async def recall(query: str, ctx: AgentContext[Any]) -> str:
        """Look up what is remembered about the user.

        Args:
            query: what to look for, in words.
        """
        hits = await memory.search(where(ctx), query, limit=limit)
        if not hits:
            return "nothing remembered about that"
        return "\n".join(f"{hit.id}: {hit.item.value.get('text', hit.text)}" for hit in hits)

    @tool
    async def forget(key: str, ctx: AgentContext[Any]) -> str:
        """Forget a remembered fact.

        Args:
            key: the fact's key, as recall shows it.
        """
        deleted = await memory.delete(where(ctx), key, effect=effect_id())
        return f"forgot {key}" if deleted else f"nothing was remembered as {key}"

    return remember, recall, forget
