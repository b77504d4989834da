"""Flow control on the queue: limits per assistant and per caller key, checked as runs are claimed.

A `Limit` caps the runs of one assistant (or of one caller key) running at
once (`concurrency`) and the runs started in any `per` seconds (`rate`, a
sliding window). The counts are read from the database every worker shares
(runs running, with an unlapsed claim; `server_flow_starts`, a row per run
started within the longest window), so the limits hold across every worker
on every machine: a provider's rate limit shared by all of them, say.

A claim under limits takes one lock first (`pg_advisory_xact_lock` on
PostgreSQL; SQLite's writers take turns already), so two claims never both
count the same free place. A run whose limit is reached is skipped, not
failed: it stays pending and is claimed once a place frees or the window
moves on, while runs behind it of other assistants and keys go first. A run
claimed again after its worker died was admitted once already: it is not
counted against a limit again.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

__all__ = ("FLOW_SCHEMA", "FlowLimits", "Limit", "LOOK_PAST", "admit")

LOOK_PAST = 200
"""Runs a claim under limits looks at past those it takes, for ones whose limits allow them."""

FLOW_SCHEMA = """
CREATE TABLE IF NOT EXISTS server_flow_starts (
    scope TEXT NOT NULL,
    name TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS server_flow_starts_at ON server_flow_starts (at);
"""


def _at_least_one(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(
            f"{attribute.name} is a whole number of at least 1 (or None), not {value!r}"
        )


def _positive(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} is a number of seconds above 0, not {value!r}")


@attrs.frozen(kw_only=True)
class Limit:
    """How many runs of one assistant, or of one caller key, run at once and start per window.

    Args:
        concurrency: runs running at once; None (the default) for no cap.
        rate: runs started in any `per` seconds; None (the default) for no cap.
        per: the rate's window, in seconds. Default 60.
    """

    concurrency: int | None = attrs.field(default=None, validator=_at_least_one)
    rate: int | None = attrs.field(default=None, validator=_at_least_one)
    per: float = attrs.field(default=60.0, validator=_positive)


@attrs.frozen(kw_only=True)
class FlowLimits:
    """The limits workers apply as they claim runs; give every worker the same.

    Args:
        per_assistant: the limit of each assistant's runs, counted per assistant.
        per_key: the limit of each caller key's runs: the identity an auth hook
            gave the request that created the run, else its `x-api-key` (its
            SHA-256), else one key shared by every caller without either.
            Runs a cron queues count under that shared key.
        assistants: limits of some assistants instead of `per_assistant`, by
            assistant id or graph id (the id names the graph's assistants).
    """

    per_assistant: Limit | None = None
    per_key: Limit | None = None
    assistants: Mapping[str, Limit] = attrs.field(factory=dict, converter=dict)

    @property
    def limited(self) -> bool:
        """Whether any limit is set: a claim then counts before it takes a run."""
        return bool(self.per_assistant or self.per_key or self.assistants)

    def of_assistant(self, assistant_id: str, graph_id: str) -> Limit | None:
        """The limit of the runs of `assistant_id` (an assistant of `graph_id`)."""
        return self.assistants.get(assistant_id, self.assistants.get(graph_id, self.per_assistant))


@attrs.define
class _Counts:
    """What a claim under limits has read of the database, and what it has taken."""

    running: collections.Counter[tuple[str, str]]
    started: dict[float, collections.Counter[tuple[str, str]]]
    """Runs started within each window (by its length), per scope and name."""


def _counts(run_sql: Callable[..., Any], limits: FlowLimits, now: float) -> _Counts:
    windows = {
        limit.per
        for limit in (limits.per_assistant, limits.per_key, *limits.assistants.values())
        if limit is not None and limit.rate is not None
    }
    running: collections.Counter[tuple[str, str]] = collections.Counter()
    for assistant_id, key, count in run_sql(
        "SELECT assistant_id, COALESCE(flow_key, ''), COUNT(*) FROM server_runs "
        "WHERE status = 'running' AND claimed_until >= ? GROUP BY assistant_id, flow_key",
        (now,),
    ).fetchall():
        running["assistant", assistant_id] += count
        running["key", key] += count
    started: dict[float, collections.Counter[tuple[str, str]]] = {}
    if windows:
        run_sql("DELETE FROM server_flow_starts WHERE at <= ?", (now - max(windows),))
    for window in windows:
        counted: collections.Counter[tuple[str, str]] = collections.Counter()
        started[window] = counted
        for scope, name, count in run_sql(
            "SELECT scope, name, COUNT(*) FROM server_flow_starts WHERE at > ? "
            "GROUP BY scope, name",
            (now - window,),
        ).fetchall():
            counted[scope, name] = count
    return _Counts(running, started)


def _allows(limit: Limit | None, counts: _Counts, which: tuple[str, str]) -> bool:
    if limit is None:
        return True
    if limit.concurrency is not None and counts.running[which] >= limit.concurrency:
        return False
    return limit.rate is None or counts.started[limit.per][which] < limit.rate


def admit(
    run_sql: Callable[..., Any],
    limits: FlowLimits,
    rows: Sequence[Sequence[Any]],
    count: int,
    now: float,
    *,
    fields: Callable[[Sequence[Any]], tuple[str, str, str, str]],
) -> list[Sequence[Any]]:
    """The first `count` of `rows` (candidates for a claim, in claim order) that the
    limits allow, their starts recorded, through `run_sql` of the claim's transaction.

    `fields` reads a row's status, assistant id, graph id and caller key.
    """
    counts = _counts(run_sql, limits, now)
    taken: list[Sequence[Any]] = []
    for row in rows:
        if len(taken) == count:
            break
        status, assistant_id, graph_id, key = fields(row)
        mine = (
            (limits.of_assistant(assistant_id, graph_id), ("assistant", assistant_id)),
            (limits.per_key, ("key", key)),
        )
        # A run claimed again was admitted once already: it runs, but starts nothing new.
        again = status == "running"
        if not again and not all(_allows(limit, counts, which) for limit, which in mine):
            continue
        taken.append(row)
        for limit, which in mine:
            counts.running[which] += 1
            if not again and limit is not None and limit.rate is not None:
                for counted in counts.started.values():
                    counted[which] += 1
                run_sql(
                    "INSERT INTO server_flow_starts (scope, name, at) VALUES (?, ?, ?)",
                    (*which, now),
                )
    return taken
