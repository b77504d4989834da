"""What the SQL stores share: the reads of a run's log and of a thread, and lease fencing.

SQLite and PostgreSQL read the same tables with the same SELECTs but for two
words: the placeholder (`?`, `%s`) and the column effects are ordered by
(SQLite's `rowid`, PostgreSQL's `position`). A step's path is stored in a
shape of each database's own (a JSON list, a text array), so each store
hands `Reads` its own decoder. The writes stay apart: their SQL differs in
more than words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ._lease import LeaseLost
from ._records import Effect, Record, RunLog, RunRecord, StepRecord, ThreadLog

__all__ = ("Connection", "Reads", "fenced", "read_ids", "read_thread_ids")

_PREFIX = b'{"B":'
"""How a first context stored as a change to its base run starts (see `_bases`)."""


class Connection(Protocol):
    """What the reads need of an `sqlite3` or psycopg connection."""

    def execute(self, query: str, params: Any = ..., /) -> Any: ...


PathReader = Callable[[str, int, Any], "tuple[str, ...]"]
"""Decodes step `number`'s stored path for `run_id`, or raises `damaged(...)`."""


class Reads:
    """`log` and `thread` in one dialect, their SQL built once when the store's module loads."""

    __slots__ = (
        "_chain_effects",
        "_chain_runs",
        "_chain_steps",
        "_effects",
        "_path",
        "_run",
        "_runs",
        "_steps",
        "_thread",
    )

    def __init__(self, mark: str, effect_order: str, path: PathReader) -> None:
        self._run = (
            "SELECT id, graph, structure, context, created, parent, parent_step, thread, base "
            f"FROM runs WHERE run_id = {mark}"
        )
        self._steps = (
            "SELECT seq, step, path, node, next, local, steps, context, at, duration "
            f"FROM steps WHERE run = {mark} ORDER BY seq"
        )
        self._effects = (
            f"SELECT key, kind, value FROM effects WHERE run = {mark} ORDER BY {effect_order}"
        )
        self._thread = f"SELECT head, created, updated FROM threads WHERE thread_id = {mark}"
        self._runs = f"SELECT run_id, base FROM runs WHERE thread = {mark} ORDER BY id"
        self._path = path
        # The runs a first context continues from: the run named, then each one's base
        # while the context before it is a change (it starts with `_PREFIX`).
        chain = (
            "WITH RECURSIVE chain(id, base, relative) AS ("
            f"SELECT id, base, substr(context, 1, 5) = {mark} FROM runs WHERE run_id = {mark} "
            f"UNION SELECT r.id, r.base, substr(r.context, 1, 5) = {mark} "
            "FROM runs r JOIN chain c ON r.run_id = c.base WHERE c.relative) "
        )
        self._chain_runs = (
            f"{chain}SELECT id, run_id, graph, structure, context, created, parent, "
            "parent_step, thread, base FROM runs WHERE id IN (SELECT id FROM chain)"
        )
        self._chain_steps = (
            f"{chain}SELECT run, seq, step, path, node, next, local, steps, context, at, "
            "duration FROM steps WHERE run IN (SELECT id FROM chain) ORDER BY run, seq"
        )
        self._chain_effects = (
            f"{chain}SELECT run, key, kind, value FROM effects "
            f"WHERE run IN (SELECT id FROM chain) ORDER BY run, {effect_order}"
        )

    def log(self, conn: Connection, run_id: str) -> RunLog | None:
        """Every record of `run_id`, or None; a damaged path raises `CheckpointError`."""
        row = conn.execute(self._run, (run_id,)).fetchone()
        if row is None:
            return None
        rid, *fields = row
        steps = conn.execute(self._steps, (rid,)).fetchall()
        effects = conn.execute(self._effects, (rid,)).fetchall()
        paths = [self._path(run_id, i, s[2]) for i, s in enumerate(steps, 1)]
        return RunLog(
            RunRecord(run_id, *fields),
            tuple(
                StepRecord(run_id, seq, step, path, *rest)
                for path, (seq, step, _, *rest) in zip(paths, steps, strict=True)
            ),
            tuple(Effect(run_id, *e) for e in effects),
        )

    def chain(self, conn: Connection, run_id: str) -> tuple[RunLog, ...]:
        """The logs of `run_id` and of the runs its first context continues from (each
        run's base while its first context is a change to it), newest first, in three
        queries however long the chain; a run missing from the store ends it."""
        params = (_PREFIX, run_id, _PREFIX)
        runs = {row[0]: row[1:] for row in conn.execute(self._chain_runs, params).fetchall()}
        steps: dict[int, list[Any]] = {rid: [] for rid in runs}
        for row in conn.execute(self._chain_steps, params).fetchall():
            steps[row[0]].append(row[1:])
        effects: dict[int, list[Any]] = {rid: [] for rid in runs}
        for row in conn.execute(self._chain_effects, params).fetchall():
            effects[row[0]].append(row[1:])
        logs = {}
        for rid, (name, *fields) in runs.items():
            paths = [self._path(name, i, s[2]) for i, s in enumerate(steps[rid], 1)]
            logs[name] = RunLog(
                RunRecord(name, *fields),
                tuple(
                    StepRecord(name, seq, step, path, *rest)
                    for path, (seq, step, _, *rest) in zip(paths, steps[rid], strict=True)
                ),
                tuple(Effect(name, *e) for e in effects[rid]),
            )
        ordered: list[RunLog] = []
        at: str | None = run_id
        while at is not None and at in logs:
            ordered.append(logs.pop(at))
            at = ordered[-1].run.base
        return tuple(ordered)

    def thread(self, conn: Connection, thread_id: str) -> ThreadLog | None:
        """The thread's head and turns, or None."""
        row = conn.execute(self._thread, (thread_id,)).fetchone()
        if row is None:
            return None
        runs = conn.execute(self._runs, (thread_id,)).fetchall()
        return ThreadLog(thread_id, row[0], row[1], row[2], tuple((r, b) for r, b in runs))


def read_ids(conn: Connection) -> tuple[str, ...]:
    return tuple(r[0] for r in conn.execute("SELECT run_id FROM runs ORDER BY id"))


def read_thread_ids(conn: Connection) -> tuple[str, ...]:
    return tuple(r[0] for r in conn.execute("SELECT thread_id FROM threads ORDER BY created"))


def fenced(
    writes: Sequence[Sequence[Record]], lost: set[str]
) -> tuple[list[tuple[Sequence[Record], Exception]], list[Sequence[Record]]]:
    """The writes of a run in `lost` (its lease passed to another runner), refused; and the rest."""
    refused: list[tuple[Sequence[Record], Exception]] = []
    kept = []
    for records in writes:
        gone = lost.intersection(r.run_id for r in records)
        if gone:
            refused.append((records, LeaseLost(min(gone), "another runner took it over")))
        else:
            kept.append(records)
    return refused, kept
