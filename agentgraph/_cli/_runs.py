"""`agentgraph runs check | migrate`: stored runs against a new version of a graph.

```
agentgraph runs check app.agents:graph --store runs.db
agentgraph runs check app.agents:graph --store postgresql://host/db \
    --versions app.agents:VERSIONS
agentgraph runs migrate app.agents:graph --store runs.db --versions app.agents:VERSIONS
```

`check` lists every unfinished run the graph (under `--versions`, a
`GraphVersions` and its policy) could not resume, one line each with the
reason, and exits with status 1 when there is any. `migrate` applies the
graph's context migrations to every unfinished run on an older version
(under `--versions`, to those its policy moves to the graph's version).
A thread's waiting turns are runs like any other; runs are read one at a time.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from .._core._errors import AgentGraphError
from ._load import CommandError, _import, load_target

if TYPE_CHECKING:
    from .._core._versions import GraphVersions
    from ..checkpoint import CheckpointStore

__all__ = ("add_runs_command", "load_versions")


def add_runs_command(commands: Any) -> None:
    """Add the `runs` subcommand (`check`, `migrate`) to the command line's subparsers."""
    runs = commands.add_parser("runs", help="check or migrate stored runs against a graph")
    actions = runs.add_subparsers(dest="action", required=True, parser_class=type(runs))
    check = actions.add_parser("check", help="list the unfinished runs the graph cannot resume")
    migrate = actions.add_parser("migrate", help="apply the graph's context migrations")
    for cmd in (check, migrate):
        cmd.add_argument("target", help="module:attribute naming the new Graph")
        cmd.add_argument(
            "--store", required=True, help="SQLite file, or a postgresql:// connection string"
        )
        cmd.add_argument("--schema", help="the PostgreSQL schema of the store's tables")
        cmd.add_argument(
            "--versions", help="module:attribute naming the GraphVersions (and policy) to apply"
        )
    check.set_defaults(handler=_check)
    migrate.set_defaults(handler=_migrate)


def _store(args: argparse.Namespace) -> CheckpointStore:
    from ..checkpoint import PostgresStore, SQLiteStore

    spec: str = args.store
    if spec.startswith(("postgresql://", "postgres://")):
        if args.schema is not None:
            return PostgresStore(spec, schema=args.schema)
        return PostgresStore(spec)
    return SQLiteStore(spec)


def load_versions(spec: str | None) -> GraphVersions | None:
    """The `GraphVersions` a `module:attribute` names (None when not given)."""
    if spec is None:
        return None
    from .._core._versions import GraphVersions

    module, _, name = spec.partition(":")
    found = getattr(_import(module), name, None)
    if not isinstance(found, GraphVersions):
        raise CommandError(f"{spec} is not a GraphVersions")
    return found


def _check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..checkpoint import check_runs

    graph = load_target(args.target)
    versions = load_versions(args.versions)

    async def check() -> list[Any]:
        store = _store(args)
        try:
            return await check_runs(graph, store, versions=versions)
        finally:
            await store.aclose()

    try:
        stranded = anyio.run(check)
    except AgentGraphError as exc:
        raise CommandError(str(exc)) from exc
    for run in stranded:
        out.write(f"{run.run_id}\tversion {run.version}\t{run.reason}\n")
    what = f"version {graph.version}" if graph.version is not None else "no version"
    err.write(f"{len(stranded)} unfinished run(s) that {graph.name!r} ({what}) cannot resume\n")
    return 1 if stranded else 0


def _migrate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..checkpoint import migrate_runs

    graph = load_target(args.target)
    versions = load_versions(args.versions)

    async def migrate() -> list[str]:
        store = _store(args)
        try:
            return await migrate_runs(graph, store, versions=versions)
        finally:
            await store.aclose()

    try:
        done = anyio.run(migrate)
    except AgentGraphError as exc:
        err.write(f"agentgraph: {exc}\n")
        return 1
    for run_id in done:
        out.write(f"{run_id}\n")
    err.write(f"{len(done)} run(s) migrated to version {graph.version}\n")
    return 0
