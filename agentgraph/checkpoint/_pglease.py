"""The leases of `PostgresStore`, settled in each group commit's transaction.

Every lease row a commit touches (the runs it writes, the leases it takes,
renews and releases) is locked by one statement in `run_id` order, so two
stores' commits wait for each other but never deadlock; the decisions are
made here from the rows read, and the changes written back by one statement.
A take is thus as durable as the records committed beside it, and costs the
database no commit of its own.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .._core._errors import CheckpointError
from ._lease import Lease, RunBusy, checked_lease, owner_is_gone
from ._wake import Waiter

if TYPE_CHECKING:
    import psycopg

__all__ = ("LeaseTake", "Settled", "settle", "text_refusal")

NOW = "extract(epoch FROM clock_timestamp())::float8"
"""The database's clock: lease terms are measured on it, so the machines' clocks may differ."""

_PLACE = (
    "INSERT INTO leases (run_id, owner, fence, expires) "
    "SELECT r, '', 0, 0 FROM unnest(%b::text[]) AS r ON CONFLICT (run_id) DO NOTHING"
)
_LOCK = (
    f"SELECT run_id, owner, fence, expires, {NOW} FROM leases "
    "WHERE run_id = ANY(%b::text[]) ORDER BY run_id FOR UPDATE"
)
_WRITE = (
    "UPDATE leases SET owner = u.owner, fence = u.fence, expires = u.expires "
    "FROM unnest(%b::text[], %b::text[], %b::int8[], %b::float8[]) "
    "AS u(run_id, owner, fence, expires) "
    "WHERE leases.run_id = u.run_id"
)


@attrs.define(eq=False)
class LeaseTake:
    """A writer thread's order to take `run_id`'s lease for `owner`; answered through `waiter`."""

    run_id: str
    owner: str
    term: float
    waiter: Waiter


@attrs.define
class Settled:
    """What one commit decided about leases."""

    lost: set[str] = attrs.field(factory=set)  # written runs whose fence moved on: refused
    taken: list[tuple[LeaseTake, Lease | Exception]] = attrs.field(factory=list)
    released: list[Lease] = attrs.field(factory=list)
    renewed: dict[str, bool] = attrs.field(factory=dict)  # run -> still ours


def text_refusal(run_id: str, owner: str) -> str | None:
    """Why PostgreSQL's text cannot keep `run_id` or `owner`, or None."""
    for what, text in (("run id", run_id), ("owner", owner)):
        if "\x00" in text:
            return f"the {what} {text!r} holds a NUL character, which PostgreSQL text cannot keep"
        try:
            text.encode()
        except UnicodeEncodeError as exc:
            return f"the {what} {text!r} is not valid UTF-8 ({exc.reason})"
    return None


def settle(
    conn: psycopg.Connection[Any],
    *,
    fences: dict[str, int],
    releases: Sequence[Lease],
    takes: Sequence[LeaseTake],
    renewals: Sequence[Lease],
    term: float,
) -> Settled:
    """Lock, decide and write the leases of one commit (inside the caller's transaction).

    In this order: the fences of the runs written (`fences`) are checked, the
    releases applied, the takes made (in the order they were asked), the due
    renewals written. A take that finds its run held raises `RunBusy` (to its
    waiter), one that finds a damaged row `CheckpointError`.
    """
    out = Settled()
    runs = {*fences, *(r.run_id for r in releases), *(t.run_id for t in takes)}
    runs.update(r.run_id for r in renewals)
    if not runs:
        return out
    if takes:
        conn.execute(_PLACE, (sorted({t.run_id for t in takes}),))
    local = time.time()
    rows = {
        row[0]: list(row[1:]) for row in conn.execute(_LOCK, (sorted(runs),)).fetchall()
    }  # run -> [owner, fence, expires, now]
    changed: set[str] = set()
    for run_id, fence in fences.items():
        if run_id not in rows or rows[run_id][1] != fence:
            out.lost.add(run_id)
    for lease in releases:  # the row stays, lapsed: fencing numbers only ever grow
        row = rows.get(lease.run_id)
        if row is not None and row[1] == lease.fence:
            row[2] = 0.0
            changed.add(lease.run_id)
        out.released.append(lease)
    for take in takes:
        outcome = _take(take, rows[take.run_id], local)
        out.taken.append((take, outcome))
        if isinstance(outcome, Lease):
            changed.add(take.run_id)
    for lease in renewals:
        row = rows.get(lease.run_id)
        mine = row is not None and row[1] == lease.fence
        if row is not None and mine:
            row[2] = row[3] + term
            changed.add(lease.run_id)
        out.renewed[lease.run_id] = mine
    if changed:
        order = sorted(changed)
        conn.execute(
            _WRITE,
            (
                order,
                [rows[r][0] for r in order],
                [rows[r][1] for r in order],
                [float(rows[r][2]) for r in order],
            ),
        )
    return out


def _take(take: LeaseTake, row: list[Any], local: float) -> Lease | Exception:
    """Take the lease in `row` (changed in place), or the error the taker gets."""
    try:
        held_by, fence, expires = checked_lease(take.run_id, *row[:3])
    except CheckpointError as error:
        return error
    now = row[3]
    # A lease nobody can renew (its owner is gone) is free at once.
    if expires > now and not owner_is_gone(held_by):
        return RunBusy(take.run_id, held_by, local + (expires - now))
    row[0], row[1], row[2] = take.owner, fence + 1, now + take.term
    return Lease(take.run_id, take.owner, fence + 1, local + take.term)
