"""Which graph version a stored run resumes on, and the context migrations on the way.

A run's record holds the version, fingerprint and patches of the graph it
started on (in its structure, so records written before versions existed
still load: they have none). Migrating a run records the migrated context as
an effect (kind `"migrated"`), so the migration never runs twice for a run:
a later resume reads the run's version from that effect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from .._core._context import AgentContext
from .._core._errors import CheckpointError, MigrationFailed, ResumeError, VersionMissing
from .._core._versions import GraphVersions, declared_patches, new_name
from ._codec import full_context
from ._frames import Continue, Enter, Frame
from ._records import Effect, RunLog, RunRecord

if TYPE_CHECKING:
    from .._core._graph import Graph

__all__ = (
    "MIGRATED",
    "MIGRATED_INPUT",
    "migrated_inputs",
    "onto",
    "Started",
    "Upgrade",
    "migrate",
    "stamp",
    "started",
    "upgrade",
)

MIGRATED = "migrated"
"""The effect kind of a migrated context."""

MIGRATED_INPUT = "migrated-input"
"""The effect kind of the migrated input of a subgraph (or other composite) the run was
inside when it was migrated; its key ends with the depth (`:1` the outermost)."""


def stamp(graph: Graph[Any, Any]) -> dict[str, Any]:
    """What a run record keeps of its graph's version, beside the structure."""
    return {
        "version": graph.version,
        "fingerprint": graph.fingerprint,
        "patches": sorted(declared_patches(graph)),
    }


def onto(graph: Graph[Any, Any], run: RunRecord) -> bytes:
    """The structure a fork of `run` onto `graph`'s version records.

    Raises:
        CheckpointError: `graph` is not a version of the run's graph.
    """
    from ._resume import structure  # the recorded shape lives with the rest of resuming

    if graph.name != run.graph:
        raise CheckpointError(
            f"run {run.run_id!r} runs graph {run.graph!r}; it cannot be forked onto {graph.name!r}"
        )
    was = started(run).version
    return orjson.dumps({**structure(graph), **stamp(graph), "forked_from_version": was})


@attrs.frozen
class Started:
    """The graph version a stored run is on: the one it started on, or migrated to."""

    version: int | None
    fingerprint: str | None
    patches: frozenset[str]
    migrated: Effect | None = None
    """The latest migration's record, if the run was migrated."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def started(run: RunRecord, effects: Sequence[Effect] = ()) -> Started:
    """The version `run` is on; a record of a graph without versions gives None."""
    try:
        data = orjson.loads(run.structure)
    except orjson.JSONDecodeError:
        data = {}
    data = data if isinstance(data, dict) else {}
    fingerprint = data.get("fingerprint")
    patches = data.get("patches")
    found = Started(
        _int(data.get("version")),
        fingerprint if isinstance(fingerprint, str) else None,
        frozenset(p for p in patches if isinstance(p, str))
        if isinstance(patches, list)
        else frozenset(),
    )
    for effect in effects:
        if effect.kind == MIGRATED:
            to = _int(_target(effect.key))
            if to is not None and (found.version is None or to > found.version):
                found = attrs.evolve(found, version=to, migrated=effect)
    return found


def _target(key: str) -> int | None:
    """The version a migration effect's key (`<step>.0.0:to.<version>`) names."""
    try:
        return int(key.rsplit(".", 1)[1])
    except (IndexError, ValueError):
        return None


@attrs.frozen
class Upgrade:
    """How a stored run continues: on which graph, through which migrations."""

    graph: Graph[Any, Any]
    steps: tuple[int, ...] = ()
    """The versions to migrate the context to, in order."""


def upgrade(
    graph: Graph[Any, Any],
    versions: GraphVersions | None,
    log: RunLog,
    last: AgentContext[Any],
) -> Upgrade:
    """The graph `log` resumes on under `versions`' policy, or the `ResumeError` that refuses it."""
    now = started(log.run, log.effects)
    policy = versions.policy if versions is not None else "latest"
    rid, step = log.run.run_id, log.steps[-1].step if log.steps else 0
    if now.version is None or now.version == graph.version:
        return Upgrade(graph)
    if policy == "pinned":
        assert versions is not None
        found = versions.get(log.run.graph, now.version)
        if found is None:
            have = tuple(g.version for g in versions.graphs if g.name == log.run.graph)
            raise VersionMissing(
                log.run.graph, now.version, have, run_id=rid, context=last, step=step
            )
        return Upgrade(found)
    if policy == "refuse" or graph.version is None or graph.version < now.version:
        reason = (
            f"it is on version {now.version} of graph {log.run.graph!r}, and this runner "
            f"resumes only on version {graph.version} (policy {policy!r})"
        )
        raise ResumeError(reason, run_id=rid, context=last, step=step)
    wanted = tuple(range(now.version + 1, graph.version + 1))
    if not graph.migrations:
        return Upgrade(graph)
    missing = [v for v in wanted if v not in graph.migrations]
    if missing:
        reason = (
            f"it is on version {now.version}, and graph {graph.name!r} version "
            f"{graph.version} has no migration to version {', '.join(map(str, missing))}"
        )
        raise ResumeError(reason, run_id=rid, context=last, step=step)
    return Upgrade(graph, wanted)


def migrate(plan: Upgrade, log: RunLog, ctx: AgentContext[Any]) -> AgentContext[Any]:
    """`ctx` through `plan`'s migrations, in order.

    Raises:
        MigrationFailed: a migration raised or returned something else than a context.
    """
    rid, step = log.run.run_id, log.steps[-1].step if log.steps else 0
    for version in plan.steps:
        fn = plan.graph.migrations[version]
        try:
            migrated = fn(ctx)
        except Exception as exc:
            what = f"{type(exc).__name__}: {exc}"
            raise MigrationFailed(version, what, run_id=rid, context=ctx, step=step) from exc
        if not isinstance(migrated, AgentContext):
            what = f"it returned {type(migrated).__name__}, not an AgentContext"
            raise MigrationFailed(version, what, run_id=rid, context=ctx, step=step)
        ctx = migrated
    return ctx


def migration_effect(
    run_id: str, step: int, version: int, ctx: AgentContext[Any], put: Any
) -> Effect:
    """The record of a context migrated to `version` after committed `step`."""
    try:
        value = full_context(ctx, put)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(
            f"run {run_id!r}: the context migrated to version {version} cannot be stored: {exc}"
        ) from exc
    return Effect(run_id, f"{step}.0.0:to.{version}", MIGRATED, value)


def input_effect(
    run_id: str, step: int, version: int, depth: int, ctx: AgentContext[Any], put: Any
) -> Effect:
    """The record of the input of the composite at `depth` migrated to `version`."""
    effect = migration_effect(run_id, step, version, ctx, put)
    return attrs.evolve(effect, key=f"{effect.key}:{depth}", kind=MIGRATED_INPUT)


def migrated_inputs(frames: Sequence[Frame], effects: Sequence[Effect], decode: Any) -> list[Frame]:
    """`frames` with the inputs of the composites they enter replaced by their migrated
    inputs, for each composite entered before the migration that recorded one."""
    out = list(frames)
    for effect in effects:
        if effect.kind != MIGRATED_INPUT:
            continue
        try:
            step = int(effect.key.split(".", 1)[0])
            depth = int(effect.key.rsplit(":", 1)[1])
        except ValueError:
            continue  # not a key this module wrote
        if 0 < depth <= len(out):
            frame = out[depth - 1]
            if isinstance(frame, Enter) and frame.step <= step:
                out[depth - 1] = attrs.evolve(frame, input=decode(effect.value))
    return out


def renamed(frames: Sequence[Frame], names: Mapping[str, str]) -> list[Frame]:
    """`frames` with the nodes' old names replaced by their names in the new version."""
    if not names:
        return list(frames)

    def new(name: str) -> str:
        return new_name(names, name)

    out: list[Frame] = []
    for frame in frames:
        path = tuple(new(part) for part in frame.path)
        if isinstance(frame, Enter):
            out.append(attrs.evolve(frame, path=path, node=new(frame.node)))
        else:
            out.append(attrs.evolve(frame, path=path, node=new(frame.node), next=new(frame.next)))
    return out


def with_context(frames: Sequence[Frame], ctx: AgentContext[Any]) -> list[Frame]:
    """`frames` with the last one continuing from `ctx` (a migrated context)."""
    out = list(frames)
    if out and isinstance(out[-1], Continue):
        out[-1] = attrs.evolve(out[-1], context=ctx)
    return out
