"""The errors of threads (conversations kept in a checkpoint store); drawn in `_errors`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ._errors import CheckpointError
from ._errors_root import masked
from ._errors_run import RunBusy, RunError

if TYPE_CHECKING:
    from ._context import AgentContext

__all__ = (
    "SHOWN_ID",
    "CompactionFailed",
    "ThreadBusy",
    "ThreadDamaged",
    "ThreadError",
    "ThreadMoved",
    "ThreadNotFound",
    "shown",
)


SHOWN_ID = 80
"""The most characters of an id's repr an error message echoes."""


def shown(value: object) -> str:
    """`value`'s repr for a message, clipped to `SHOWN_ID` characters and its length."""
    text = repr(value)
    if len(text) <= SHOWN_ID:
        return text
    size = f" ({len(value):,} characters)" if isinstance(value, str) else ""
    return f"{text[:SHOWN_ID]}…{size}"


class ThreadError(CheckpointError):
    """A thread the store cannot serve as asked, or a bad thread id; `.thread_id` names it.

    Raised as a run on the thread starts, `.context` is the context the run
    was given (nothing ran); raised by a thread function, it is None. The
    message echoes the id clipped (see `SHOWN_ID`); `.thread_id` holds it whole.
    """

    def __init__(
        self, thread_id: str, reason: str, *, context: AgentContext[Any] | None = None
    ) -> None:
        self.thread_id = thread_id
        self.reason = masked(reason)
        self.context = context
        self.step = None if context is None else 0
        super().__init__(f"thread {shown(thread_id)}: {reason}")


class ThreadNotFound(ThreadError):
    """No thread of that id is in the store (a run on a new id starts one; reading does not),
    or `.run_id` (when given) is not one of the thread's turns."""

    def __init__(
        self,
        thread_id: str,
        *,
        run_id: str | None = None,
        context: AgentContext[Any] | None = None,
    ) -> None:
        self.run_id = run_id
        reason = (
            "no such thread in the store (a run with this thread_id starts it)"
            if run_id is None
            else f"run {shown(run_id)} is not a turn of this thread"
        )
        super().__init__(thread_id, reason, context=context)


class ThreadDamaged(ThreadError):
    """The thread's stored conversation cannot be read back; the store's error is `__cause__`."""

    def __init__(
        self, thread_id: str, detail: str, *, context: AgentContext[Any] | None = None
    ) -> None:
        self.detail = masked(detail)
        super().__init__(
            thread_id,
            f"its stored conversation is damaged: {detail}; fork an earlier turn "
            "(fork_thread with run_id=...) or delete the thread",
            context=context,
        )


class ThreadBusy(RunBusy):
    """Another run holds the thread: this one was refused before anything ran or was written.

    `.context` is the context the refused run was given, `.thread_id` the
    thread; `.owner` and `.expires` say who holds it and until when.
    """

    def __init__(
        self,
        thread_id: str,
        owner: str,
        expires: float,
        *,
        context: AgentContext[Any] | None = None,
    ) -> None:
        super().__init__(f"thread:{thread_id}", owner, expires)
        self.thread_id = thread_id
        if context is not None:
            self.context = context
        self.args = (
            masked(
                f"thread {shown(thread_id)} is busy: another run on it is going on "
                f"({self.reason}); wait for it to end, then run again"
            ),
        )


class ThreadMoved(ThreadBusy):
    """The thread's head moved since the caller read it (`expect_head=`): another turn
    ran in between. Nothing was run or written; `.head` is the thread's head now
    and `.expected` the one the caller read (None: no head yet).
    """

    def __init__(
        self,
        thread_id: str,
        head: str | None,
        expected: str | None,
        *,
        context: AgentContext[Any] | None = None,
    ) -> None:
        super().__init__(thread_id, f"run {head!r}", time.time(), context=context)
        self.head, self.expected = head, expected
        self.args = (
            masked(
                f"thread {shown(thread_id)} moved on: its head is run {head!r}, not {expected!r} "
                "as when it was read; read the thread again and run the turn on what it holds"
            ),
        )


class CompactionFailed(RunError):
    """A thread's compaction policy cannot bring the conversation within its budget.

    Raised before the turn runs when what it must keep does not fit (step 0),
    or by the turn's `compact` step when the summary came out too long for the
    room left for it. `.context` is the turn's first context, uncompacted;
    `.budget` is the policy's token budget and `.needed` the tokens of what
    it must keep (the system prompt, system messages and the new message, with
    room for the summary: a latest turn too large is clipped or summarized).
    """

    def __init__(
        self,
        thread_id: str,
        reason: str,
        *,
        budget: int,
        needed: int,
        context: AgentContext[Any],
    ) -> None:
        self.thread_id = thread_id
        self.budget = budget
        self.needed = needed
        self.reason = masked(reason)
        super().__init__(
            f"thread {shown(thread_id)} cannot be compacted to {budget} tokens: {reason}",
            context=context,
            step=0,
        )
