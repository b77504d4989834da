"""Interpreter exit waits until the Temporal SDK's own threads are out of Python.

Each call into Temporal's Rust core ends on one of its threads, which enters
Python to hand the result to the event loop (`call_soon_threadsafe`). Writing
to the loop's wake-up socket gives up the interpreter lock, so the awaiting
task may finish, and the program after it, before that thread has taken the
lock back. If the interpreter is finalizing by then, the thread is stopped
while it holds a thread state, and CPython aborts the process:
`Fatal Python error: PyGILState_Release: thread state ... must be current`.
It happens after the last awaited call of any program (a worker's shutdown,
a dev server's), whatever order the worker, client and server closed in.

So when agentgraph's Temporal support is loaded, an `atexit` hook (atexit
callbacks run before finalizing starts) waits, with the lock released, until
no thread that Python's `threading` did not start is running Python code;
such a thread needs microseconds once it gets the lock. The wait is bounded
so that a thread that never leaves cannot hold the exit up.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time

__all__ = ("EXIT_WAIT", "wait_for_foreign_threads")

EXIT_WAIT = 2.0
"""The longest the exit waits, in seconds."""
_PAUSE = 0.001


def _foreign_threads() -> set[int]:
    """Threads running Python code that `threading` did not start (a native library's)."""
    known = {
        thread.ident
        for thread in threading.enumerate()
        # A native thread that asked for `current_thread()` is listed as a dummy.
        if not isinstance(thread, threading._DummyThread)
    }
    return set(sys._current_frames()) - known


def wait_for_foreign_threads(limit: float = EXIT_WAIT) -> bool:
    """Sleep (releasing the interpreter lock) until no foreign thread runs Python code.

    Returns whether they all left within `limit` seconds.
    """
    deadline = time.monotonic() + limit
    while _foreign_threads():
        if time.monotonic() >= deadline:
            return False
        time.sleep(_PAUSE)
    return True


atexit.register(wait_for_foreign_threads)
