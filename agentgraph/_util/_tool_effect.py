"""The effect id of the tool call running now, for tools that write to a store of their own.

A journal knows each tool call of a step by a key that a resumed step gives the
same call again; a tool does not see the journal. So the journal names the
ids of the calls it is about to run (`tool_effects`), the executor marks the
call each tool runs for (`calling`), and the tool asks `effect_id()`. A store
that keeps the id with what it writes, in the same transaction, and applies
an id once, makes the tool's write happen once however often a crash and a
resume make the call run (`agentgraph.memory` stores do).

Context variables carry both, so concurrent calls in one batch each see
their own id and nothing leaks past the call.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType

__all__ = ("calling", "effect_id", "tool_effects")

CallName = tuple[str, str]
"""A call as the executor and the journal both know it: the tool's name and the call's id."""

_NONE: Mapping[CallName, str] = MappingProxyType({})
_effects: ContextVar[Mapping[CallName, str]] = ContextVar("agentgraph_tool_effects", default=_NONE)
_call: ContextVar[CallName | None] = ContextVar("agentgraph_tool_call", default=None)


def effect_id() -> str | None:
    """The effect id of the tool call running now, or None.

    In a run with a checkpoint store, it names the call for good: the run, the
    step, its attempt, and the call the model made. A resumed run that makes
    the same call again gets the same id, so a tool that hands it to a store
    which applies an id once (`agentgraph.memory`'s `put` and `delete` take
    `effect=`) writes once. None outside a tool call, in a run without a
    store, or when the model gave two calls of one batch the same id.

    ```python
    @tool
    async def note(text: str) -> str:
        '''Note something down.'''
        await memory.put(("notes",), key_of(text), {"text": text}, effect=effect_id())
        return "noted"
    ```
    One id is for one write: a tool that writes twice derives an id for each
    (`f"{effect_id()}#2"`).
    """
    call = _call.get()
    return None if call is None else _effects.get().get(call)


@contextmanager
def tool_effects(ids: Mapping[CallName, str]) -> Iterator[None]:
    """While the block runs, the calls named in `ids` have those effect ids (for journals)."""
    token = _effects.set(MappingProxyType(dict(ids)))
    try:
        yield
    finally:
        _effects.reset(token)


@contextmanager
def calling(name: str, call_id: str) -> Iterator[None]:
    """While the block runs, the tool call running is `call_id` to tool `name` (for executors)."""
    token = _call.set((name, call_id))
    try:
        yield
    finally:
        _call.reset(token)
