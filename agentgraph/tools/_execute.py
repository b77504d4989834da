"""Carry out a model's tool calls: authorized, validated, bounded, and answered in call order.

Every way a call can go wrong (a tool that was not given, arguments that are
not JSON or do not validate, a tool that raises or runs out of time, a result
that cannot be encoded) becomes a tool message with `is_error=True` that tells
the model what happened, so it can recover. Every message is bounded
(`max_result_chars`), so no tool can hand the model more than it can read.
A tool that returns an `Image`, or a list of strings and `Image`s, answers
with those parts; the bound cuts their text, never an image.
Cancellation is never caught.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

import anyio
import anyio.to_thread
import attrs
import orjson

from .._core._context import AgentContext
from .._core._effect_kinds import ToolCallsEffect
from .._core._effects import PROVIDED
from .._core._errors import CheckpointError, NodeFailed, RunError, ToolError
from .._core._journal import ToolAnswer
from .._core._json import to_data
from .._core._runtime import Interrupt, Runtime
from .._util._clip import MAX_RESULT_CHARS, check_max_result_chars, clip_result
from .._util._tool_effect import calling
from ..llm._content import Document, Image, Part
from ..llm._messages import RAW_ARGUMENTS, Message, ToolCall, join_text
from ..structured._shapes import Invalid, show
from ._tool import Tool, ToolResult, ToolSite

__all__ = ("ToolFailure", "ToolOutcome", "execute_calls", "run_tool_calls")

ToolFailure = Literal["unknown_tool", "bad_arguments", "raised", "timeout", "bad_result"]
"""Why a call did not produce a result: the kinds a trace can count."""

_PENDING: Any = object()


@attrs.frozen
class ToolOutcome:
    """What happened to one tool call, for the conversation and for the trace.

    Attributes:
        call: the call as the model made it.
        message: the tool message that answers it (`is_error` when `error` is set).
        duration: seconds from the call's start (after waiting for a free slot)
            to its answer.
        error: why the call failed, or None when the tool returned.
        exception: what the tool raised, when it raised (kept out of equality).
    """

    call: ToolCall
    message: Message
    duration: float
    error: ToolFailure | None = None
    exception: Exception | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.error is None


def _quote(name: str) -> str:
    return orjson.dumps(name[:80]).decode()


class _Calls:
    """The tools one batch of calls may use, and how to run one call."""

    def __init__(
        self,
        tools: Sequence[Tool[..., Any]],
        timeout: float | None,
        context: Any,
        max_result_chars: int | None,
        runtime: Any = None,
    ) -> None:
        table: dict[str, Tool[..., Any]] = {}
        for item in tools:
            if table.setdefault(item.name, item) is not item:
                raise ToolError(f"two different tools are named {item.name!r}")
            if item.context_param is not None and not isinstance(context, AgentContext):
                raise ToolError(
                    f"tool {item.name!r} takes the agent context: pass context= to run it"
                )
            if item.site_param is not None and runtime is None:
                raise ToolError(
                    f"tool {item.name!r} runs steps of a run: call it from a tool_use node"
                )
        self.table = table
        self.timeout = timeout
        self.context = context
        self.max_result_chars = max_result_chars
        self.runtime = runtime

    async def run(self, call: ToolCall) -> ToolOutcome:
        try:
            outcome = await self._run(call)
        except Interrupt as signal:  # a tool asked the run something: say which call asked
            if signal.tool_call is None:
                signal.tool_call = call
            raise
        item = self.table.get(call.name)
        limit = self.max_result_chars
        if item is not None and item.max_result_chars is not None:
            limit = item.max_result_chars
        message = outcome.message
        clipped = clip_result(message.content, limit)
        if clipped is message.content:
            return outcome
        if message.parts:  # images do not count against the bound: only the text is cut
            return attrs.evolve(outcome, message=_clip_parts(message, clipped))
        return attrs.evolve(outcome, message=attrs.evolve(message, content=clipped))

    async def _run(self, call: ToolCall) -> ToolOutcome:
        start = time.perf_counter()
        item = self.table.get(call.name)
        if item is None:
            return _failed(call, start, "unknown_tool", self._refusal(call.name))
        if RAW_ARGUMENTS in call.arguments:
            raw = show(str(call.arguments[RAW_ARGUMENTS]))
            text = (
                f"the arguments for tool {_quote(item.name)} are not valid JSON ({raw}); "
                "call it again with a JSON object that matches its parameters"
            )
            return _failed(call, start, "bad_arguments", text)
        kwargs = item.arguments.check(call.arguments, False)
        if isinstance(kwargs, Invalid):
            return _failed(call, start, "bad_arguments", _invalid(item, kwargs.render()))
        if item.single is not None:  # the validated object is the one argument
            kwargs = {item.single: kwargs}
        if item.context_param is not None:
            kwargs[item.context_param] = self.context
        if item.site_param is not None:
            kwargs[item.site_param] = ToolSite(self.runtime, call)
        limit = item.timeout if item.timeout is not None else self.timeout
        value = _PENDING
        try:
            with anyio.move_on_after(limit), calling(item.name, call.id):
                value = await _invoke(item, kwargs)
        except Exception as exc:
            if item.site_param is not None and _stops_run(exc):
                raise
            text = f"tool {_quote(item.name)} failed: {type(exc).__name__}: {_text(exc)}"
            return _failed(call, start, "raised", text, exc)
        if value is _PENDING:
            text = f"tool {_quote(item.name)} did not finish within {limit:g}s and was abandoned"
            return _failed(call, start, "timeout", text)
        return _answered(call, start, item, value)

    def _refusal(self, name: str) -> str:
        allowed = ", ".join(_quote(n) for n in self.table)
        offer = f"the tools you may call are: {allowed}" if allowed else "no tools are available"
        return f"there is no tool named {_quote(name)} here; {offer}"


def _stops_run(exc: Exception) -> bool:
    """Whether an error from steps a tool ran ends the whole run (a limit, the store).

    A step that failed is the tool's failure, for the model to read; the run's
    step cap, usage limits, cancellation and a failing store are the run's.
    """
    return isinstance(exc, CheckpointError) or (
        isinstance(exc, RunError) and not isinstance(exc, NodeFailed)
    )


async def _invoke(item: Tool[..., Any], kwargs: Mapping[str, Any]) -> Any:
    if item.is_async:
        return await item.fn(**kwargs)
    # Sync tools run in a worker thread; on timeout or cancellation the thread is
    # left to finish on its own, since threads cannot be interrupted.
    value = await anyio.to_thread.run_sync(
        functools.partial(item.fn, **kwargs), abandon_on_cancel=True
    )
    if inspect.isawaitable(value):  # a sync wrapper around a coroutine function
        value = await value
    return value


def _clip_parts(message: Message, clipped: str) -> Message:
    """`message` with its text cut to `clipped`, in place of its first text part; images kept."""
    parts: list[Part] = []
    for part in message.parts:
        if not isinstance(part, str):
            parts.append(part)
        elif clipped:
            parts.append(clipped)
            clipped = ""
    return attrs.evolve(message, content=join_text(parts), parts=tuple(parts))


def _parts_of(value: Any) -> tuple[str | Image, ...] | Document | None:
    """A result's text and images, when it holds images; the document, when it holds one.

    A tool returns an image as an `Image`, or with text as a list of strings
    and `Image`s. A list of strings only is data like any other (JSON).
    """
    if isinstance(value, Image | Document):
        return value if isinstance(value, Document) else (value,)
    if not isinstance(value, list | tuple) or not value:
        return None
    if not all(isinstance(part, str | Image | Document) for part in value):
        return None
    for part in value:
        if isinstance(part, Document):
            return part
    if all(isinstance(part, str) for part in value):
        return None
    return tuple(value)


def _answered(call: ToolCall, start: float, item: Tool[..., Any], value: Any) -> ToolOutcome:
    usage = None
    if isinstance(value, ToolResult):
        value, usage = value.value, value.usage
    parts = _parts_of(value)
    if isinstance(parts, Document):
        text = (
            f"tool {_quote(item.name)} returned a document ({parts.name}); a tool result "
            "carries text and images only"
        )
        return _failed(call, start, "bad_result", text)
    if parts is not None:
        message = Message.tool(call.id, *parts, name=call.name)
    elif isinstance(value, str):
        message = Message.tool(call.id, value, name=call.name)
    else:
        try:
            content = orjson.dumps(to_data(value)).decode()
        except TypeError as exc:  # ContextEncodingError and orjson's errors are TypeErrors
            text = (
                f"tool {_quote(item.name)} returned a {type(value).__name__} that cannot be "
                f"sent as JSON: {_text(exc)}"
            )
            return _failed(call, start, "bad_result", text, exc)
        except Exception as exc:  # e.g. RecursionError on a value that contains itself
            text = (
                f"tool {_quote(item.name)} returned a {type(value).__name__} that could not be "
                f"encoded: {type(exc).__name__}: {_text(exc)}"
            )
            return _failed(call, start, "bad_result", text, exc)
        message = Message.tool(call.id, content, name=call.name)
    if usage is not None:
        message = attrs.evolve(message, usage=usage)
    return ToolOutcome(call, message, time.perf_counter() - start)


def _invalid(item: Tool[..., Any], problems: Sequence[str]) -> str:
    """What the model reads about arguments that do not validate: the tool's words, if any."""
    if item.on_invalid is not None:
        try:
            text = item.on_invalid(tuple(problems))
            if isinstance(text, str) and text:
                return text
        except Exception:  # a failing hook falls back to the standard message
            pass
    lines = "\n".join(f"- {e}" for e in problems)
    return (
        f"invalid arguments for tool {_quote(item.name)}:\n{lines}\n"
        "Fix these and call the tool again."
    )


def _text(exc: BaseException) -> str:
    """`str(exc)`, or a placeholder when the exception cannot even print itself."""
    try:
        return str(exc)
    except Exception:
        return f"<unprintable {type(exc).__name__}>"


def _failed(
    call: ToolCall,
    start: float,
    error: ToolFailure,
    text: str,
    exception: Exception | None = None,
) -> ToolOutcome:
    message = Message.tool(call.id, text, name=call.name, is_error=True)
    return ToolOutcome(call, message, time.perf_counter() - start, error, exception)


async def run_tool_calls(
    tools: Sequence[Tool[..., Any]],
    calls: Sequence[ToolCall],
    *,
    limit: int = 8,
    timeout: float | None = None,  # noqa: ASYNC109 - a per-call limit, not one for the batch
    context: AgentContext[Any] | None = None,
    max_result_chars: int | None = MAX_RESULT_CHARS,
    runtime: Any = None,
) -> list[ToolOutcome]:
    """Run `calls` with `tools` only, at most `limit` at a time; outcomes in call order.

    Args:
        tools: the tools the calls may use; a call to any other name is refused.
        calls: the model's tool calls.
        limit: how many calls may run at once.
        timeout: seconds a call may take, for tools without a timeout of their own.
        context: the agent context, for tools that take one.
        max_result_chars: the most characters of one result (or error) the
            model reads, for tools without a bound of their own; a longer one
            keeps its start and end with a note saying what was cut between.
            None: no bound.
        runtime: the runtime of the step making the calls, for tools that
            take a `ToolSite` (`Runtime.call_tools` passes it).

    Raises:
        ToolError: two tools share a name, or a tool needs `context` and none was given.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    check_max_result_chars("run_tool_calls", max_result_chars)
    runner = _Calls(tools, timeout, context, max_result_chars, runtime)
    if len(calls) == 1:
        return [await runner.run(calls[0])]
    slots: list[ToolOutcome | None] = [None] * len(calls)
    limiter = anyio.CapacityLimiter(limit)
    asked: dict[int, Interrupt] = {}
    stopped: dict[int, Exception] = {}

    async def one(index: int, call: ToolCall) -> None:
        async with limiter:
            try:
                slots[index] = await runner.run(call)
            except Interrupt as stop:
                # A tool that ran steps asked a question: the others go on, so that
                # the question surfaced is always the first call's.
                asked[index] = stop
            except Exception as error:
                # Only what ends the run gets out of a call (a limit, the store):
                # the other calls stop with it, and the run sees the error itself,
                # with its context, not a group of it.
                stopped[index] = error
                group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(one, index, call)
    if stopped:  # the run ends here; a question asked beside it is asked again on resume
        raise stopped[min(stopped)]
    if asked:
        raise asked[min(asked)]
    # The task group only ends normally once every call has filled its slot.
    return cast("list[ToolOutcome]", slots)


async def execute_calls(
    tools: Sequence[Tool[..., Any]],
    calls: Sequence[ToolCall],
    *,
    limit: int = 8,
    timeout: float | None = None,  # noqa: ASYNC109 - a per-call limit, not one for the batch
    context: AgentContext[Any] | None = None,
    max_result_chars: int | None = MAX_RESULT_CHARS,
) -> list[Message]:
    """Run `calls` like `run_tool_calls` and return just the tool messages, in call order."""
    outcomes = await run_tool_calls(
        tools,
        calls,
        limit=limit,
        timeout=timeout,
        context=context,
        max_result_chars=max_result_chars,
    )
    return [outcome.message for outcome in outcomes]


async def _perform(runtime: Runtime, effect: ToolCallsEffect) -> list[ToolAnswer]:
    """The call at the bottom of a run's stack for tool calls (`ToolCallsEffect`)."""
    outcomes = await run_tool_calls(
        cast("Sequence[Tool[..., Any]]", effect.tools),
        effect.calls,
        limit=effect.limit,
        timeout=effect.timeout,
        context=effect.context,
        max_result_chars=effect.max_result_chars,
        runtime=runtime,
    )
    return [(o.call, o.message, o.duration) for o in outcomes]


PROVIDED.tool_calls = _perform
