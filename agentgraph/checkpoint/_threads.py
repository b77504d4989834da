"""Threads: conversations that go on across runs, processes and restarts.

A thread is a sequence of runs (its turns) kept in a checkpoint store, and a
head: the run whose final context the next turn starts from. A turn holds the
thread's lease (kept in the store like a run's, under `thread:<id>`) from its
start to its end, so a second run on a busy thread is refused (`ThreadBusy`)
before anything runs. A turn that finishes moves the head to itself, unless
another turn moved it since this one started (a stale turn, resumed late,
stays in the thread without becoming its head).

A caller that decided what a turn sends from the thread as it read it (a
server comparing a client's conversation with the stored one) names the head
it read (`expect_head=`): the turn, and a rewind, are refused with
`ThreadMoved` (a `ThreadBusy`) under the thread's lease when another turn moved the head since.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio
import attrs
import orjson

from .._core._context import AgentContext, History, Settings
from .._core._errors import CheckpointError, ContextDecodingError, RunBusy, UsageError
from .._core._errors_threads import (
    ThreadBusy,
    ThreadDamaged,
    ThreadError,
    ThreadMoved,
    ThreadNotFound,
    shown,
)
from .._core._json import NO_TYPES, Types
from .._core._runner import ANY_HEAD, Head, new_run_id
from ..llm._messages import Message
from ._bases import final_context
from ._codec import full_context
from ._compact_step import start_with
from ._compaction import Compaction, plan
from ._lease import Lease, new_owner
from ._records import RunRecord, ThreadHead, ThreadLog
from ._resume import open_run

if TYPE_CHECKING:
    from .._core._graph import Graph
    from ._journal import StoreJournal
    from ._store import CheckpointStore

__all__ = (
    "Thread",
    "ThreadStore",
    "continued",
    "delete_thread",
    "fork_thread",
    "hold_thread",
    "list_threads",
    "open_thread",
    "read_thread",
    "reset_thread",
    "rewind_thread",
)

_MAX_ID = 256
_SEED = orjson.dumps({"graph": "thread", "nodes": [], "edges": {}, "subgraphs": {}})


@runtime_checkable
class ThreadStore(Protocol):
    """A checkpoint store that keeps threads (every store of `agentgraph.checkpoint` does)."""

    async def load_thread(self, thread_id: str) -> ThreadLog | None: ...

    async def thread_ids(self) -> tuple[str, ...]: ...

    async def delete_thread(self, thread_id: str) -> bool: ...


@attrs.frozen
class Thread:
    """A thread as read from its store: its head's final context and its turns.

    Attributes:
        thread_id: the thread's id.
        head: the run the next turn continues from (None: no turn finished yet).
        context: that run's final context (the one read, with `run_id=`); None without one.
        runs: each turn's run id and the run it started from, oldest first.
        created: wall-clock time of the first turn.
        updated: wall-clock time the head last moved.
    """

    thread_id: str
    head: str | None
    context: AgentContext[Any] | None
    runs: tuple[tuple[str, str | None], ...]
    created: float
    updated: float

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation: the context's history (empty without a context)."""
        return () if self.context is None else tuple(self.context.history)


def _threads(store: Any) -> ThreadStore:
    if isinstance(store, ThreadStore):
        return store
    raise UsageError(
        f"{type(store).__name__} keeps no threads: a store needs load_thread, thread_ids and "
        "delete_thread (MemoryStore, SQLiteStore and PostgresStore have them)"
    )


def _check_id(thread_id: Any) -> str:
    """`thread_id` if it is 1 to 256 printable characters; else one error, `ThreadError`."""
    if not isinstance(thread_id, str):
        raise ThreadError(
            shown(thread_id), f"a thread id is a string, not {type(thread_id).__name__}"
        )
    if not 0 < len(thread_id) <= _MAX_ID or not thread_id.isprintable():
        raise ThreadError(
            thread_id,
            f"a thread id is 1 to {_MAX_ID} printable characters, not {len(thread_id):,} "
            f"characters{'' if thread_id.isprintable() else ' holding unprintable ones'}",
        )
    return thread_id


async def hold_thread(store: CheckpointStore, thread_id: str, ctx: AgentContext[Any]) -> Lease:
    """Take the thread's lease, or raise `ThreadBusy` (carrying `ctx`) naming who has it."""
    try:
        return await store.acquire(f"thread:{thread_id}", owner=new_owner())
    except ThreadBusy:
        raise
    except RunBusy as busy:
        raise ThreadBusy(thread_id, busy.owner, busy.expires, context=ctx) from None


async def _leases(
    store: CheckpointStore, thread_id: str, run_id: str, ctx: AgentContext[Any]
) -> tuple[Lease, Lease]:
    """The thread's lease and the run's, asked for at once, so a store that commits
    its writes in batches takes both in one: `ThreadBusy` (or `RunBusy`) as if taken
    in turn, a lease taken given back when the other was refused."""
    taken: list[Lease | Exception | None] = [None, None]

    async def take(index: int, asked: Awaitable[Lease]) -> None:
        try:
            taken[index] = await asked
        except Exception as exc:
            taken[index] = exc

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(take, 0, hold_thread(store, thread_id, ctx))
        tasks.start_soon(take, 1, store.acquire(run_id, owner=new_owner()))
    thread, run = taken
    for refused in (thread, run):
        if isinstance(refused, Exception):
            for held in (thread, run):
                if isinstance(held, Lease):
                    store.release(held)
            raise refused
    assert isinstance(thread, Lease) and isinstance(run, Lease)
    return thread, run


def _check_head(thread_id: str, head: str | None, expected: Head, ctx: AgentContext[Any]) -> None:
    """Refuse to go on from `head` when the caller read the thread at another one."""
    if expected is not ANY_HEAD and head != expected:
        raise ThreadMoved(thread_id, head, expected, context=ctx)


async def _context_of(
    store: CheckpointStore,
    thread_id: str,
    run_id: str,
    types: Types,
    given: AgentContext[Any] | None = None,
) -> tuple[AgentContext[Any], int]:
    """The last committed context of the thread's run `run_id` and its number of step
    records (see `final_context`); `ThreadDamaged` if unreadable."""
    try:
        return await final_context(store, run_id, types)
    except (CheckpointError, ContextDecodingError) as exc:
        raise ThreadDamaged(thread_id, str(exc), context=given) from exc


def continued(last: AgentContext[Any], given: AgentContext[Any]) -> AgentContext[Any]:
    """The first context of a turn: the thread's `last` context plus what `given` brings.

    The history is the thread's followed by `given`'s messages; the input and
    usage are `given`'s; the state is the thread's updated with `given`'s; the
    system prompt, settings and tools are `given`'s where it sets them, else
    the thread's.
    """
    return last.append(*given.history).evolve(
        input=given.input,
        system_prompt=given.system_prompt if given.system_prompt else last.system_prompt,
        settings=given.settings if given.settings != Settings() else last.settings,
        tools=given.tools or last.tools,
        state={**last.state, **given.state},
        usage=given.usage,
    )


async def open_thread(
    graph: Graph[Any, Any],
    ctx: AgentContext[Any],
    store: CheckpointStore,
    run_id: str,
    thread_id: str,
    *,
    compaction: Compaction | None = None,
    types: Types = NO_TYPES,
    expect_head: Head = ANY_HEAD,
) -> StoreJournal:
    """Start a turn of `thread_id` (a new thread when there is none) as run `run_id`.

    With `expect_head` (a run id, or None for a thread with no head yet), the
    turn is refused with `ThreadMoved` (a `ThreadBusy`) when the head is
    another run by the time the turn holds the thread.
    """
    threads = _threads(store)
    _check_id(thread_id)
    lease, run_lease = await _leases(store, thread_id, run_id, ctx)
    handed = False  # open_run gives the run's lease back itself when it fails
    try:
        found = await threads.load_thread(thread_id)
        head = None if found is None else found.head
        _check_head(thread_id, head, expect_head, ctx)
        start, last = ctx, None
        if head is not None:
            last = await _context_of(store, thread_id, head, types, ctx)
            start = continued(last[0], ctx)
        # Planned now, so a budget that cannot be met is refused before the run exists;
        # the summary is the run's first step.
        planned = None if compaction is None else plan(start, compaction, thread_id)
        handed = True
        journal = await open_run(
            graph, start, store, run_id, thread=thread_id, base=head, start=last, types=types,
            lease=run_lease,
        )  # fmt: skip
        journal.join_thread(thread_id, lease, head)
    except BaseException:
        store.release(lease)
        if not handed:
            store.release(run_lease)
        raise
    if compaction is not None:
        start_with(journal, thread_id, planned, compaction)
    return journal


async def list_threads(store: Any) -> tuple[ThreadLog, ...]:
    """Every thread in `store`, oldest first: its head, times and turns (nothing decoded)."""
    threads = _threads(store)
    found = [await threads.load_thread(tid) for tid in await threads.thread_ids()]
    return tuple(t for t in found if t is not None)


async def _log(store: Any, thread_id: str) -> ThreadLog:
    found = await _threads(store).load_thread(_check_id(thread_id))
    if found is None:
        raise ThreadNotFound(thread_id)
    return found


async def read_thread(
    store: Any, thread_id: str, *, run_id: str | None = None, types: Types = NO_TYPES
) -> Thread:
    """The thread with its head's final context (or, with `run_id`, that turn's last one).

    Raises:
        ThreadNotFound: no such thread, or `run_id` is not one of its turns.
        ThreadDamaged: the context cannot be read back.
    """
    found = await _log(store, thread_id)
    which = found.head if run_id is None else run_id
    if run_id is not None and all(run != run_id for run, _ in found.runs):
        raise ThreadNotFound(thread_id, run_id=run_id)
    context = None if which is None else (await _context_of(store, thread_id, which, types))[0]
    return Thread(thread_id, found.head, context, found.runs, found.created, found.updated)


async def _seed(
    store: CheckpointStore, thread_id: str, ctx: AgentContext[Any], base: str | None
) -> str:
    """A run of no steps holding `ctx`, made the head of `thread_id` (in place of `base`)."""
    seed = new_run_id()
    now = time.time()
    data = full_context(ctx, store.put_blob)
    record = RunRecord(seed, "thread", _SEED, data, now, thread=thread_id, base=base)
    store.write((record, ThreadHead(seed, thread_id, base, now)))
    await store.flush(run_id=seed)
    return seed


def _cut(ctx: AgentContext[Any], at_message: int | None, thread_id: str) -> AgentContext[Any]:
    if at_message is None:
        return ctx
    size = len(ctx.history)
    if not 0 <= at_message <= size:
        raise ThreadError(thread_id, f"at_message is 0 to {size} (its messages), not {at_message}")
    return ctx.evolve(history=History(tuple(ctx.history)[:at_message]))


async def fork_thread(
    store: Any,
    thread_id: str,
    *,
    new_thread_id: str | None = None,
    run_id: str | None = None,
    at_message: int | None = None,
    types: Types = NO_TYPES,
) -> str:
    """Start a new thread from this one's conversation and return its id.

    The new thread starts from the head's final context (or that of turn
    `run_id`), keeping its first `at_message` messages when given. The
    thread forked from is left as it was.
    """
    new = _check_id(new_run_id() if new_thread_id is None else new_thread_id)
    if await _threads(store).load_thread(new) is not None:
        raise ThreadError(new, "is already in the store: fork to a new thread id")
    read = await read_thread(store, thread_id, run_id=run_id, types=types)
    if read.context is None:
        raise ThreadError(thread_id, "no turn has finished yet: there is nothing to fork")
    await _seed(store, new, _cut(read.context, at_message, thread_id), None)
    return new


async def rewind_thread(
    store: Any,
    thread_id: str,
    at_message: int,
    *,
    types: Types = NO_TYPES,
    expect_head: Head = ANY_HEAD,
) -> str:
    """Make the thread go on from its first `at_message` messages; return the new head.

    The turns after that point stay in the thread (read them with
    `read_thread(..., run_id=...)`, fork them into threads of their own);
    the next turn continues from the shortened conversation.

    Raises:
        ThreadBusy: a run on the thread is going on; `ThreadMoved` (with
            `expect_head`) when the head is no longer the run the caller read.
    """
    found = await _log(store, thread_id)
    if found.head is None:
        raise ThreadError(thread_id, "no turn has finished yet: there is nothing to rewind")
    lease = await hold_thread(store, thread_id, AgentContext(None))
    try:
        found = await _log(store, thread_id)  # the head as it is now that the thread is ours
        _check_head(thread_id, found.head, expect_head, AgentContext(None))
        assert found.head is not None
        last, _ = await _context_of(store, thread_id, found.head, types)
        return await _seed(store, thread_id, _cut(last, at_message, thread_id), found.head)
    finally:
        store.release(lease)


async def reset_thread(
    store: Any, thread_id: str, ctx: AgentContext[Any], *, expect_head: Head = ANY_HEAD
) -> str:
    """Make the thread go on from `ctx`, held by a new head run of no steps; return its id.

    For a server whose own record of a thread (its checkpoints) says where the
    next turn starts: an earlier turn's context, or values a client set.

    Raises:
        ThreadBusy: a run on the thread is going on; `ThreadMoved` (with
            `expect_head`) when the head is no longer the run the caller read.
    """
    threads = _threads(store)
    lease = await hold_thread(store, _check_id(thread_id), ctx)
    try:
        found = await threads.load_thread(thread_id)
        head = None if found is None else found.head
        _check_head(thread_id, head, expect_head, ctx)
        return await _seed(store, thread_id, ctx, head)
    finally:
        store.release(lease)


async def delete_thread(store: Any, thread_id: str) -> None:
    """Delete the thread and every run of it.

    Raises:
        ThreadNotFound: no such thread.
        ThreadBusy: a run on the thread is going on.
    """
    threads = _threads(store)
    await _log(store, thread_id)
    lease = await hold_thread(store, thread_id, AgentContext(None))
    try:
        if not await threads.delete_thread(thread_id):
            raise ThreadNotFound(thread_id)
    finally:
        store.release(lease)
