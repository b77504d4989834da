"""The rules a conversation must follow for a provider's wire to take it, and a repair.

`check_transcript` runs on every request just before its body is built, so
a conversation the provider would answer with a 400 is refused here, with
the rule and the message's position, before anything is sent.
`repair_transcript` is for histories from outside (a web client, another
agent, an imported session): it returns a conversation that passes, and
says what it changed.

Rules (`rule` names, shared by every wire unless said):

- `result-without-call`: a tool result answers a call of the assistant
  message it follows (only tool results between them).
- `duplicate-result`: each call is answered once.
- `missing-result`: every call is answered before the next user or
  assistant message, and before the conversation ends.
- `media-placement`: images and documents only in user messages, images
  only (no documents) in tool results.
- `one-call-per-turn` (GigaChat): one function call per assistant message.
- `thinking-first` (Anthropic, thinking on): the last assistant message, if it
  calls tools, carries its thinking blocks.
- `no-messages` (Anthropic): something besides system text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

import attrs

from .._core._errors_provider import InvalidTranscript
from ._content import Document
from ._messages import Message

__all__ = ("TranscriptRepair", "Wire", "check_transcript", "repair_transcript")

Wire: TypeAlias = Literal["openai", "responses", "anthropic", "ollama", "gigachat"]
"""A provider's wire format: OpenAI chat completions, OpenAI Responses, Anthropic
Messages, Ollama chat, GigaChat chat."""

_WIRES = frozenset(("openai", "responses", "anthropic", "ollama", "gigachat"))
_THINKING_KEY = "anthropic.thinking"


def _media_problem(message: Message) -> str | None:
    if message.role == "tool":
        if any(isinstance(part, Document) for part in message.parts):
            return "a tool result carries text and images, not documents"
        return None
    if message.role != "user":
        return f"only user and tool messages carry images and documents, not {message.role}"
    return None


def check_transcript(
    messages: Sequence[Message], *, wire: Wire, think: bool = False, provider: str = ""
) -> None:
    """Refuse `messages` if `wire` would: see the module's rules.

    Args:
        messages: the conversation, system messages included.
        wire: the wire format it is about to be sent in.
        think: whether the request turns extended thinking on (Anthropic's rule).
        provider: the provider's name, for the error.

    Raises:
        InvalidTranscript: naming the first rule broken and the message's position.
    """
    if wire not in _WIRES:
        raise ValueError(f"wire is one of {sorted(_WIRES)}, not {wire!r}")
    found = _first_problem(messages, wire, think)
    if found is not None:
        rule, index, detail = found
        raise InvalidTranscript(rule, index, detail, wire=wire, provider=provider)


def _first_problem(  # noqa: C901 - one pass over the messages keeps the check cheap
    messages: Sequence[Message], wire: str, think: bool
) -> tuple[str, int, str] | None:
    open_calls: dict[str, int] = {}  # call id -> index of the assistant message that made it
    answered: set[str] = set()
    last_assistant = -1
    spoken = False
    one_call = wire == "gigachat"
    for i, message in enumerate(messages):
        role = message.role
        if message.parts:
            problem = _media_problem(message)
            if problem is not None:
                return "media-placement", i, problem
        if role == "tool":
            spoken = True
            call_id = message.tool_call_id
            if call_id is None:
                return "result-without-call", i, "a tool message needs the tool_call_id it answers"
            if call_id not in open_calls:
                if call_id in answered:
                    return "duplicate-result", i, f"tool call {call_id!r} is already answered"
                return (
                    "result-without-call",
                    i,
                    f"the tool result answers call {call_id!r}, which the assistant message "
                    "before it did not make",
                )
            del open_calls[call_id]
            answered.add(call_id)
            continue
        if role == "system":
            continue
        spoken = True
        if open_calls:
            pending = sorted(open_calls)
            return (
                "missing-result",
                i,
                f"a {role} message comes before the results of tool calls {pending}",
            )
        if role == "assistant":
            last_assistant = i
            answered.clear()
            calls = message.tool_calls
            if calls:
                if one_call and len(calls) > 1:
                    return (
                        "one-call-per-turn",
                        i,
                        f"GigaChat takes one function call per assistant turn, not {len(calls)}",
                    )
                for call in calls:
                    open_calls[call.id] = i
        else:
            answered.clear()
    if open_calls:
        index = next(iter(open_calls.values()))
        return (
            "missing-result",
            index,
            f"tool calls {sorted(open_calls)} have no results at the end of the conversation",
        )
    if wire == "anthropic":
        if not spoken:
            return "no-messages", 0, "the conversation holds only system text"
        final = messages[last_assistant] if last_assistant >= 0 else None
        if (
            think
            and final is not None
            and final.tool_calls
            and not final.provider_data.get(_THINKING_KEY)
        ):
            return (
                "thinking-first",
                last_assistant,
                "with thinking on, the last assistant message, when it calls tools, must "
                "start with its thinking block, and this one has none (made by another "
                "model or with thinking off)",
            )
    return None


@attrs.frozen
class TranscriptRepair:
    """One change `repair_transcript` made.

    Attributes:
        index: the message's position in the conversation given.
        action: `"added-result"`, `"dropped-result"` or `"dropped-call"`.
        detail: what was changed, in words.
    """

    index: int
    action: str
    detail: str


NOT_COMPLETED = "the tool call was not completed: no result was recorded"
"""The text of the error result `repair_transcript` records for an unanswered call."""


def repair_transcript(
    messages: Sequence[Message], *, wire: Wire
) -> tuple[tuple[Message, ...], tuple[TranscriptRepair, ...]]:
    """A conversation `wire` takes, made from `messages`, and the list of what changed.

    For histories from outside (a web client, another agent, an imported
    session); agentgraph never repairs silently. A call left without a result
    gets an error result saying it was not completed; a result without its
    call, or a second result for one call, is dropped; GigaChat's extra calls
    in one message are dropped with their results. Thinking blocks cannot be
    made up, so `thinking-first` is not repaired: turn thinking off for that
    request, or start a new turn.

    Raises:
        InvalidTranscript: a rule that cannot be repaired (`media-placement`,
            `no-messages`).
    """
    if wire not in _WIRES:
        raise ValueError(f"wire is one of {sorted(_WIRES)}, not {wire!r}")
    out: list[Message] = []
    changes: list[TranscriptRepair] = []
    open_calls: dict[str, tuple[int, str]] = {}  # call id -> (position given, tool name)
    answered: set[str] = set()
    dropped: set[str] = set()

    def close(at: int) -> None:
        for call_id, (made, name) in open_calls.items():
            out.append(Message.tool(call_id, NOT_COMPLETED, name=name, is_error=True))
            changes.append(
                TranscriptRepair(made, "added-result", f"call {call_id!r} ({name}) had no result")
            )
        open_calls.clear()

    for i, message in enumerate(messages):
        if message.role == "tool":
            call_id = message.tool_call_id
            if call_id is not None and call_id in open_calls:
                del open_calls[call_id]
                answered.add(call_id)
                out.append(message)
                continue
            why = (
                "a second result for its call"
                if call_id in answered
                else "its call was dropped"
                if call_id in dropped
                else "no call before it made it"
            )
            changes.append(TranscriptRepair(i, "dropped-result", f"result for {call_id!r}: {why}"))
            continue
        if message.role == "system":
            out.append(message)
            continue
        close(i)
        answered.clear()
        if message.role == "assistant" and message.tool_calls:
            calls = message.tool_calls
            if wire == "gigachat" and len(calls) > 1:
                for call in calls[1:]:
                    dropped.add(call.id)
                    changes.append(
                        TranscriptRepair(
                            i, "dropped-call", f"call {call.id!r} ({call.name}): one per turn"
                        )
                    )
                message = attrs.evolve(message, tool_calls=calls[:1])
                calls = calls[:1]
            for call in calls:
                open_calls[call.id] = (i, call.name)
        out.append(message)
    close(len(messages))
    repaired = tuple(out)
    check_transcript(repaired, wire=wire)
    return repaired, tuple(changes)
