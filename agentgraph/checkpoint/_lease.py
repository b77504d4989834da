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
import time

import attrs

from .._context import AgentContext
from .._errors import CheckpointError, ResumeError, RunError

__all__ = ("LEASE_TERM", "Lease", "LeaseLost", "RunBusy", "new_owner")

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


class RunBusy(ResumeError):
    """Another runner holds the run's lease: nothing was run or written.

    Attributes:
        owner: the runner holding the lease (machine, process, and a tag).
        expires: wall-clock time its lease lapses unless renewed.
    """

    def __init__(self, run_id: str, owner: str, expires: float) -> None:
        self.owner = owner
        self.expires = expires
        self.run_id = run_id
        left = max(0.0, expires - time.time())
        self.reason = (
            f"another runner holds it ({owner}); its lease lapses in {left:.1f} s "
            "unless renewed, which its runner does while it is alive"
        )
        message = f"run {run_id!r} is already being run: {self.reason}"
        # Nothing was loaded yet: the error carries an empty context at step 0.
        RunError.__init__(self, message, context=AgentContext(None), step=0)


class LeaseLost(CheckpointError):
    """The run's lease lapsed or passed to another runner: this runner must stop.

    Raised by a store refusing a commit, and by a runner that could not renew
    its lease before it ran out.
    """

    def __init__(self, run_id: str, why: str) -> None:
        self.run_id = run_id
        self.why = why
        super().__init__(f"run {run_id!r} is no longer ours to run: {why}")
