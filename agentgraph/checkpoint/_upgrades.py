"""Before and after a deploy: the stored runs a graph can resume, and migrating them at once."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import attrs

from .._core._errors import CheckpointError, ResumeError
from .._core._json import NO_TYPES, Types
from ._records import checked
from ._resume import decode_contexts, fit_run, log_blobs, open_resume, start_of
from ._versions import started

if TYPE_CHECKING:
    from .._core._graph import Graph
    from .._core._versions import GraphVersions
    from ._records import RunLog
    from ._store import CheckpointStore

__all__ = ("Stranded", "check_runs", "migrate_runs", "resume_problem", "unfinished")


@attrs.frozen
class Stranded:
    """A waiting or running run that a graph could not resume, and why."""

    run_id: str
    version: int | None
    """The graph version the run is on (None: a graph without a version)."""
    reason: str


def _finished(log: RunLog) -> bool:
    return bool(log.steps) and log.steps[-1].next == "finish" and len(log.steps[-1].path) == 1


async def unfinished(store: CheckpointStore, graph: str) -> AsyncIterator[RunLog]:
    """The store's runs of the graph called `graph` that have not reached finish (waiting
    or stopped midway, a thread's turns included), one loaded at a time."""
    ids = getattr(store, "run_ids", None)
    if ids is None:
        raise CheckpointError(f"{type(store).__name__} cannot list its runs (it has no run_ids)")
    found = ids() if callable(ids) else ids
    if inspect.isawaitable(found):
        found = await found
    for run_id in found:
        log = await store.load(run_id)
        if log is not None and log.run.graph == graph and not _finished(log):
            yield log


async def _problem(
    graph: Graph[Any, Any],
    log: RunLog,
    store: CheckpointStore,
    versions: GraphVersions | None,
    types: Types,
) -> str | None:
    full = types.with_types(*graph.data_types())
    try:
        log = checked(log)
        blobs = await log_blobs(store, log)
        start = await start_of(store, log, full)  # a thread's turn continues its last run
        contexts = decode_contexts(log, types=full, blobs=blobs, start=start)
        fit_run(graph, versions, log, contexts, full, blobs, run=False)
    except ResumeError as error:
        return error.reason
    except CheckpointError as error:
        return str(error)
    return None


async def resume_problem(
    graph: Graph[Any, Any],
    run_id: str,
    store: CheckpointStore,
    *,
    versions: GraphVersions | None = None,
    types: Types = NO_TYPES,
) -> str | None:
    """Why `GraphRunner(versions=versions).resume(graph, run_id, store)` would be refused,
    or None when it would go ahead. Nothing runs and nothing is written; migrations
    are checked to exist, not run.

    A worker that holds only some versions of a graph asks this before it
    claims a run, and leaves the run to a worker that has its version.
    """
    log = await store.load(run_id)
    if log is None:
        return f"no run {run_id!r} in the store"
    return await _problem(graph, log, store, versions, types)


async def check_runs(
    graph: Graph[Any, Any],
    store: CheckpointStore,
    *,
    versions: GraphVersions | None = None,
    types: Types = NO_TYPES,
) -> list[Stranded]:
    """Every unfinished run of `graph`'s name in `store` (a thread's waiting turns
    included) that it could not resume, with why. Runs are read one at a time."""
    out = []
    async for log in unfinished(store, graph.name):
        reason = await _problem(graph, log, store, versions, types)
        if reason is not None:
            out.append(Stranded(log.run.run_id, started(log.run, log.effects).version, reason))
    return out


def _moves(version: int | None, graph: Graph[Any, Any], versions: GraphVersions | None) -> bool:
    """Whether a run on `version` goes on to `graph`'s version under `versions`' policy."""
    if version is None or graph.version is None or version >= graph.version:
        return False
    if versions is None or versions.policy == "latest":
        return True
    # Pinned: only a run whose version the registry no longer keeps would be stranded.
    return versions.policy == "pinned" and versions.get(graph.name, version) is None


async def migrate_runs(
    graph: Graph[Any, Any],
    store: CheckpointStore,
    *,
    versions: GraphVersions | None = None,
    types: Types = NO_TYPES,
) -> list[str]:
    """Migrate every unfinished run of `graph` on an older version to `graph`'s version
    (a thread's waiting turns included; runs are read one at a time).

    Under `versions`, only the runs its policy moves to `graph`'s version:
    `"latest"` every older one, `"pinned"` those whose version the registry
    no longer keeps (the others resume on their own version), `"refuse"` none.
    Each run is leased while it is migrated and its migrated context is
    recorded, so its next resume continues from it without migrating again.
    Returns the ids of the runs migrated.

    Raises:
        MigrationFailed: a migration failed; that run is unchanged, and the runs
            migrated before it stay migrated.
    """
    done = []
    full = types.with_types(*graph.data_types())
    async for log in unfinished(store, graph.name):
        if not _moves(started(log.run, log.effects).version, graph, versions):
            continue
        run_id = log.run.run_id
        journal = await open_resume(graph, run_id, store, types=full)
        try:
            await journal.flush()
        finally:
            journal.close()
        done.append(run_id)
    return done
