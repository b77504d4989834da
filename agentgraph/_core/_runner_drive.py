"""How the end of a run that did not finish is reported, and the stream a caller enters.

`GraphRunner` (in `_runner.py`) starts and drives runs; these are the parts of
a run's end it shares with nothing else: the report of an interrupted,
failed or cancelled run, and `runner.stream(...)`'s context manager.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from ._errors import Interrupted, UsageError
from ._events import Event, RunFinished
from ._run_state import _Run
from ._runtime import Interrupt

if TYPE_CHECKING:
    from anyio.abc import ObjectReceiveStream


__all__ = ("EventStream", "report_end", "report_interrupt")


_REPORT_GRACE = 5.0


async def report_interrupt(run: _Run, signal: Interrupt) -> Interrupted:
    """The `Interrupted` error for a node's question, after reporting the run's end."""
    stopped = Interrupted(
        run_id=run.run_id,
        question=signal.question,
        context=signal.context,
        step=signal.step,
        path=signal.path,
    )
    await report_end(run, stopped, signal)
    return stopped


async def report_end(run: _Run, error: Exception, signal: Interrupt | None = None) -> None:
    """Report a run that did not finish, after making its committed steps durable.

    Shielded, so a cancelled run still reports; bounded, so a stuck sink cannot hold it.
    """
    with anyio.move_on_after(_REPORT_GRACE, shield=True):
        if run.journal is not None:
            await run.journal.settle(signal)
        last = run.handle.context
        if run.emit is not None and last is not None:
            await run.emit(RunFinished(last, run.steps, error))


class EventStream(AbstractAsyncContextManager["ObjectReceiveStream[Event]"]):
    """`runner.stream(...)`: entered with `async with`, never iterated itself."""

    def __init__(self, inner: AbstractAsyncContextManager[ObjectReceiveStream[Event]]) -> None:
        self._inner = inner

    async def __aenter__(self) -> ObjectReceiveStream[Event]:
        return await self._inner.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)

    def __aiter__(self) -> Any:
        raise UsageError(
            "runner.stream(...) is not iterated itself: it runs the graph inside an "
            "`async with` block, so write `async with runner.stream(graph, ctx) as events:` "
            "and then `async for event in events:`"
        )
