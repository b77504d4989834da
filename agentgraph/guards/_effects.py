"""Guarded effects: a model call or stream checked on its way in and out, tool calls before
they run, tool results before they enter the history.

`Runtime.call_model`, `stream_model` and `call_tools` come here only in a run
whose runner was given guards, so a run without guards pays one attribute test
per effect. Input guards that rewrite run before the call; the others run
beside it (`Guards.beside`) and one that blocks cancels the call in flight. A
cancelled call is never recorded as a response: it counts as one request whose
tokens the provider had not reported (`Usage(requests=1, unmetered=1)`, token
counts arrive with a response's end), reported as partial on the error and the
event, and charged to the run's usage limits.

What the guards of a model call spend themselves (a judge's calls) is added to
the usage of the answer its node gets, so it counts in the context's usage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from time import perf_counter
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from anyio.abc import TaskStatus

from .._effects import _requested, model_call, model_stream, responded
from .._errors_guards import GuardError
from .._gate import PARTIAL, _Watched, gated_request
from .._journal import ToolAnswer
from ..llm._messages import Message, ToolCall, Usage
from ..llm._model import ChatModel, ChatRequest, ChatResponse, ResponseDone, StreamEvent
from ._check import GuardRound, Record, Round, ask, decide, settle, tripped
from ._guard import Guard, Guards, Stage

if TYPE_CHECKING:
    from .._runtime import Runtime

__all__ = (
    "PARTIAL",
    "ResultsChecked",
    "checked_calls",
    "guarded_model",
    "guarded_stream",
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


async def _send(rt: Runtime, model: ChatModel, name: str, request: ChatRequest) -> ChatResponse:
    """One request to the model, admitted by the run's gate; settled however it ends."""
    gate = rt._run.gate
    if gate is None:
        return await model.request(request)
    return await gated_request(gate, model, name, request)


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


async def _answered(
    rt: Runtime,
    name: str,
    response: ChatResponse,
    started: float,
    output: Sequence[Guard],
    spent: Usage | None,
) -> ChatResponse:
    """The answer as its node gets it: past the output guards, with what every guard of the
    call spent added to its usage."""
    await responded(rt, name, response, started)
    guards = rt._run.guards
    assert guards is not None
    message = response.message
    if output:
        message, more = await output_checked(rt, output, message, guards.timeout)
        spent = _added(spent, more)
    if message is not response.message:
        response = attrs.evolve(response, message=message)
    if spent is not None:
        response = attrs.evolve(response, usage=response.usage + spent)
    return response


async def _opened(
    rt: Runtime, model: ChatModel, request: ChatRequest
) -> tuple[Guards, str, ChatRequest, tuple[Guard, ...], Usage | None]:
    """A call's start: its limits checked, the input guards before it asked, the request
    reported; the guards, the model's name, the request to send, the guards beside it and
    what the guards asked so far spent."""
    guards = rt._run.guards
    assert guards is not None
    name = request.model or model.name
    for meter in rt.meters:
        meter.before(name)
    before, beside = _split(guards)
    request, spent = await _checked(rt, "input", before, request, guards.timeout)
    if rt._run.emit is not None:
        await rt._run.emit(_requested(rt, model, name, request))
    return guards, name, request, beside, spent


def _remote(rt: Runtime) -> bool:
    """Whether the run's effects are made elsewhere (a Temporal activity), not here."""
    return bool(getattr(rt.journal, "remote", False))


async def guarded_model(rt: Runtime, model: ChatModel, request: ChatRequest) -> ChatResponse:
    """`Runtime.call_model` in a run with guards."""
    guards, name, request, beside, spent = await _opened(rt, model, request)
    started = perf_counter()
    journal = rt.journal
    if beside:
        state = _Beside()
        response: ChatResponse | None = None
        key, recorded = "", None
        async with anyio.create_task_group() as group:
            served = await group.start(
                _beside, rt, beside, request, guards.timeout, group.cancel_scope, state
            )
            if not served:
                if journal is not None:
                    key, recorded = journal.recorded_model(rt, request)
                try:
                    if recorded is None and journal is not None and _remote(rt):
                        state.in_flight = True  # made elsewhere, and not recorded here
                        response = await journal.model(
                            rt, request, model_call(rt, model, name, request)
                        )
                        state.in_flight = False
                        recorded = response
                    elif recorded is None:
                        state.in_flight = True
                        response = await _send(rt, model, name, request)
                        state.in_flight = False
                        state.spent = response.usage
                    else:
                        response = recorded
                except Exception as exc:
                    state.error = exc
                    group.cancel_scope.cancel()
        await _blocked(rt, state, name, request)
        assert state.round is not None
        spent = _added(spent, state.round.spent)
        if response is None:  # the round came from the record: the call goes as usual
            call = model_call(rt, model, name, request)
            response = await (call() if journal is None else journal.model(rt, request, call))
        elif journal is not None and recorded is None:
            journal.record_model(rt, key, request, response)
    else:
        call = model_call(rt, model, name, request)
        response = await (call() if journal is None else journal.model(rt, request, call))
    return await _answered(rt, name, response, started, guards.output, spent)


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


@asynccontextmanager
async def guarded_stream(
    rt: Runtime, model: ChatModel, request: ChatRequest
) -> AsyncIterator[AsyncIterator[StreamEvent]]:
    """`Runtime.stream_model` in a run with guards."""
    guards, name, request, beside, spent = await _opened(rt, model, request)
    started = perf_counter()
    journal = rt.journal
    tell = None if rt._run.emit is None else rt._streamed
    state = _Beside() if beside else None
    key, recorded = "", None

    async def done(response: ChatResponse) -> ChatResponse:
        if state is not None and not state.reported:
            state.in_flight = False
            state.spent = response.usage
            await state.decided.wait()
            await _blocked(rt, state, name, request)
        if journal is not None and recorded is None:
            journal.record_model(rt, key, request, response)
        used = spent if state is None or state.round is None else _added(spent, state.round.spent)
        return await _answered(rt, name, response, started, guards.output, used)

    if state is not None:
        failure: Exception | None = None
        async with anyio.create_task_group() as group:
            served = await group.start(
                _beside, rt, beside, request, guards.timeout, group.cancel_scope, state
            )
            if not served:
                if journal is not None:
                    key, recorded = journal.recorded_model(rt, request)
                try:
                    async with model_stream(rt, model, name, request, recorded) as events:
                        state.in_flight = recorded is None
                        yield _Checked(_Watched(events, tell), done)
                except Exception as exc:  # the reader's or the call's: raised unwrapped
                    failure = exc
                    group.cancel_scope.cancel()
        if failure is not None:
            raise failure
        if not served:
            if not state.reported:
                await _blocked(rt, state, name, request)
            return
        await _blocked(rt, state, name, request)  # a round from the record: before the call
    if journal is not None:
        key, recorded = journal.recorded_model(rt, request)
    async with model_stream(rt, model, name, request, recorded) as events:
        yield _Checked(_Watched(events, tell), done)


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
