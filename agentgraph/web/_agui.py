"""Step events as AG-UI events, and an AG-UI run request as a run's first context.

AG-UI (the Agent-User Interaction protocol) is what agent front-ends speak:
a run is a stream of typed events (run, step, text message, tool call,
state; a team's handoff is a `CUSTOM` event named `agentgraph.handoff`, and
a node's `Runtime.emit_custom` a `CUSTOM` event of the name it gives).
The event models come from the official `ag-ui-protocol` package; the events
of every step are built directly as the JSON those models serialize to (a
test holds the two equal), since a pydantic model per event cost several
times the step itself. Everything sent passes the run's `Redactor` first;
streamed text is sent a word behind, so a secret that arrives in pieces is
masked whole.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

import orjson
from ag_ui.core import (
    BaseEvent,
    Event,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
)
from pydantic import TypeAdapter

from .._core._context import AgentContext
from .._core._errors import GraphCancelled, Interrupted, InvalidTranscript, RunInputError
from .._core._events import (
    CustomEvent,
    HandedOff,
    ModelResponded,
    ModelStreamed,
    NodeFailedEvent,
    NodeFinished,
    NodeStarted,
    RunFinished,
    RunStarted,
    ToolFinished,
)
from .._util._redact import Redactor
from ..llm._messages import Message, ToolCall
from ..llm._transcript import check_transcript, repair_transcript
from ..tracing._records import plain
from ._state import StateView

__all__ = ("HANDOFF", "AguiTranslator", "context_from_input", "step_name")

HANDOFF = "agentgraph.handoff"
"""The name of the `CUSTOM` event a team's handoff is sent as (`agentgraph.teams`)."""

_SPACE = re.compile(r"\s")
_MODELS: TypeAdapter[Any] = TypeAdapter(Event)

Data = dict[str, Any]
"""One AG-UI event as JSON-ready data: what its model dumps to (by alias, in JSON mode)."""


def _dumped(event: BaseEvent) -> Data:
    data: Data = event.model_dump(mode="json", by_alias=True)
    return data


def step_name(path: Sequence[str]) -> str:
    """The AG-UI step name of a node: its path below the root graph (`sub/node`)."""
    return "/".join(path[1:]) or (path[0] if path else "")


class _Text:
    """One assistant message being streamed: what was received and what was sent."""

    __slots__ = ("id", "received", "sent")

    def __init__(self, message_id: str) -> None:
        self.id = message_id
        self.received = ""
        self.sent = ""


class AguiTranslator:
    """Turns one run's step events into AG-UI events, redacted.

    One translator per AG-UI run (`thread_id`, `run_id`); call it with each
    step event in order and send what it returns: `data(event)` gives the
    events as JSON-ready data (what the server sends), calling the
    translator gives them as the protocol's pydantic models.
    """

    def __init__(self, *, thread_id: str, run_id: str, redactor: Redactor) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self._redactor = redactor
        self._ids = itertools.count(1)
        self._state = StateView(redactor)
        self._steps: dict[int, str] = {}
        self._texts: dict[int, _Text] = {}

    def __call__(self, event: Any) -> list[BaseEvent]:
        return [_MODELS.validate_python(item) for item in self.data(event)]

    def data(self, event: Any) -> list[Data]:
        """The AG-UI events for step event `event`, as JSON-ready data (maybe none)."""
        handler = _HANDLERS.get(type(event))
        return [] if handler is None else handler(self, event)

    # -- helpers ---------------------------------------------------------------------------
    def _clean(self, value: Any, field: str) -> Any:
        """`value` as plain JSON data, redacted like a trace record's `field`."""
        return self._redactor.record({field: plain(value)})[field]

    def _new_id(self, kind: str) -> str:
        return f"{self.run_id}-{kind}{next(self._ids)}"

    def close(self) -> list[BaseEvent]:
        """End every message and step still open (a run that stopped midway)."""
        return [_MODELS.validate_python(item) for item in self._closing()]

    def _closing(self) -> list[Data]:
        out: list[Data] = []
        for index in list(self._texts):
            out.extend(self._end_text(index, None))
        for index in sorted(self._steps, reverse=True):
            out.append({"type": "STEP_FINISHED", "stepName": self._steps.pop(index)})
        return out

    def _end_text(self, index: int, final: str | None) -> list[Data]:
        text = self._texts.pop(index)
        out: list[Data] = []
        masked = self._redactor.text(final if final is not None else text.received, "text")
        if masked.startswith(text.sent) and len(masked) > len(text.sent):
            delta = masked[len(text.sent) :]
            out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": text.id, "delta": delta})
        out.append({"type": "TEXT_MESSAGE_END", "messageId": text.id})
        return out

    # -- one handler per event kind ----------------------------------------------------------
    def _run_started(self, event: RunStarted) -> list[Data]:
        snapshot = self._state.start(event.context.state)
        return [
            {"type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id},
            {"type": "STATE_SNAPSHOT", "snapshot": snapshot},
        ]

    def _node_started(self, event: NodeStarted) -> list[Data]:
        name = step_name(event.path)
        self._steps[event.index] = name
        return [{"type": "STEP_STARTED", "stepName": name}]

    def _node_finished(self, event: NodeFinished) -> list[Data]:
        out: list[Data] = []
        state = event.context.state
        if state is not self._state.seen:  # most steps pass the state on untouched
            patch = self._state.change(state)
            if patch:
                out.append({"type": "STATE_DELTA", "delta": patch})
        name = self._steps.pop(event.step.index, None)
        if name is not None:
            out.append({"type": "STEP_FINISHED", "stepName": name})
        return out

    def _node_failed(self, event: NodeFailedEvent) -> list[Data]:
        out = self._end_text(event.index, None) if event.index in self._texts else []
        name = self._steps.pop(event.index, None)
        if name is not None:
            out.append({"type": "STEP_FINISHED", "stepName": name})
        return out

    def _streamed(self, event: ModelStreamed) -> list[Data]:
        out: list[Data] = []
        text = self._texts.get(event.index)
        if text is None:
            text = self._texts[event.index] = _Text(self._new_id("m"))
            out.append({"type": "TEXT_MESSAGE_START", "messageId": text.id, "role": "assistant"})
        text.received += event.text
        # Send up to the last whitespace only: the word still arriving may be part
        # of a secret that the redactor can recognise only once it is whole.
        masked = self._redactor.text(text.received, "text")
        cut = max((m.start() for m in _SPACE.finditer(masked)), default=-1)
        ready = masked[: cut + 1]
        if len(ready) > len(text.sent) and ready.startswith(text.sent):
            delta = ready[len(text.sent) :]
            out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": text.id, "delta": delta})
            text.sent = ready
        return out

    def _responded(self, event: ModelResponded) -> list[Data]:
        message = event.response.message
        out: list[Data] = []
        if event.index in self._texts:
            message_id = self._texts[event.index].id
            out.extend(self._end_text(event.index, message.content))
        else:
            message_id = self._new_id("m")
            if message.content:
                text = self._redactor.text(message.content, "text")
                out.append(
                    {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"}
                )
                out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": text})
                out.append({"type": "TEXT_MESSAGE_END", "messageId": message_id})
        for call in message.tool_calls:
            arguments = orjson.dumps(self._clean(call.arguments, "arguments")).decode()
            out.append(
                {
                    "type": "TOOL_CALL_START",
                    "toolCallId": call.id,
                    "toolCallName": call.name,
                    "parentMessageId": message_id,
                }
            )
            out.append({"type": "TOOL_CALL_ARGS", "toolCallId": call.id, "delta": arguments})
            out.append({"type": "TOOL_CALL_END", "toolCallId": call.id})
        return out

    def _tool_finished(self, event: ToolFinished) -> list[Data]:
        content = self._redactor.text(event.result.content, "result")
        return [
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": self._new_id("t"),
                "toolCallId": event.call.id,
                "content": content,
                "role": "tool",
            }
        ]

    def _handed_off(self, event: HandedOff) -> list[Data]:
        """A team's conversation moved: `from`, `to`, `policy` (`return` for a sub-task
        handing back), how many `messages` the target reads, and the `task` (masked)."""
        task = None if event.task is None else self._redactor.text(event.task, "task")
        value = {
            "from": event.source,
            "to": event.target,
            "policy": event.history,
            "messages": event.messages,
            "task": task,
            "step": step_name(event.path),
        }
        return [{"type": "CUSTOM", "name": HANDOFF, "value": value}]

    def _custom(self, event: CustomEvent) -> list[Data]:
        """A node's own data (`Runtime.emit_custom`), masked like a trace record's."""
        return [{"type": "CUSTOM", "name": event.name, "value": self._clean(event.data, "value")}]

    def _run_finished(self, event: RunFinished) -> list[Data]:
        # Once a run: the models themselves build these (outcomes, interrupts, errors).
        out = self._closing()
        error = event.error
        ending: BaseEvent
        if error is None:
            result = self._clean(event.context.input, "output")
            ending = RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, result=result)
        elif isinstance(error, Interrupted):
            ending = self.interrupted(error)
        elif isinstance(error, GraphCancelled):
            ending = self.cancelled()
        else:
            message = self._redactor.text(f"{type(error).__name__}: {error}", "error")
            ending = RunErrorEvent(message=message, code=type(error).__name__)
        out.append(_dumped(ending))
        return out

    def framing(
        self, kinds: Sequence[str], ending: BaseException | None, *, status: str, output: Any
    ) -> list[BaseEvent]:
        """What a run's events (`kinds`, in order) lack to be one whole AG-UI run.

        A run that fails before it begins (a resume the record refuses, a busy
        lease) sent nothing; one stopped from outside may have left steps open.
        `status` is how the run ended ("ok" with `output`, "interrupted",
        "failed", "cancelled", or "running" when its caller's scope was
        cancelled); `ending` is what it raised.
        """
        out: list[BaseEvent] = []
        if "RUN_STARTED" not in kinds:
            out.append(RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id))
        if kinds and kinds[-1] in ("RUN_FINISHED", "RUN_ERROR"):
            return out
        out.extend(self.close())
        if isinstance(ending, Interrupted):
            out.append(self.interrupted(ending))
        elif status == "failed":
            code = type(ending).__name__
            message = self._redactor.text(f"{code}: {ending}", "error")
            out.append(RunErrorEvent(message=message, code=code))
        elif status == "ok":
            out.append(
                RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, result=output)
            )
        else:
            out.append(self.cancelled())
        return out

    def cancelled(self) -> RunFinishedEvent:
        """The end of a run that was cancelled (it can be resumed from its store)."""
        return RunFinishedEvent(
            thread_id=self.thread_id, run_id=self.run_id, outcome=RunFinishedCancelledOutcome()
        )

    def interrupted(self, error: Interrupted) -> RunFinishedEvent:
        """The end of a run that waits for an answer: its question as an AG-UI interrupt."""
        question = error.question
        call = question if isinstance(question, ToolCall) else None
        shown = self._clean(question, "question")
        interrupt = Interrupt(
            id=error.run_id,
            reason="tool_approval" if call is not None else "input",
            message=(
                f"approve the call to tool {call.name!r}?"
                if call is not None
                else self._redactor.text(_question_text(shown), "question")
            ),
            tool_call_id=call.id if call is not None else None,
            metadata={"question": shown},
        )
        return RunFinishedEvent(
            thread_id=self.thread_id,
            run_id=self.run_id,
            outcome=RunFinishedInterruptOutcome(interrupts=[interrupt]),
        )


def _question_text(shown: Any) -> str:
    """What a person reads of a question: its own `message` when it has one (an MCP form)."""
    if isinstance(shown, dict) and isinstance(shown.get("message"), str):
        return str(shown["message"])
    return str(shown)


_HANDLERS: dict[type[Any], Any] = {
    RunStarted: AguiTranslator._run_started,
    NodeStarted: AguiTranslator._node_started,
    NodeFinished: AguiTranslator._node_finished,
    NodeFailedEvent: AguiTranslator._node_failed,
    ModelStreamed: AguiTranslator._streamed,
    ModelResponded: AguiTranslator._responded,
    ToolFinished: AguiTranslator._tool_finished,
    HandedOff: AguiTranslator._handed_off,
    CustomEvent: AguiTranslator._custom,
    RunFinished: AguiTranslator._run_finished,
}


# -- input ---------------------------------------------------------------------------------


def _text(content: Any, role: str) -> str:
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content or ():
        kind = getattr(part, "type", None)
        if kind != "text":
            raise RunInputError(f"a {role} message holds a {kind} part; only text is supported")
        texts.append(part.text)
    return "".join(texts)


def _message(item: Any) -> Message | None:
    role = item.role
    if role == "user":
        return Message.user(_text(item.content, role))
    if role in ("system", "developer"):
        return Message.system(item.content)
    if role == "assistant":
        calls = []
        for call in item.tool_calls or ():
            try:
                calls.append(ToolCall(call.id, call.function.name, call.function.arguments))
            except (TypeError, ValueError) as exc:
                raise RunInputError(
                    f"the arguments of tool call {call.id!r} are not a JSON object: {exc}"
                ) from exc
        return Message.assistant(item.content or "", tool_calls=tuple(calls))
    if role == "tool":
        return Message.tool(
            item.tool_call_id, _text(item.content, role), is_error=item.error is not None
        )
    return None  # activity and reasoning messages belong to the page, not the model


def context_from_input(request: RunAgentInput, *, repair: bool = False) -> AgentContext[str]:
    """The first context of a run asked for by an AG-UI client.

    The last message must be the user's: its text is the run's input, and
    the messages before it are the history. The client's state becomes
    `ctx.state`. Raises `RunInputError` for anything else.

    A history no provider would take (a tool call without its result, a
    result without its call: `check_transcript`'s rules) is refused with
    the rule and the message's position among the client's messages, unless
    `repair` is set: then `repair_transcript` mends it, and what it changed
    is in `ctx.state["transcript_repairs"]`.
    """
    made = [(i, _message(item)) for i, item in enumerate(request.messages)]
    kept = [(i, m) for i, m in made if m is not None]
    messages = [m for _, m in kept]
    if not messages or messages[-1].role != "user":
        raise RunInputError("the conversation must end with a user message (the run's input)")
    state = request.state
    if state is None:
        state = {}
    if not isinstance(state, dict):
        raise RunInputError(f"the state must be a JSON object, not {type(state).__name__}")
    try:
        check_transcript(messages, wire="openai")
    except InvalidTranscript as exc:
        if not repair:
            raise RunInputError(
                f"message {kept[exc.index][0]} breaks the rule {exc.rule!r}: "
                f"{str(exc).partition('): ')[2]}"
            ) from exc
        fixed, changes = repair_transcript(messages, wire="openai")
        messages = list(fixed)
        state = {
            **state,
            "transcript_repairs": [
                {"message": kept[c.index][0] if c.index < len(kept) else c.index}
                | {"action": c.action, "detail": c.detail}
                for c in changes
            ],
        }
    last = messages.pop()
    return AgentContext(last.content, history=tuple(messages), state=state)
