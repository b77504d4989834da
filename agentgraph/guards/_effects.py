"""What guarded effects are made of: a model call or stream checked on its way in and out,
tool calls before they run, tool results before they enter the history.

The guard layers (`_layers.py`) are built from these, and only for a runner
given guards, so a run without guards pays nothing for them. Input guards that
rewrite run before the call; the others run beside it (`Guards.beside`) and
one that blocks cancels the call in flight. A
cancelled call is never recorded as a response: it counts as one request whose
tokens the provider had not reported (`Usage(requests=1, unmetered=1)`, token
counts arrive with a response's end), reported as partial on the error and the
event, and charged to the run's usage limits.

What the guards of a model call spend themselves (a judge's calls) is added to
the usage of the answer its node gets, so it counts in the context's usage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from anyio.abc import TaskStatus

from .._core._errors_guards import GuardError
from .._core._gate import PARTIAL
from .._core._journal import ToolAnswer
from ..llm._messages import Message, ToolCall, Usage
from ..llm._model import ChatRequest, ChatResponse, ResponseDone, StreamEvent
from ._check import GuardRound, Record, Round, ask, decide, settle, tripped
from ._guard import Guard, Guards, Stage

if TYPE_CHECKING:
    from .._core._runtime import Runtime

__all__ = (
    "PARTIAL",
    "ResultsChecked",
    "checked_calls",
    "merged",
    "output_checked",
    "result_outcome",
)


def _split(guards: Guards) -> tuple[tuple[Guard, ...], tuple[Guard, ...]]:
    """The input guards to ask before the call, and those to ask beside it."""
    if not guards.beside:
        return guards.input, ()
    before = tuple(g for g in guards.input if g.rewrites)
    return before, tuple(g for g in guards.input if not g.rewrites)


def _added(usage: Usage | None, more: Usage | None) -> Usage | None:
    return more if usage is None else usage if more is None else usage + more


async def output_checked(
    rt: Runtime, guards: Sequence[Guard], value: Any, limit: float
) -> tuple[Any, Usage | None]:
    """`value` (an answer) as the output guards leave it, and what they spent; raises when
    one blocks."""
    return await _checked(rt, "output", guards, value, limit)


async def _checked(
    rt: Runtime, stage: Stage, guards: Sequence[Guard], value: Any, limit: float
) -> tuple[Any, Usage | None]:
    """`value` as `guards` leave it, asked in turn (a request before its call, or an answer),
    and what they spent on models."""
    if not guards:
        return value, None
    round = await ask(rt, GuardRound(tuple(guards), stage, value, limit, meters=rt.meters))
    await settle(rt, stage, round)
    blocked = round.blocked
    if blocked is not None:
        raise tripped(rt, stage, blocked, value)
    return round.value(value), round.spent


class _Beside:
    """What the guards beside a call and the call itself leave for each other."""

    __slots__ = ("decided", "error", "in_flight", "reported", "round", "spent")

    def __init__(self) -> None:
        self.round: Round | None = None
        self.error: BaseException | None = None
        self.in_flight = False
        self.reported = False
        self.spent: Usage | None = None
        self.decided = anyio.Event()


async def _beside(
    rt: Runtime,
    guards: Sequence[Guard],
    request: ChatRequest,
    limit: float,
    scope: anyio.CancelScope,
    state: _Beside,
    *,
    task_status: TaskStatus[bool],
) -> None:
    """Ask `guards` about `request`; cancel `scope` (the call) if one blocks.

    Reports started (False) once the round has its place in the run's record
    and is being decided, so the call's record comes after it whatever the
    scheduler does; or started (True) with a round served from the record.
    """
    live = False

    def started() -> None:
        nonlocal live
        live = True
        task_status.started(False)

    round = GuardRound(tuple(guards), "input", request, limit, True, rt.meters, started)
    try:
        state.round = await ask(rt, round)
    except Exception as exc:  # reported after the task group, unwrapped
        state.error = exc
    if live and (state.error is not None or state.round.blocked is not None):  # type: ignore[union-attr]
        scope.cancel()  # before waking the reader, so it wakes cancelled
    state.decided.set()
    if not live:
        task_status.started(True)


async def _blocked(rt: Runtime, state: _Beside, name: str, request: ChatRequest) -> None:
    """Report the round beside a call, and raise if it blocked.

    A call cancelled in flight counts `PARTIAL`; one that had answered, its
    response's usage (the response is dropped, never recorded).
    """
    state.reported = True
    if state.error is not None:
        raise state.error
    round = state.round
    assert round is not None, "the guards' task ended without a round"
    blocked = round.blocked
    partial = state.in_flight
    usage = None if blocked is None else (PARTIAL if partial else state.spent)
    if usage is not None:
        for meter in rt.meters:
            meter.after(name, usage)
    await settle(rt, "input", round, usage, partial)
    if blocked is not None:
        raise tripped(rt, "input", blocked, request, usage, partial)


class _Checked:
    """A guarded stream: the final response waits for the guards beside the call, is
    recorded only if they allow, and passes the output guards before the reader gets it."""

    __slots__ = ("_done", "_events")

    def __init__(
        self,
        events: AsyncIterator[StreamEvent],
        done: Callable[[ChatResponse], Awaitable[ChatResponse]],
    ) -> None:
        self._events = events
        self._done = done

    def __aiter__(self) -> _Checked:
        return self

    async def __anext__(self) -> StreamEvent:
        event = await self._events.__anext__()
        if isinstance(event, ResponseDone):
            response = await self._done(event.response)
            if response is not event.response:
                return ResponseDone(response)
        return event


async def checked_calls(
    rt: Runtime, guards: Guards, calls: Sequence[ToolCall]
) -> tuple[list[ToolCall], dict[int, ToolAnswer]]:
    """The calls the tool guards let run (rewritten as they say) and answers for refused ones."""
    allowed: list[ToolCall] = []
    refused: dict[int, ToolAnswer] = {}
    for i, call in enumerate(calls):
        round = await ask(
            rt, GuardRound(guards.tools, "tool", call, guards.timeout, False, rt.meters)
        )
        await settle(rt, "tool", round)
        blocked = round.blocked
        if blocked is None:
            checked = round.value(call)
            if checked.id != call.id:
                guard = next(r["guard"] for r in reversed(round.records) if "value" in r)
                raise GuardError(guard, "tool", "a rewritten tool call must keep the call's id")
            allowed.append(checked)
            continue
        if not guards.refuse_tools:
            raise tripped(rt, "tool", blocked, call)
        text = (
            f"the call to tool {call.name!r} was blocked by guard {blocked['guard']!r}: "
            f"{blocked['reason'] or 'not allowed'}"
        )
        refused[i] = (call, Message.tool(call.id, text, name=call.name, is_error=True), 0.0)
    return allowed, refused


def merged(
    calls: Sequence[ToolCall], answers: Sequence[ToolAnswer], refused: dict[int, ToolAnswer]
) -> list[ToolAnswer]:
    """The answers to `calls` in call order: refused ones in their places, the rest as run."""
    ran = iter(answers)
    return [refused[i] if i in refused else next(ran) for i in range(len(calls))]


def result_outcome(guards: Guards, answer: ToolAnswer, records: list[Record]) -> ToolAnswer:
    """`answer` as its result round's `records` leave it: rewritten, or withheld with an
    error the model reads, carrying what the guards spent on models.

    Plain work on data, so that it can be done where the tool ran (a Temporal
    activity) and the raw result never leaves it.
    """
    call, message, duration = answer
    round = Round(records, False)
    blocked = round.blocked
    if blocked is not None:
        text = (
            f"the result of tool {call.name!r} was withheld by guard {blocked['guard']!r}: "
            f"{blocked['reason'] or 'not allowed'}"
        )
        message = Message.tool(call.id, text, name=call.name, is_error=True)
    else:
        message = round.value(message)
    spent = round.spent
    if spent is not None:  # the caller's node adds a tool message's usage to the context
        message = attrs.evolve(message, usage=_added(message.usage, spent))
    return call, message, duration


class ResultsChecked:
    """A step's tool calls made by `run`, each answer shown to the result guards before it
    is returned (so before a journal records it): what the history and the record get.

    The round is not recorded apart: the answer it leaves is, so a resumed or
    replayed step is served the checked answer without asking again. A
    journal that makes the calls elsewhere (Temporal's) checks each answer
    where its call is made (`result_outcome`) and reports the round here
    with `settled`.
    """

    __slots__ = ("_guards", "_rt", "_run")

    def __init__(
        self,
        rt: Runtime,
        guards: Guards,
        run: Callable[[Sequence[ToolCall]], Awaitable[list[ToolAnswer]]],
    ) -> None:
        self._rt = rt
        self._guards = guards
        self._run = run

    @property
    def guards(self) -> Guards:
        return self._guards

    async def __call__(self, pending: Sequence[ToolCall]) -> list[ToolAnswer]:
        rt, guards = self._rt, self._guards
        checked: list[ToolAnswer] = []
        for answer in await self._run(pending):
            records = await decide(
                guards.results, "result", answer[1], guards.timeout, meters=rt.meters
            )
            checked.append(await self.settled(result_outcome(guards, answer, records), records))
        return checked

    async def settled(self, answer: ToolAnswer, records: list[Record]) -> ToolAnswer:
        """Report a result round (events, usage charged) for `answer`, as its records left
        it; raises when one blocked and blocked results are not refused but raised."""
        rt = self._rt
        round = Round(records, False)
        for record in records:
            if record.get("usage") is not None:
                for meter in rt.meters:
                    meter.after(record["model"], record["usage"])
        await settle(rt, "result", round)
        blocked = round.blocked
        if blocked is not None and not self._guards.refuse_tools:
            raise tripped(rt, "result", blocked, answer[1])
        return answer
