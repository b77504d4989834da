"""Model calls and tool calls through the journal: recorded once, served on resume and replay.

A model request is stored against the step's input context: the messages it
shares with that context's history are stored as a count, so a request costs
the record only what it adds to the conversation. A tool call that is not safe
to retry records its intent durably before it runs; finding an intent without a
result on resume means the call was in flight when the run stopped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from .._core._context import History
from .._core._errors import ResumeError
from .._core._journal import ToolAnswer, ToolRunner
from .._core._json import NO_TYPES, Types, from_data, to_data
from .._core._runtime import Interrupt
from .._util._tool_effect import tool_effects
from ..llm._messages import Message, ToolCall
from ..llm._model import ChatRequest, ChatResponse
from ._codec import (
    BlobPut,
    decode_message,
    diff_data,
    encode_call,
    encode_message,
    encode_messages,
)
from ._frames import state_of

if TYPE_CHECKING:
    from .._core._runtime import Runtime
    from ._journal import StoreJournal

__all__ = ("decode_request", "encode_request", "record_model", "recorded_model", "run_tools")


def _shared(messages: Sequence[Message], history: History) -> tuple[int, int]:
    """Where the request's messages start repeating `history`, and for how many messages."""
    if not history:
        return 0, 0
    first = history[0]
    for start in range(min(len(messages), 3)):  # after a system message or two
        if messages[start] is first:
            shared = 0
            for mine, sent in zip(history, messages[start:], strict=False):
                if sent is not mine:
                    break
                shared += 1
            return start, shared
    return 0, 0


def encode_request(
    request: ChatRequest, history: History, put: BlobPut | None = None
) -> dict[str, Any]:
    """`request` as data, its run of messages from `history` stored as a count."""
    messages = request.messages
    start, shared = _shared(messages, history)
    rest = attrs.evolve(request, messages=())
    after = start + shared
    return {
        "pre": encode_messages(messages[:start], "request.messages", put=put),
        "h": shared,
        "post": encode_messages(messages[after:], "request.messages", after, put),
        "rest": to_data(rest, tagged=True, where="request"),
    }


def decode_request(
    data: dict[str, Any],
    history: History,
    types: Types = NO_TYPES,
    blobs: Mapping[str, bytes] | None = None,
) -> ChatRequest:
    """The request `encode_request` stored, given the same history (`blobs`: its file bytes)."""
    files = blobs or {}
    shared = tuple(history[i] for i in range(min(data["h"], len(history))))
    messages = (
        *(decode_message(m, types, files) for m in data["pre"]),
        *shared,
        *(decode_message(m, types, files) for m in data["post"]),
    )
    rest: ChatRequest = from_data(data["rest"], types)
    return attrs.evolve(rest, messages=messages)


def recorded_model(
    journal: StoreJournal, rt: Runtime, request: ChatRequest
) -> tuple[str, ChatResponse | None]:
    """The key of this model call, and the response recorded for the same request there."""
    history = state_of(rt, journal.initial).input.history
    key = journal.key(rt, "model")
    found = journal.lookup(key, "model")
    if found is not None:
        data = orjson.loads(found)
        recorded = decode_request(data["request"], history, journal.types, journal.blobs)
        if recorded == request:
            response: ChatResponse = from_data(data["response"], journal.types)
            return key, response
        if journal.replaying:
            labels = ("recorded request", "replayed request")
            diff = diff_data(recorded, request, labels=labels)
            raise journal.diverged(rt, "the model request differs from the recorded one", diff)
    elif journal.replaying:
        raise journal.diverged(rt, f"the replay called the model ({key}); the record did not")
    return key, None


def record_model(
    journal: StoreJournal, rt: Runtime, key: str, request: ChatRequest, response: ChatResponse
) -> None:
    """Record `response` to `request` under `key` (see `recorded_model`)."""
    history = state_of(rt, journal.initial).input.history
    value = {
        "request": encode_request(request, history, journal.store.put_blob),
        "response": to_data(response, tagged=True, where="response"),
    }
    journal.record(key, "model", orjson.dumps(value))


async def run_tools(
    journal: StoreJournal,
    rt: Runtime,
    calls: Sequence[ToolCall],
    unsafe: frozenset[str],
    run: ToolRunner,
) -> list[ToolAnswer]:
    """Answer `calls`, running with `run` only those whose results were not recorded.

    Raises:
        ResumeError: a call to a tool that is not safe to retry was in flight
            when the run stopped (its intent is recorded, its result is not).
    """
    state = state_of(rt, journal.initial)
    keys = [journal.key(rt, f"tool {call.name} {call.id}") for call in calls]
    answers: list[ToolAnswer | None] = [None] * len(calls)
    pending: list[int] = []
    for i, (call, key) in enumerate(zip(calls, keys, strict=True)):
        done = journal.lookup(key, "result")
        if done is not None:
            data = orjson.loads(done)
            message = decode_message(data["m"], journal.types, journal.blobs)
            answers[i] = (call, message, data["d"])
        elif journal.replaying:
            raise journal.diverged(rt, f"tool call {_show(call)} was not in the record")
        else:
            pending.append(i)
    lost = [
        calls[i]
        for i in pending
        if calls[i].name in unsafe
        and journal.lookup(keys[i], "intent")
        and not journal.lookup(keys[i], "asked")
    ]
    if lost:
        listed = "; ".join(_show(call) for call in lost)
        raise ResumeError(
            f"tool calls not safe to retry were in flight when the run stopped: {listed}. "
            "Check what they did, then fork the run from an earlier step, or mark the "
            "tools retry_safe if running them twice is harmless",
            run_id=journal.run_id,
            context=state.input,
            step=state.index,
            path=rt.path,
        )
    risky = [i for i in pending if calls[i].name in unsafe]
    for i in risky:
        journal.record(
            keys[i], "intent", orjson.dumps({"call": encode_call(calls[i], "arguments")})
        )
    if risky:
        await journal.flush()  # the intent must be durable before the call can happen
    if pending:
        try:
            with tool_effects(_effect_ids(journal.run_id, [(calls[i], keys[i]) for i in pending])):
                outcomes = await run([calls[i] for i in pending])
        except Interrupt as signal:
            await _asked(journal, signal, [(calls[i], keys[i]) for i in risky])
            raise
        for i, (call, message, duration) in zip(pending, outcomes, strict=True):
            answers[i] = (call, message, duration)
            # A result's images go to the store's blobs, as a user message's do.
            encoded = encode_message(message, "result", journal.store.put_blob)
            data = {"m": encoded, "d": duration}
            journal.record(keys[i], "result", orjson.dumps(data))
    if risky:
        await journal.flush()
    return [a for a in answers if a is not None]


def _effect_ids(run_id: str, pending: list[tuple[ToolCall, str]]) -> dict[tuple[str, str], str]:
    """The effect id of each call a tool can ask for (`agentgraph.tools.effect_id`).

    The key already names the step, its attempt and the call; the run's id makes
    it unique in a store that several runs share. Two calls of one batch with the
    same name and id get none: a tool could not tell which id is its own.
    """
    ids: dict[tuple[str, str], str] = {}
    twice: set[tuple[str, str]] = set()
    for call, key in pending:
        name = (call.name, call.id)
        if name in ids:
            twice.add(name)
        ids[name] = f"{run_id}/{key}"
    return {name: effect for name, effect in ids.items() if name not in twice}


async def _asked(
    journal: StoreJournal, signal: Interrupt, risky: Sequence[tuple[ToolCall, str]]
) -> None:
    """Note that a call not safe to retry stopped the run with a question of its own.

    Such a call (an MCP server's question) is picked up again on resume from
    what it recorded, not sent anew, so finding it in flight is expected, not
    a `ResumeError`; the calls cancelled beside it stay in flight.
    """
    asking = signal.tool_call
    if asking is None:
        return
    for call, key in risky:
        if call.id == asking.id and call.name == asking.name:
            journal.record(key, "asked", b"true")
    await journal.flush()


def _show(call: ToolCall) -> str:
    arguments = orjson.dumps(to_data(call.arguments)).decode()
    return f"{call.name}({arguments}) [id {call.id}]"
