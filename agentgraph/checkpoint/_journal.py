"""`StoreJournal`: the durability protocol (`agentgraph._core._journal.Journal`) over a store.

The graph loop calls `enter` for every step, `reenter` for every graph and
`commit` after every step a graph completed and routed. The runtime's effect
methods record what a step did outside its context (model calls, embeddings,
tool results, answers, `once` values) under keys that name the step, its
attempt and the effect's position in it; a resumed step runs again under the
same step index, so it finds its effects.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import orjson

from .._core._context import AgentContext
from .._core._effect_kinds import MemoryEffect
from .._core._errors import CheckpointError, ContextEncodingError, NodeFailed, ReplayDiverged
from .._core._journal import ToolAnswer, ToolRunner
from .._core._json import NO_TYPES, Types, from_data, to_data
from .._core._runtime import Interrupt, Runtime
from .._util._redact import masked
from ..llm._messages import ToolCall
from ..llm._model import ChatRequest, ChatResponse
from ._bases import remember
from ._codec import ContextEncoder, diff_data
from ._effects import record_model, recorded_model, run_tools
from ._frames import Frame, StepState, state_of, take
from ._lease import Lease, LeaseLost
from ._records import Effect, Record, StepRecord, ThreadHead

if TYPE_CHECKING:
    from .._core._graph import Graph
    from .._core._node import Node
    from ._store import CheckpointStore

__all__ = ("Asked", "StoreJournal", "decode_value", "diff_data", "encode_value")

T = TypeVar("T")

_log = logging.getLogger("agentgraph")


def encode_value(value: Any, where: str) -> bytes:
    return orjson.dumps({"v": to_data(value, tagged=True, where=where)})


def decode_value(data: bytes, types: Types = NO_TYPES) -> Any:
    return from_data(orjson.loads(data)["v"], types)


_LOOK = 0.5
"""Seconds between looks at the run's lease while steps commit (a look costs no I/O)."""
_MARGIN = 0.1
"""Share of a lease's term left at which a runner whose renewals stopped gives up the run."""


def _fields(ctx: AgentContext[Any]) -> tuple[Any, ...]:
    """Every field of `ctx` but its history."""
    return (ctx.input, ctx.system_prompt, ctx.settings, ctx.tools, ctx.state, ctx.usage)


class Asked(Interrupt):
    """An `Interrupt` that knows the effect key its question is recorded under."""

    def __init__(
        self,
        key: str,
        question: Any,
        context: AgentContext[Any],
        step: int,
        path: tuple[str, ...],
    ) -> None:
        self.key = key
        super().__init__(question, context, step, path)


MEMORY = "memory"
"""The kind memory calls (`MemoryEffect`) are recorded under."""


class StoreJournal:
    """One run's link to its checkpoint store: commits, effects, interrupts and replay checks.

    Node authors reach it through the runtime (`rt.call_model`, `rt.call_tools`,
    `rt.once`, `rt.interrupt`, ...), never directly.

    Attributes:
        run_id: the run's id in the store.
        replaying: True in `GraphRunner.replay`: nothing is written, and every
            effect must come from the record.
    """

    def __init__(
        self,
        store: CheckpointStore,
        run_id: str,
        *,
        initial: AgentContext[Any],
        base: AgentContext[Any],
        seq: int = 0,
        effects: Iterable[Effect] = (),
        frames: Sequence[Frame] = (),
        resumed_at: tuple[AgentContext[Any], int] | None = None,
        expected: Sequence[tuple[StepRecord, AgentContext[Any]]] | None = None,
        attempts: Mapping[str, int] | None = None,
        lease: Lease | None = None,
        types: Types = NO_TYPES,
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        self.types = types
        self.blobs: Mapping[str, bytes] = blobs or {}
        self.store = store
        self.run_id = run_id
        self.initial = initial
        self.resumed_at = resumed_at
        self.frames = list(frames)
        self.replaying = expected is not None
        self._expected = expected or ()
        # The last recorded and replayed contexts found equal: the next pair is compared
        # by what each adds to them. Both start from the context the replay starts at.
        self._checked: tuple[AgentContext[Any], AgentContext[Any]] | None = (base, base)
        self._encoder = ContextEncoder(base, store.put_blob)
        self._seq = seq
        self._effects = {(e.key, e.kind): e.value for e in effects}
        # The attempt each step with a pending question resumes at, by anchor.
        self._attempts = dict(attempts or {})
        self._lease = lease
        # When to look at the lease again: the store renews it in the background,
        # and the run stops itself if a renewal did not come through in time.
        self._look_at = 0.0
        self._term = 0.0 if lease is None else lease.expires - time.time()
        self.thread_id: str | None = None
        self.prelude: Node[Any, Any] | None = None  # a thread turn's compaction step
        self.entry = initial  # the context the graph started from (after that step)
        # A turn of a thread: the thread's lease, and the head the turn started from.
        self._thread: tuple[Lease, str | None] | None = None
        # The patches of the graph the run started on, from its record (None: this graph's).
        self.started_patches: frozenset[str] | None = None
        self.graph: Any = None  # the graph version a resume chose (see `GraphVersions`)

    def patched(self, name: str) -> bool:
        """True when the run started on a graph declaring the patch `name` (`rt.patched`)."""
        return self.started_patches is None or name in self.started_patches

    def join_thread(self, thread_id: str, lease: Lease, base: str | None) -> None:
        """This run is a turn of `thread_id`, held by `lease`, continuing from run `base`."""
        self.thread_id = thread_id
        self._thread = (lease, base)

    # -- the runner's hooks -------------------------------------------------------------
    def enter(
        self, parent: Runtime, rt: Runtime, index: int, local: int, given: AgentContext[Any]
    ) -> None:
        """Give a starting step its state; `parent` is the runtime that executes it."""
        above = state_of(parent, self.initial)
        atomic = above.atomic or not above.routing
        # A branch's keys name the fan-out's attempt: a retried fan-out must not
        # be served the results of the attempt that failed.
        anchor = f"{above.anchor}.{above.attempt}/{local}" if atomic else str(index)
        state = rt.journal_state = above.child = StepState(anchor, atomic, index, given)
        if self._attempts:
            state.attempt = self._attempts.pop(anchor, 1)

    def new_attempt(self, rt: Runtime) -> None:
        """A retry starts: its effects get keys of their own."""
        state = state_of(rt, self.initial)
        state.attempt += 1
        state.ordinal = 0

    def reenter(
        self, rt: Runtime, graph: Graph[Any, Any]
    ) -> tuple[Node[Any, Any], AgentContext[Any], int, int] | None:
        """A graph starts in `rt`: where the record says it goes on, if it is resumed."""
        state = state_of(rt, self.initial)
        state.routing = True
        if state.atomic or not self.frames:
            return None
        return take(self.frames, self.run_id, rt, graph)

    def close(self) -> None:
        """Let another runner take the run (see `GraphRunner.resume`); idempotent."""
        lease, self._lease = self._lease, None
        if lease is not None:
            self.store.release(lease)
        thread, self._thread = self._thread, None
        if thread is not None:
            self.store.release(thread[0])

    def _still_ours(self) -> None:
        """Stop the run when its lease passed to another runner, or was not renewed in time."""
        now = time.time()
        if self._lease is None or now < self._look_at:
            return
        lease = self.store.held(self.run_id)
        if lease is None or lease.fence != self._lease.fence:
            raise LeaseLost(self.run_id, "its lease was taken over, or could not be renewed")
        left = lease.expires - now
        if left < self._term * _MARGIN:
            raise LeaseLost(self.run_id, f"its lease was not renewed; {max(left, 0):.1f} s left")
        self._look_at = now + min(_LOOK, left / 4)

    def commit(
        self,
        rt: Runtime,
        source: Node[Any, Any],
        target: Node[Any, Any],
        out: AgentContext[Any],
        local: int,
    ) -> None:
        """Record that `source` turned its input into `out` and its graph chose `target`."""
        state = state_of(rt, self.initial)
        if state.atomic:
            return  # inside a fan-out: the fan-out commits as one step
        self._still_ours()
        step = state.child
        assert step is not None, "a step is committed after it was entered"
        index = step.index
        if self.replaying:
            self._check(rt, source, target, out, index)
            return
        try:
            data = self._encoder.delta(out)
        except ContextEncodingError as error:
            path = (*rt.path, source.name)
            raise NodeFailed(
                context=step.input, step=index, path=path, attempts=1, error=error
            ) from error
        self._seq += 1
        record = StepRecord(
            self.run_id,
            self._seq,
            index,
            rt.path,
            source.name,
            target.name,
            local,
            rt.steps,
            data,
            time.time(),
            perf_counter() - step.started,
        )
        self._write((record,))

    def _write(self, records: Sequence[Record]) -> None:
        try:
            self.store.write(records)
        except CheckpointError:
            raise
        except Exception as exc:  # a store of one's own that raised its database's error
            raise self._failed("write", exc) from exc

    async def _flush(self) -> None:
        try:
            await self.store.flush(run_id=self.run_id)
        except CheckpointError:
            raise
        except Exception as exc:
            raise self._failed("store", exc) from exc

    def _failed(self, what: str, exc: Exception) -> CheckpointError:
        return CheckpointError(
            f"{type(self.store).__name__} could not {what} records of run {self.run_id!r}: "
            f"{type(exc).__name__}: {exc}"
        )

    def _check(
        self,
        rt: Runtime,
        source: Node[Any, Any],
        target: Node[Any, Any],
        out: AgentContext[Any],
        index: int,
    ) -> None:
        path = (*rt.path, source.name)
        if self._seq >= len(self._expected):
            raise ReplayDiverged(
                f"the record ends after {len(self._expected)} steps; the replay went on",
                context=out,
                step=index,
                path=path,
            )
        record, recorded = self._expected[self._seq]
        ran = (record.step, record.path, record.node, record.next)
        if ran != (index, rt.path, source.name, target.name):
            raise ReplayDiverged(
                f"step {record.step} ran {'/'.join(record.path)}/{record.node} and went to "
                f"{record.next!r}; the replay ran step {index} "
                f"{'/'.join(rt.path)}/{source.name} and went to {target.name!r}",
                context=out,
                step=index,
                path=path,
            )
        if not self._same(recorded, out):
            diff = diff_data(recorded, out, labels=("recorded", "replayed"))
            raise ReplayDiverged(
                "the context differs from the recorded one",
                diff=diff,
                context=out,
                step=index,
                path=path,
            )
        self._seq += 1
        self._checked = (recorded, out)

    def _same(self, recorded: AgentContext[Any], out: AgentContext[Any]) -> bool:
        """Whether the replayed context is the recorded one.

        When both extend the pair checked last (equal by then), only the messages
        each added are compared, so a replay compares each message once, not each
        step's whole history.
        """
        before = self._checked
        if before is not None:
            added = recorded.history._added_after(before[0].history)
            mine = None if added is None else out.history._added_after(before[1].history)
            if added is not None and mine is not None:
                return added == mine and _fields(recorded) == _fields(out)
        return recorded == out

    async def finish(self) -> None:
        """The run reached finish: make it durable (or, replaying, check nothing is missing)."""
        if self.replaying and self._seq < len(self._expected):
            record = self._expected[self._seq][0]
            raise ReplayDiverged(
                f"the replay finished, but the record goes on with step {record.step} "
                f"({'/'.join(record.path)}/{record.node})",
                context=self._expected[self._seq - 1][1] if self._seq else self.initial,
                step=record.step,
                path=(*record.path, record.node),
            )
        if self._thread is not None and not self.replaying:
            # The thread moves on once the run's last records are stored.
            assert self.thread_id is not None
            self._write((ThreadHead(self.run_id, self.thread_id, self._thread[1], time.time()),))
        # The release goes in with the last records, so the run is free once they are.
        thread = self._thread
        self.close()
        await self._flush()
        if thread is not None and not self.replaying:
            # The next turn goes on from this context as it is, decoding nothing.
            remember(self.store, self.run_id, self._encoder.base, self._seq, self.types)

    async def settle(self, stopped: Interrupt | None = None) -> None:
        """The run stopped early: make what it committed durable; a store error is logged."""
        if isinstance(stopped, Asked):
            # Of several questions asked at once (fan-out branches), this one reaches
            # the caller: rewriting it makes it the last one recorded, the one an
            # answer goes to.
            question = self._effects.get((stopped.key, "interrupt"))
            if question is not None:
                self.record(stopped.key, "interrupt", question)
        self.close()
        try:
            await self.store.flush(run_id=self.run_id)
        except Exception as exc:
            _log.error(
                "checkpoint store failed while run %r was stopping: %s",
                self.run_id,
                masked(f"{type(exc).__name__}: {exc}"),
            )

    # -- effects ------------------------------------------------------------------------
    def key(self, rt: Runtime, name: str) -> str:
        """The key of the step's next effect (see `Runtime.once`)."""
        state = state_of(rt, self.initial)
        state.ordinal += 1
        return f"{state.anchor}.{state.attempt}.{state.ordinal}:{name}"

    def lookup(self, key: str, kind: str) -> bytes | None:
        """The recorded effect of `kind` under `key`, or None."""
        return self._effects.get((key, kind))

    def record(self, key: str, kind: str, value: bytes) -> None:
        """Record an effect (write-behind: `await flush()` before relying on it)."""
        if self.replaying:
            return
        self._effects[(key, kind)] = value
        self._write((Effect(self.run_id, key, kind, value),))

    async def flush(self) -> None:
        """Wait until every record so far is durable."""
        if not self.replaying:
            await self._flush()

    def diverged(self, rt: Runtime, what: str, diff: str = "") -> ReplayDiverged:
        """The error for a replayed step that asked for something the record lacks."""
        state = state_of(rt, self.initial)
        return ReplayDiverged(what, diff=diff, context=state.input, step=state.index, path=rt.path)

    async def model(
        self, rt: Runtime, request: ChatRequest, call: Callable[[], Awaitable[ChatResponse]]
    ) -> ChatResponse:
        key, found = self.recorded_model(rt, request)
        if found is not None:
            return found
        response = await call()
        self.record_model(rt, key, request, response)
        return response

    def recorded_model(self, rt: Runtime, request: ChatRequest) -> tuple[str, ChatResponse | None]:
        return recorded_model(self, rt, request)

    def record_model(
        self, rt: Runtime, key: str, request: ChatRequest, response: ChatResponse
    ) -> None:
        record_model(self, rt, key, request, response)

    async def value(self, rt: Runtime, name: str, call: Callable[[], Awaitable[T]]) -> T:
        key = self.key(rt, name)
        found = self.lookup(key, "value")
        if found is not None:
            value: T = decode_value(found, self.types)
            return value
        if self.replaying:
            raise self.diverged(rt, f"no value was recorded for {name!r} ({key})")
        value = await call()
        self.record(key, "value", encode_value(value, name))
        return value

    async def memory(
        self, rt: Runtime, effect: MemoryEffect, call: Callable[[MemoryEffect], Awaitable[Any]]
    ) -> Any:
        key = self.key(rt, f"memory {effect.name}")
        found = self.lookup(key, MEMORY)
        if found is not None:
            return effect.decode(found, key)
        if self.replaying:
            raise self.diverged(rt, f"the replay called memory ({effect.name}); the record did not")
        if effect.write:
            # The step's reads before this write are served on a resume only if recorded:
            # the store may commit the write and the process die before they are.
            await self.flush()
        result = await call(attrs.evolve(effect, effect_id=f"{self.run_id}/{key}"))
        self.record(key, MEMORY, effect.encode(result))
        return result

    async def tools(
        self, rt: Runtime, calls: Sequence[ToolCall], unsafe: frozenset[str], run: ToolRunner
    ) -> list[ToolAnswer]:
        return await run_tools(self, rt, calls, unsafe, run)

    async def interrupt(self, rt: Runtime, question: Any) -> Any:
        key = self.key(rt, "interrupt")
        answer = self.lookup(key, "answer")
        if answer is not None:
            return decode_value(answer, self.types)
        if self.replaying and self.lookup(key, "interrupt") is None:
            raise self.diverged(rt, f"the replay asked {question!r}, which the record never asked")
        self.record(key, "interrupt", encode_value(question, "question"))
        await self.flush()
        state = state_of(rt, self.initial)
        raise Asked(key, question, state.input, state.index, rt.path)
