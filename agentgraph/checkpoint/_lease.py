"""One runner per run: a run being run or resumed is leased to its runner."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from .._errors import CheckpointError

__all__ = ("lease", "release")


# Runs being run or resumed, per store object: one runner at a time per run.
_running: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
_running_lock = threading.Lock()  # stores may be shared by event loops in several threads


def lease(store: Any, run_id: str) -> None:
    """Take `run_id` for one runner, or raise `CheckpointError` if another one has it."""
    with _running_lock:
        taken = _running.setdefault(store, set())
        if run_id in taken:
            raise CheckpointError(
                f"run {run_id!r} is already running in this process; "
                "wait for it to stop before resuming it"
            )
        taken.add(run_id)


def release(store: Any, run_id: str) -> None:
    """Give `run_id` back (see `lease`)."""
    with _running_lock:
        _running.get(store, set()).discard(run_id)
