"""A client's whole conversation as the next turn of a stored thread.

An AG-UI client sends every message each time; the thread in the store has
its own copy. The turn runs on what the thread lacks, rewinding the thread
where the two part. The turn then names the head it was worked out from, so
that when another process runs a turn of the same thread in between (this
server's own turns are kept apart by `Runs`), the turn is refused with
`ThreadBusy` instead of going on from a conversation the client never saw,
and the other turn stays the head.
"""

from __future__ import annotations

from typing import Any

from .._core._context import AgentContext
from .._core._json import Types
from ..checkpoint._threads import read_thread, rewind_thread
from ..llm._messages import Message

__all__ = ("on_thread",)


async def on_thread(
    store: Any, thread_id: str, ctx: AgentContext[Any], types: Types
) -> tuple[AgentContext[Any], str | None]:
    """`ctx` as the next turn of the thread, and the head that turn must continue from.

    When the thread's stored conversation begins the client's, the rest is
    new; when the two differ, the thread is rewound to their first difference
    (the turns after it stay readable) and the client's messages from there
    on are the new ones. The rewind itself is refused when the head moved
    since the thread was read.
    """
    found = await store.load_thread(thread_id)
    sent = tuple(ctx.history)
    if found is None or found.head is None:
        return ctx, None
    if not sent:
        return ctx, found.head
    thread = await read_thread(store, thread_id, types=types)
    stored, head = thread.messages, thread.head
    same = 0
    while same < min(len(stored), len(sent)) and _same(stored[same], sent[same]):
        same += 1
    if same < len(stored):
        head = await rewind_thread(store, thread_id, same, types=types, expect_head=head)
    return ctx.evolve(history=sent[same:]), head


def _same(stored: Message, sent: Message) -> bool:
    """Whether a client's message is the stored one, as far as a client can say it."""
    return (
        stored.role == sent.role
        and stored.content == sent.content
        and stored.tool_call_id == sent.tool_call_id
        and [(c.id, c.name, dict(c.arguments)) for c in stored.tool_calls]
        == [(c.id, c.name, dict(c.arguments)) for c in sent.tool_calls]
    )
