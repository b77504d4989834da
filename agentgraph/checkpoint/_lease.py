"""One owner per run: leases held in the store, with a fencing number on every commit.

A runner takes a run's lease before it records, resumes or continues anything.
The lease names its owner and lapses at `expires` unless renewed; the store
renews the leases its runs hold in the background (at a third of their term),
so only a runner whose process died or lost the database loses one. Each
taking of a lease raises the run's fencing number, and a store refuses a
commit whose number is not the current one: a runner that lost its lease to
another can never write over the newer owner's records.

A lease nobody can renew is free at once, without waiting out its term: one
whose owner was a process on this machine that has ended, and one whose owner
was a store of this process that was closed or whose database failed (it can
never write again). The stores of this process register the owners of the
leases they hold (`hold`, `let_go`) until they give them back or stop.
"""

from __future__ import annotations

import math
import os
import socket
import threading
from collections import Counter
from typing import Any

import attrs

from .._core._errors import CheckpointError, LeaseLost, RunBusy

__all__ = (
    "LEASE_TERM",
    "Lease",
    "LeaseLost",
    "RunBusy",
    "checked_lease",
    "hold",
    "let_go",
    "new_owner",
    "owner_is_gone",
)

LEASE_TERM = 30.0
"""Seconds a lease lasts without renewal: how long a crashed runner's run stays blocked."""


@attrs.frozen
class Lease:
    """A run held by one runner until `expires` (wall-clock seconds), fenced by `fence`."""

    run_id: str
    owner: str
    fence: int
    expires: float


def checked_lease(run_id: str, owner: Any, fence: Any, expires: Any) -> tuple[str, int, float]:
    """A lease row as a store read it, when whole: an owner, a fencing number, a finite expiry.

    Raises:
        CheckpointError: the row is damaged; names the run.
    """
    whole = (
        isinstance(owner, str)
        and isinstance(fence, int)
        and not isinstance(fence, bool)
        and isinstance(expires, int | float)
        and math.isfinite(expires)
    )
    if not whole:
        how = f"owner {owner!r}, fence {fence!r}, expires {expires!r}"
        raise CheckpointError(f"run {run_id!r}: its lease is damaged: {how}")
    return owner, fence, float(expires)


def new_owner() -> str:
    """An owner id that names the machine and process, and is unique per call."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


# The owners whose leases the live stores of this process hold, counted: an owner
# id is unique per call of `new_owner`, but a caller may name its own.
_live: Counter[str] = Counter()
_live_lock = threading.Lock()


def hold(owner: str) -> None:
    """A store of this process is taking, or holds, a lease for `owner`."""
    with _live_lock:
        _live[owner] += 1


def let_go(owner: str) -> None:
    """A store of this process no longer holds a lease for `owner` (released, lost or stopped)."""
    with _live_lock:
        _live[owner] -= 1
        if _live[owner] <= 0:
            del _live[owner]


def owner_is_gone(owner: str) -> bool:
    """True when nobody can renew `owner`'s lease, so it need not run out.

    That is when `owner` was a process on this machine that no longer exists,
    or names this process and no live store of it holds a lease for `owner`
    (the store was closed, or its database failed, before the release could
    be written). Anything else (another machine, a live process, a process we
    may not signal) counts as alive.
    """
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        with _live_lock:
            return owner not in _live
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False
