"""One owner per run: leases held in the store, with a fencing number on every commit.

A runner takes a run's lease before it records, resumes or continues anything.
The lease names its owner and lapses at `expires` unless renewed; the store
renews the leases its runs hold in the background (at a third of their term),
so only a runner whose process died or lost the database loses one. Each
taking of a lease raises the run's fencing number, and a store refuses a
commit whose number is not the current one: a runner that lost its lease to
another can never write over the newer owner's records.
"""

from __future__ import annotations

import os
import socket

import attrs

from .._errors import LeaseLost, RunBusy

__all__ = ("LEASE_TERM", "Lease", "LeaseLost", "RunBusy", "new_owner", "owner_is_gone")

LEASE_TERM = 30.0
"""Seconds a lease lasts without renewal: how long a crashed runner's run stays blocked."""


@attrs.frozen
class Lease:
    """A run held by one runner until `expires` (wall-clock seconds), fenced by `fence`."""

    run_id: str
    owner: str
    fence: int
    expires: float


def new_owner() -> str:
    """An owner id that names the machine and process, and is unique per call."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


def owner_is_gone(owner: str) -> bool:
    """True when `owner` was a process on this machine that no longer exists.

    Its lease need not run out: nobody can renew it. Anything else (another
    machine, a live process, a process we may not signal) counts as alive.
    """
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False
