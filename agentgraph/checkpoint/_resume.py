"""Opening a run's journal: a new run, a resumed one, or a replay of a recorded one."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from .._core._context import AgentContext
from .._core._errors import CheckpointError, ContextDecodingError, ResumeError
from .._core._graph import Graph
from .._core._json import NO_TYPES, Types
from .._core._runner import NO_ANSWER
from .._core._versions import GraphVersions, edges_of
from ._bases import based_context, final_context, relative
from ._codec import decode_context, full_context, load_blobs
from ._compact_step import entry_of, recorded_step
from ._frames import Continue, Enter, Frame, node_named
from ._journal import StoreJournal, encode_value
from ._lease import Lease, new_owner
from ._records import Effect, RunLog, RunRecord, StepRecord, checked
from ._versions import (
    MIGRATED,
    input_effect,
    migrate,
    migrated_inputs,
    migration_effect,
    renamed,
    stamp,
    started,
    upgrade,
    with_context,
)

if TYPE_CHECKING:
    from ._store import CheckpointStore

__all__ = (
    "attempts",
    "changed",
    "decode_contexts",
    "fit_run",
    "log_blobs",
    "open_replay",
    "open_resume",
    "open_run",
    "plan",
    "start_of",
    "structure",
)


def structure(graph: Graph[Any, Any]) -> dict[str, Any]:
    """The shape of `graph` as data: node names and edges per level, subgraphs nested."""
    return {
        "graph": graph.name,
        "nodes": [n.name for n in graph.nodes],
        "edges": edges_of(graph),
        "subgraphs": {n.name: structure(n) for n in graph.nodes if isinstance(n, Graph)},
    }


async def open_run(
    graph: Graph[Any, Any],
    ctx: AgentContext[Any],
    store: CheckpointStore,
    run_id: str,
    *,
    thread: str | None = None,
    base: str | None = None,
    start: tuple[AgentContext[Any], int] | None = None,
    types: Types = NO_TYPES,
    lease: Lease | None = None,
) -> StoreJournal:
    """Start recording a new run: its run record holds the initial context and the graph's shape.

    A thread's turn gives `start`, the last context of its `base` run and that
    run's number of step records: the initial context is stored as a change to
    it (see `_bases`). The store refuses a run id it already holds when it
    stores the run record, so two runs started with one id at once cannot both go ahead.
    `lease` is the run's, when the caller took it already.
    """
    rid = run_id
    if lease is None:
        lease = await store.acquire(rid, owner=new_owner())
    try:
        shape = orjson.dumps({**structure(graph), **stamp(graph)})
        try:
            if base is not None and start is not None:
                initial = based_context(ctx, start[0], base, start[1], store.put_blob)
            else:
                initial = full_context(ctx, store.put_blob)
            started = RunRecord(
                rid, graph.name, shape, initial, time.time(), thread=thread, base=base
            )
            store.write((started,))
            # Once a step has run, the run can be resumed: its start must be on disk.
            await store.flush(run_id=rid)
        except CheckpointError as error:
            if "already in the store" not in str(error):
                raise
            raise CheckpointError(
                f"run {run_id!r} is already in the store: resume it, or start with a new run_id"
            ) from error
    except BaseException:
        store.release(lease)
        raise
    return StoreJournal(store, rid, initial=ctx, base=ctx, lease=lease, types=types)


def decode_contexts(
    log: RunLog,
    *,
    types: Types = NO_TYPES,
    blobs: Mapping[str, bytes] | None = None,
    start: AgentContext[Any] | None = None,
) -> list[AgentContext[Any]]:
    """The initial context, then the context of every step record, in commit order.

    Only agentgraph's own types and those in `types` are constructed. `blobs`
    holds the bytes of the images and documents the messages name (see
    `log_blobs`). A thread's turn stores its initial context as a change to
    the last context of the run it continued: `start` is that context (a
    store's own loads give it; a log read without them stands alone).

    Raises:
        CheckpointError: a record is damaged, or the log is a turn's and `start`
            is missing or is not the context the turn continued.
    """
    files = blobs or {}
    contexts: list[AgentContext[Any]] = []
    rid = log.run.run_id
    base = relative(log.run.context)
    if base is None:
        start = None
    elif start is None:
        raise CheckpointError(
            f"run {rid!r} continues run {base.run_id!r}: its first context is a change to "
            "that run's last one, so it is decoded from its store"
        )
    elif len(start.history) != base.messages:
        raise CheckpointError(
            f"run {rid!r} continues a context of {base.messages} messages, "
            f"not one of {len(start.history)}"
        )
    moved = _migrations(log)
    try:
        contexts.append(decode_context(log.run.context, start, types, files))
        for n, record in enumerate(log.steps):
            # A record after a migration is a change to the migrated context.
            found = moved.get(n)
            before = contexts[-1] if found is None else decode_context(found, None, types, files)
            contexts.append(decode_context(record.context, before, types, files))
    except ContextDecodingError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        what = f"step record {len(contexts)}" if contexts else "the run record's initial context"
        raise CheckpointError(
            f"run {log.run.run_id!r}: {what} cannot be decoded: {type(exc).__name__}: {exc}"
        ) from exc
    except CheckpointError as exc:  # a blob a message names
        if str(exc).startswith(f"run {log.run.run_id!r}:"):
            raise
        raise CheckpointError(f"run {log.run.run_id!r}: {exc}") from exc
    return contexts


def _migrations(log: RunLog) -> dict[int, bytes]:
    """The migrated contexts of `log`, by the number of step records before each."""
    at: dict[str, int] = {}
    for n, record in enumerate(log.steps, 1):
        at[str(record.step)] = n
    moved: dict[int, bytes] = {}
    for effect in log.effects:
        if effect.kind == MIGRATED:
            step = effect.key.split(".", 1)[0]
            moved[at.get(step, 0)] = effect.value
    return moved


def plan(steps: Sequence[StepRecord], contexts: Sequence[AgentContext[Any]]) -> list[Frame]:
    """The frames that continue a run after `steps[-1]` (`contexts[i + 1]` is step i's output)."""
    if not steps:
        return []
    last = len(steps) - 1
    final = steps[last]
    frames: list[Frame] = []
    outer_input, outer_step = contexts[0], 0
    for depth in range(1, len(final.path)):
        level = final.path[:depth]
        before = _last_at(steps, last, level)
        if before is None:  # the composite was the first node of its level
            frame = Enter(level, final.path[depth], outer_input, outer_step + 1, 1)
        else:
            record = steps[before]
            if record.next != final.path[depth]:
                raise CheckpointError(
                    f"run {final.run_id!r}: step record {record.seq} goes to {record.next!r}, "
                    f"but the records after it run inside {final.path[depth]!r}"
                )
            frame = Enter(
                level, final.path[depth], contexts[before + 1], record.steps + 1, record.local + 1
            )
        frames.append(frame)
        outer_input, outer_step = frame.input, frame.step
    frames.append(
        Continue(
            final.path,
            final.node,
            final.next,
            contexts[last + 1],
            final.local,
            final.steps,
            final.step,
        )
    )
    return frames


def _last_at(steps: Sequence[StepRecord], last: int, level: tuple[str, ...]) -> int | None:
    """The last record at `level` before the composite now running there started."""
    depth = len(level)
    for i in range(last, -1, -1):
        path = steps[i].path
        if len(path) <= depth:
            return i if path == level else None
    return None


def _check_frames(
    graph: Graph[Any, Any], frames: Sequence[Frame], log: RunLog, last: AgentContext[Any]
) -> None:
    """Fail before anything runs when a node the frames name is gone from the graph."""
    step = log.steps[-1].step if log.steps else 0
    rid = log.run.run_id
    if graph.name != log.run.graph:
        reason = f"it was recorded with graph {log.run.graph!r}, not {graph.name!r}"
        raise ResumeError(reason, run_id=rid, context=last, step=step)
    level: Graph[Any, Any] | None = graph
    try:
        for frame in frames:
            if level is None:
                return  # a composite that is not a Graph: its names are checked when it runs
            if isinstance(frame, Enter):
                found = node_named(level, frame.node, run_id=rid, context=last, step=step)
                level = found if isinstance(found, Graph) else None
            elif frame.next != level.finish.name:
                node_named(level, frame.next, run_id=rid, context=last, step=step)
    except ResumeError as error:
        changes = changed(orjson.loads(log.run.structure), structure(graph))
        reason = f"{error.reason}. Changes since the run started: {changes}"
        raise ResumeError(reason, run_id=rid, context=last, step=step) from None


def changed(before: dict[str, Any], after: dict[str, Any], where: str = "") -> str:
    """The node names removed from and added to each graph level, as one line."""
    level = f"{where}/{after['graph']}" if where else after["graph"]
    old, new = before.get("nodes", []), after["nodes"]
    parts = []
    gone, came = [n for n in old if n not in new], [n for n in new if n not in old]
    if gone or came:
        parts.append(f"{level}: removed {gone or 'none'}, added {came or 'none'}")
    for name, sub in after["subgraphs"].items():
        if name in before.get("subgraphs", {}):
            inner = changed(before["subgraphs"][name], sub, level)
            if inner != "none":
                parts.append(inner)
    return "; ".join(parts) or "none"


def fit_run(
    graph: Graph[Any, Any],
    versions: GraphVersions | None,
    log: RunLog,
    contexts: Sequence[AgentContext[Any]],
    types: Types,
    blobs: Mapping[str, bytes],
    *,
    run: bool = True,
) -> tuple[Graph[Any, Any], list[Frame], AgentContext[Any], list[Effect]]:
    """The graph `log` continues on, its frames and context, and the migration records
    to write (with `run=False`, the migrations are not run: only the fit is checked).

    A migration upgrades the context the run continues from and the inputs of
    the subgraphs (and other composites) it is inside, so a composite that
    fails, retries or routes an error after the resume sees the new shape too.
    Nothing is written: a run that does not fit, or whose migration fails, is left as it was.
    """
    last = contexts[-1]
    step = log.steps[-1].step if log.steps else 0
    now = started(log.run, log.effects)
    if now.migrated is not None and now.migrated.key.split(".", 1)[0] == str(step):
        # Migrated by an earlier resume that stopped before its next step committed.
        last = decode_context(now.migrated.value, None, types, blobs)
    chosen = upgrade(graph, versions, log, last)
    frames = plan(log.steps, contexts)
    if chosen.graph.version != started(log.run).version:
        frames = renamed(frames, chosen.graph.renamed)
    frames = migrated_inputs(
        frames, log.effects, lambda value: decode_context(value, None, types, blobs)
    )
    migrated: list[Effect] = []
    if chosen.steps and run:
        rid, to = log.run.run_id, chosen.steps[-1]
        for depth, frame in enumerate(frames[:-1], 1):
            if isinstance(frame, Enter):
                entered = migrate(chosen, log, frame.input)
                frames[depth - 1] = attrs.evolve(frame, input=entered)
                migrated.append(input_effect(rid, step, to, depth, entered, None))
        last = migrate(chosen, log, last)
        migrated.append(migration_effect(rid, step, to, last, None))
    frames = with_context(frames, last)
    _check_frames(chosen.graph, frames, log, last)
    return chosen.graph, frames, last, migrated


async def log_blobs(store: CheckpointStore, log: RunLog) -> dict[str, bytes]:
    """The bytes of every image and document `log`'s messages name, checked against their digest.

    Raises:
        CheckpointError: a blob is missing, or its bytes no longer match its digest.
    """
    records = (log.run.context, *(r.context for r in log.steps), *(e.value for e in log.effects))
    try:
        return await load_blobs(store, records)
    except CheckpointError as exc:
        raise CheckpointError(f"run {log.run.run_id!r}: {exc}") from exc


async def _load(store: CheckpointStore, run_id: str) -> RunLog:
    log = await store.load(run_id)
    if log is None:
        raise CheckpointError(f"no run {run_id!r} in the store")
    return checked(log)


async def start_of(
    store: CheckpointStore, log: RunLog, types: Types = NO_TYPES
) -> AgentContext[Any] | None:
    """The last context of the run `log`'s turn continues, when its run record is a change
    to it (see `decode_contexts`); None for a run record that stands alone."""
    base = relative(log.run.context)
    if base is None:
        return None
    try:
        return (await final_context(store, base.run_id, types))[0]
    except CheckpointError as exc:
        raise CheckpointError(f"run {log.run.run_id!r}: {exc}") from exc


def _pending(log: RunLog) -> list[Effect]:
    """The questions without an answer, in the order they were last recorded."""
    answered = {e.key for e in log.effects if e.kind == "answer"}
    return [e for e in log.effects if e.kind == "interrupt" and e.key not in answered]


def _answer(journal: StoreJournal, log: RunLog, answer: Any, last: AgentContext[Any]) -> None:
    pending = _pending(log)
    if not pending:
        step = log.steps[-1].step if log.steps else 0
        reason = "an answer was given, but no question is waiting for one"
        raise ResumeError(reason, run_id=log.run.run_id, context=last, step=step)
    # The question `Interrupted` showed is recorded last (see `StoreJournal.settle`).
    key = pending[-1].key
    journal.record(key, "answer", encode_value(answer, "answer"))


def attempts(pending: Sequence[Effect]) -> dict[str, int]:
    """The attempt each step resumes at, by anchor, so that it finds its pending question.

    A key reads `anchor.attempt.ordinal:name`, where a branch's anchor is its
    fan-out's anchor and attempt, then its position (`3.2/1`): the fan-out
    resumes at attempt 2, the branch at the key's attempt. Of several
    questions, the newest attempt of a step wins.
    """
    found: dict[str, int] = {}

    def note(anchor: str, attempt: int) -> None:
        found[anchor] = max(attempt, found.get(anchor, 0))

    for effect in pending:
        try:
            anchor, attempt, _ = effect.key.split(":", 1)[0].rsplit(".", 2)
            parts = anchor.split("/")
            for depth, part in enumerate(parts[:-1]):
                position, above = part.rsplit(".", 1)
                note("/".join([*parts[:depth], position]), int(above))
            note(anchor, int(attempt))
        except ValueError:
            raise CheckpointError(
                f"run {effect.run_id!r}: effect key {effect.key!r} names no step and attempt"
            ) from None
    return found


async def open_resume(
    graph: Graph[Any, Any],
    run_id: str,
    store: CheckpointStore,
    *,
    answer: Any = NO_ANSWER,
    types: Types = NO_TYPES,
    versions: GraphVersions | None = None,
) -> StoreJournal:
    """A journal that continues `run_id` after its last committed step.

    The run is leased to this journal until the run stops: a second runner
    resuming it meanwhile gets `RunBusy` before anything runs. `versions`
    chooses the graph version it continues on (see `GraphVersions`); the
    journal's `graph` is the one chosen.
    """
    lease = await store.acquire(run_id, owner=new_owner())
    journal: StoreJournal | None = None
    try:
        log = await _load(store, run_id)
        blobs = await log_blobs(store, log)
        start = await start_of(store, log, types)
        contexts = decode_contexts(log, types=types, blobs=blobs, start=start)
        chosen, frames, last, migrated = fit_run(graph, versions, log, contexts, types, blobs)
        journal = StoreJournal(
            store,
            run_id,
            initial=last if not log.steps else contexts[0],  # migrated before a first step
            base=last,
            seq=len(log.steps),
            effects=log.effects,
            frames=frames,
            resumed_at=(last, log.steps[-1].step if log.steps else 0),
            attempts=attempts(_pending(log)),
            lease=lease,
            types=types,
            blobs=blobs,
        )
        if log.run.thread is not None:  # a turn of a thread: nothing else may run on it
            from ._threads import hold_thread

            held = await hold_thread(store, log.run.thread, contexts[-1])
            journal.join_thread(log.run.thread, held, log.run.base)
            if not log.steps:
                journal.prelude = recorded_step(journal, log.run.thread)
            journal.entry = entry_of(log.steps, contexts)
        journal.graph, journal.started_patches = chosen, started(log.run).patches
        for effect in migrated:  # kept before anything runs, so it never runs again
            journal.record(effect.key, effect.kind, effect.value)
        if answer is not NO_ANSWER:
            _answer(journal, log, answer, last)
    except BaseException:
        # Each lease is given back once: the journal holds the run's (and the
        # thread's, once joined) as soon as it exists.
        if journal is None:
            store.release(lease)
        else:
            journal.close()
        raise
    return journal


def _migrated_at(graph: Graph[Any, Any], log: RunLog) -> tuple[int, Effect] | None:
    """Where `log`'s latest migration happened (the number of step records before it)
    and its record, when `graph` is of the version it migrated to or later."""
    now = started(log.run, log.effects)
    if now.migrated is None or now.version is None or graph.version is None:
        return None
    if graph.version < now.version:
        return None
    at = now.migrated.key.split(".", 1)[0]
    found = next((i + 1 for i, r in enumerate(log.steps) if str(r.step) == at), 0)
    return found, now.migrated


async def open_replay(
    graph: Graph[Any, Any], run_id: str, store: CheckpointStore, *, types: Types = NO_TYPES
) -> StoreJournal:
    """A journal that replays `run_id` against its record (a fork: from where it was forked)."""
    log = await _load(store, run_id)
    blobs = await log_blobs(store, log)
    first = await start_of(store, log, types)
    contexts = decode_contexts(log, types=types, blobs=blobs, start=first)
    start = 0
    if log.run.parent_step is not None:
        start = next(i + 1 for i, r in enumerate(log.steps) if r.step == log.run.parent_step)
    frames = plan(log.steps[:start], contexts[: start + 1])
    migrated = _migrated_at(graph, log)
    if migrated is not None and migrated[0] >= start:
        # The steps before the migration ran on an older version: the replay starts
        # from the migrated context as recorded, and never runs the migration again.
        start, effect = migrated
        contexts[start] = decode_context(effect.value, None, types, blobs)
        frames = with_context(
            renamed(plan(log.steps[:start], contexts[: start + 1]), graph.renamed),
            contexts[start],
        )
        frames = migrated_inputs(
            frames, log.effects, lambda value: decode_context(value, None, types, blobs)
        )
    _check_frames(graph, frames, log, contexts[start])
    expected = list(zip(log.steps[start:], contexts[start + 1 :], strict=True))
    journal = StoreJournal(
        store,
        run_id,
        initial=contexts[0],
        base=contexts[start],
        seq=0,
        effects=log.effects,
        frames=frames,
        resumed_at=(contexts[start], log.steps[start - 1].step) if start else None,
        expected=expected,
        types=types,
        blobs=blobs,
    )
    journal.started_patches = started(log.run).patches
    journal.thread_id = log.run.thread  # a replayed turn sees its thread, as the run did
    if log.run.thread is not None and not start:
        journal.prelude = recorded_step(journal, log.run.thread)
    elif log.run.thread is not None:
        journal.entry = entry_of(log.steps, contexts)
    return journal
