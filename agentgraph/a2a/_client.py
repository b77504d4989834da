"""`RemoteAgent`: a remote A2A agent reached like a model, and `remote_agent`, its node.

A remote agent answers a conversation as a model does, so it is one: a
`ChatModel` whose `stream` sends the user's messages since its last answer
as one A2A message and streams the text of the task's artifacts back. That
makes a call to it an effect of the runtime like any model call: recorded in
a checkpointed run, served from the record on resume and replay (the remote
agent is not called again), shown in traces and over AG-UI as it streams.

Where the conversation stands with the agent travels in the answer's
`provider_data` (`a2a.task`, `a2a.context`, `a2a.state`), so the next call
continues the same A2A context, and answers the task when it asked a question.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import httpx
import orjson
from a2a.client import A2AClientError, A2AClientTimeoutError, ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from a2a.utils.errors import A2AError
from google.protobuf import json_format

from .._core._context import AgentContext
from .._core._errors import ProviderConnectionError, ProviderError, ProviderTimeout, UsageError
from .._core._json import to_data
from .._core._node import Node
from .._core._runtime import Runtime
from ..llm._messages import Message
from ..llm._model import ChatRequest, ChatResponse, ResponseDone, StreamEvent, TextDelta
from ._card import BINDINGS, parse_card
from ._errors import A2AFormatError, RemoteTaskFailed
from ._numbers import whole_numbers
from ._parts import PARTIAL, SCHEMA_KEY, field_of, plain_value, text_of
from ._server import asyncio_only

__all__ = ("RemoteAgent", "remote_agent")

TASK, CONTEXT, STATE = "a2a.task", "a2a.context", "a2a.state"
_S = a2a_pb2.TaskState
_DONE = {_S.TASK_STATE_COMPLETED: "completed", _S.TASK_STATE_INPUT_REQUIRED: "input-required"}
_ENDED = {
    _S.TASK_STATE_FAILED: "failed",
    _S.TASK_STATE_REJECTED: "rejected",
    _S.TASK_STATE_CANCELED: "canceled",
    _S.TASK_STATE_AUTH_REQUIRED: "auth-required",
}


class RemoteAgent:
    """A remote A2A agent at `url`, as a `ChatModel` (see the module's docstring).

    Args:
        url: the agent's base URL; its card is read from `card_path` under it.
        http_client: the `httpx.AsyncClient` to use (a new one per call when None).
        bindings: the protocol bindings to use, in order of preference.
        name: the name traces show (the card's name once it was read, else `url`).
    """

    def __init__(
        self,
        url: str,
        *,
        http_client: httpx.AsyncClient | None = None,
        bindings: Sequence[str] = BINDINGS,
        card_path: str = AGENT_CARD_WELL_KNOWN_PATH,
        name: str | None = None,
    ) -> None:
        unknown = sorted(set(bindings) - set(BINDINGS))
        if unknown or not bindings:
            raise UsageError(f"bindings are some of {list(BINDINGS)}, not {list(bindings)}")
        self.url = url.rstrip("/")
        self.http_client = http_client
        self.bindings = tuple(bindings)
        self.card_path = card_path
        self._name = name
        self._card: a2a_pb2.AgentCard | None = None

    @property
    def name(self) -> str:
        return self._name or (self._card.name if self._card is not None else self.url)

    async def card(self, client: httpx.AsyncClient | None = None) -> a2a_pb2.AgentCard:
        """The agent's card, read once; `A2AFormatError` naming the field it breaks."""
        if self._card is None:
            if client is None:
                async with httpx.AsyncClient() as own:
                    return await self.card(own)
            try:
                response = await client.get(self.url + self.card_path)
                response.raise_for_status()
                data = response.json()
            except httpx.HTTPStatusError as exc:
                raise ProviderError(
                    f"its card could not be read: HTTP {exc.response.status_code}",
                    provider=self.url,
                    status=exc.response.status_code,
                ) from exc
            except httpx.TransportError as exc:
                raise ProviderConnectionError(
                    f"cannot reach it: {type(exc).__name__}", provider=self.url
                ) from exc
            except ValueError as exc:
                raise A2AFormatError(self.url, "(card)", f"the card is not JSON: {exc}") from exc
            self._card = parse_card(self.url, data)
        return self._card

    async def request(self, request: ChatRequest) -> ChatResponse:
        """The agent's complete answer to the conversation in `request`."""
        async with self.stream(request) as events:
            async for event in events:
                if isinstance(event, ResponseDone):
                    return event.response
        raise A2AFormatError(self.name, "(stream)", "the answer ended without a final state")

    @asynccontextmanager
    async def stream(self, request: ChatRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        """Send the new user messages; stream the answer's text, then `ResponseDone`."""
        asyncio_only("a remote A2A agent")
        message = outgoing(request.messages)
        if self.http_client is not None:
            yield self._events(self.http_client, message)
            return
        async with httpx.AsyncClient(timeout=httpx.Timeout(60.0)) as own:
            yield self._events(own, message)

    async def _events(
        self, http: httpx.AsyncClient, message: a2a_pb2.Message
    ) -> AsyncIterator[StreamEvent]:
        card = await self.card(http)
        config = ClientConfig(httpx_client=http, supported_protocol_bindings=list(self.bindings))
        client = ClientFactory(config).create(card)
        answer = _Answer(self.name)
        try:
            async for item in client.send_message(a2a_pb2.SendMessageRequest(message=message)):
                for delta in answer.take(item):
                    yield TextDelta(delta)
        except (A2AClientTimeoutError, httpx.TimeoutException) as exc:
            raise ProviderTimeout(f"no answer in time: {exc}", provider=self.name) from exc
        except httpx.TransportError as exc:
            raise ProviderConnectionError(
                f"the connection failed: {type(exc).__name__}", provider=self.name
            ) from exc
        except json_format.ParseError as exc:
            raise A2AFormatError(self.name, field_of(exc), str(exc)) from exc
        except (A2AError, A2AClientError) as exc:
            raise ProviderError(
                f"it refused the message: {exc}", provider=self.name, code=type(exc).__name__
            ) from exc
        yield ResponseDone(answer.response())


class _Answer:
    """What a remote agent's events add up to: the answer's text, its task and its state."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.text: list[str] = []
        self.task = self.context = ""
        self.state: a2a_pb2.TaskState = _S.TASK_STATE_UNSPECIFIED
        self.said = ""  # the last status message: a question, or why it failed

    def take(self, item: a2a_pb2.StreamResponse) -> list[str]:
        kind = item.WhichOneof("payload")
        if kind == "message":
            self.context = item.message.context_id
            self.state = _S.TASK_STATE_COMPLETED
            self.text.append(text_of(item.message.parts))
            return [self.text[-1]]
        if kind == "task":
            return self._task(item.task)
        if kind == "status_update":
            update = item.status_update
            self.context = update.context_id or self.context
            self._status(update.task_id, update.status, "statusUpdate")
            return []
        if kind == "artifact_update":
            self.context = item.artifact_update.context_id or self.context
            artifact = item.artifact_update.artifact
            if _partial(artifact):
                return []
            chunk = _artifact_text(artifact)
            self.text.append(chunk)
            return [chunk] if chunk else []
        raise A2AFormatError(self.agent, "(event)", "an event with no payload")

    def _task(self, task: a2a_pb2.Task) -> list[str]:
        if not task.id:
            raise A2AFormatError(self.agent, "task.id", "the task has no id")
        self.context = task.context_id or self.context
        self._status(task.id, task.status, "task.status")
        if task.status.state in _DONE and not self.text:
            # A whole task at once (a non-streaming answer): its artifacts are the answer.
            self.text = [_artifact_text(a) for a in task.artifacts if not _partial(a)]
            return [t for t in self.text if t]
        return []

    def _status(self, task_id: str, status: a2a_pb2.TaskStatus, where: str) -> None:
        if not task_id:
            raise A2AFormatError(self.agent, f"{where}.taskId", "the update names no task")
        if status.state == _S.TASK_STATE_UNSPECIFIED:
            raise A2AFormatError(self.agent, f"{where}.state", "the task's state is unspecified")
        self.task, self.state = task_id, status.state
        if status.HasField("message"):
            self.said = text_of(status.message.parts)

    def response(self) -> ChatResponse:
        if self.state in _ENDED:
            raise RemoteTaskFailed(self.agent, self.task, _ENDED[self.state], self.said)
        if self.state not in _DONE:
            state = _S.Name(self.state)
            raise A2AFormatError(self.agent, "status.state", f"the answer ended in {state}")
        state = _DONE[self.state]
        text = self.said if state == "input-required" else "".join(self.text)
        data = {TASK: self.task, CONTEXT: self.context, STATE: state}
        message = Message("assistant", text, provider_data=data)
        return ChatResponse(message, finish_reason="stop", model=self.agent, id=self.task or None)


def _partial(artifact: a2a_pb2.Artifact) -> bool:
    return bool(json_format.MessageToDict(artifact.metadata).get(PARTIAL))


def _artifact_text(artifact: a2a_pb2.Artifact) -> str:
    """The artifact as text; a data part as JSON, its integers as the agent's schema says."""
    schema = json_format.MessageToDict(artifact.metadata).get(SCHEMA_KEY)
    out: list[str] = []
    for part in artifact.parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            out.append(part.text)
        elif kind == "data":
            value = plain_value(part.data)
            if isinstance(schema, Mapping):
                value = whole_numbers(schema, value)
            out.append(orjson.dumps(value).decode())
    return "".join(out)


def outgoing(messages: Sequence[Message]) -> a2a_pb2.Message:
    """The A2A message for a conversation: the user's messages since the agent's last answer.

    It continues the A2A context of that answer, and answers its task when
    the answer was a question.
    """
    last = next(
        (i for i in range(len(messages) - 1, -1, -1) if CONTEXT in messages[i].provider_data),
        -1,
    )
    parts = [
        a2a_pb2.Part(text=m.content) for m in messages[last + 1 :] if m.role == "user" and m.content
    ]
    if not parts:
        raise UsageError(
            "there is nothing to send to the remote agent: no user message since its last answer"
        )
    message = a2a_pb2.Message(message_id=uuid.uuid4().hex, role=a2a_pb2.Role.ROLE_USER, parts=parts)
    if last >= 0:
        data = messages[last].provider_data
        message.context_id = str(data[CONTEXT])
        if data.get(STATE) == "input-required":
            message.task_id = str(data[TASK])
    return message


def _answer_text(answer: Any) -> str:
    if isinstance(answer, str):
        return answer
    if isinstance(answer, bool):
        return "yes" if answer else "no"
    return orjson.dumps(to_data(answer)).decode()


@attrs.frozen(eq=False, slots=True, repr=False)
class _RemoteNode(Node[Any, str]):
    agent: RemoteAgent

    async def run(self, ctx: AgentContext[Any], rt: Runtime) -> AgentContext[str]:
        text = (
            ctx.input if isinstance(ctx.input, str) else orjson.dumps(to_data(ctx.input)).decode()
        )
        last = ctx.history[-1] if ctx.history else None
        if text and not (last is not None and last.role == "user" and last.content == text):
            ctx = ctx.append(Message.user(text))
        while True:
            response = await _streamed(self.agent, ChatRequest(ctx.history), rt)
            message = response.message
            ctx = ctx.append(message).add_usage(response.usage)
            if message.provider_data.get(STATE) != "input-required":
                return ctx.with_input(message.content)
            # The remote agent asked: the run stops here, and the answer (given to
            # GraphRunner.resume, or over AG-UI) goes back to the remote task.
            answer = await rt.interrupt(message.content)
            ctx = ctx.append(Message.user(_answer_text(answer)))


async def _streamed(agent: RemoteAgent, request: ChatRequest, rt: Runtime) -> ChatResponse:
    async with rt.stream_model(agent, request) as events:
        async for event in events:
            if isinstance(event, ResponseDone):
                return event.response
    raise A2AFormatError(agent.name, "(stream)", "the answer ended without a final state")


def remote_agent(agent: RemoteAgent | str, *, name: str | None = None) -> Node[Any, str]:
    """A node that hands the conversation to a remote A2A agent and takes its answer.

    It sends the user's messages since the agent's last answer (the input
    first becomes the user's message, as `chat` does), streams the answer and
    appends it to the history; the output is its text. When the agent asks a
    question (`input-required`), the run stops with `Interrupted` carrying it;
    `GraphRunner.resume(..., answer=...)` (or an AG-UI client) answers, and
    the node sends the answer to the waiting task. Each call to the agent is
    recorded like a model call: a resumed or replayed run does not call it again.
    """
    remote = RemoteAgent(agent) if isinstance(agent, str) else agent
    return _RemoteNode(agent=remote, name=name or "remote_agent")
