"""The fake server's state (script, faults, recorded requests) and its Starlette app."""

from __future__ import annotations

import inspect
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

import anyio
import attrs
import orjson
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from ..llm._replies import Reply, as_response
from ._fake_common import Dialect, EventStream, RecordedRequest, error_response, json_response
from ._fake_gigachat import GigaChatDialect
from ._fake_ollama import OllamaDialect
from ._fake_openai import OpenAIDialect
from ._faults import NO_FAULTS, ErrorResponse, Fault, FaultPlan, MalformedJson

__all__ = ("FakeState", "Responder", "build_app")

Responder = Callable[[str, RecordedRequest], Reply | Awaitable[Reply]]
"""Computes a reply from the provider name and the recorded request."""

_Embeds = OpenAIDialect | OllamaDialect | GigaChatDialect
_INVALID = object()


def _gone() -> Response:
    """The answer to a client that already hung up: nobody reads it (499, as nginx names it)."""
    return Response(status_code=499)


@attrs.define
class _Injection:
    plan: FaultPlan
    remaining: int | None
    provider: str | None
    endpoint: str | None

    def matches(self, record: RecordedRequest) -> bool:
        return self.provider in (None, record.provider) and self.endpoint in (None, record.endpoint)


class _NoReply(Exception):
    def __init__(self, record: RecordedRequest, count: int) -> None:
        super().__init__(
            f"fake server: no scripted reply left for {record.method} {record.path} "
            f"(request #{count}); add replies, a responder or a default"
        )


class FakeState:
    """Everything a test changes or reads while the server runs; guarded by one lock."""

    def __init__(
        self,
        responder: Responder | None,
        default: Reply | None,
        delay: float | Callable[[RecordedRequest], float],
    ) -> None:
        self.responder = responder
        self.default = default
        self.delay = delay
        self.lock = threading.Lock()
        self.script: deque[Reply] = deque()
        self.injections: list[_Injection] = []
        self.records: list[RecordedRequest] = []

    def inject(
        self,
        faults: tuple[Fault, ...],
        times: int | None,
        provider: str | None,
        endpoint: str | None,
    ) -> None:
        with self.lock:
            self.injections.append(_Injection(FaultPlan.of(faults), times, provider, endpoint))

    def admit(self, record: RecordedRequest) -> FaultPlan:
        """Record a request and take the faults that apply to it."""
        with self.lock:
            self.records.append(record)
            for injection in self.injections:
                if injection.matches(record):
                    if injection.remaining is not None:
                        injection.remaining -= 1
                        if injection.remaining <= 0:
                            self.injections.remove(injection)
                    return injection.plan
        return NO_FAULTS

    async def reply(self, record: RecordedRequest) -> Reply:
        with self.lock:
            scripted = self.script.popleft() if self.script else None
            count = len(self.records)
        if scripted is not None:
            return scripted
        if self.responder is not None:
            result = self.responder(record.provider, record)
            return await result if inspect.isawaitable(result) else result
        if self.default is not None:
            return self.default
        raise _NoReply(record, count)

    def delay_for(self, plan: FaultPlan, record: RecordedRequest) -> float:
        delay = self.delay if plan.delay is None else plan.delay.seconds
        return delay(record) if callable(delay) else delay


async def _wait_unless_gone(request: Request, seconds: float) -> bool:
    """Sleep `seconds`; False if the client hung up meanwhile.

    A request its client abandoned (a client timeout) must not go on to take a
    scripted reply that the client's retry is waiting for.
    """
    gone = False
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            nonlocal gone
            while (await request.receive())["type"] != "http.disconnect":
                pass
            gone = True
            group.cancel_scope.cancel()

        group.start_soon(watch)
        await anyio.sleep(seconds)
        group.cancel_scope.cancel()
    return not gone


def _validate(dialect: Dialect, body: dict[str, Any]) -> ErrorResponse | None:
    try:
        return dialect.validate(body)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        # A field of a type the checks did not expect: still a 400, never a crash.
        return ErrorResponse(400, message=f"invalid request body: {type(exc).__name__}: {exc}")


async def _body(request: Request) -> bytes | None:
    """The request body, or None when the client hung up while sending it."""
    try:
        return await request.body()
    except ClientDisconnect:
        return None


def _parse(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _INVALID


class _Handlers:
    def __init__(self, state: FakeState, gigachat: GigaChatDialect) -> None:
        self.state = state
        self.gigachat = gigachat

    async def admit(
        self, request: Request, dialect: Dialect, endpoint: str, body: Any, raw: bytes
    ) -> tuple[RecordedRequest, FaultPlan, Response | None]:
        """Record, wait, and answer an injected error or an auth problem (or None to go on)."""
        stream = isinstance(body, dict) and endpoint == "chat" and dialect.is_stream(body)
        decode = dialect.decode if endpoint == "chat" else None
        record = RecordedRequest(
            dialect.name,
            endpoint,
            request.method,
            request.url.path,
            dict(request.headers),
            None if body is _INVALID else body,
            raw,
            stream,
            decode=decode,
        )
        plan = self.state.admit(record)
        seconds = self.state.delay_for(plan, record)
        if seconds > 0 and not await _wait_unless_gone(request, seconds):
            return record, plan, _gone()
        if plan.error is not None:
            return record, plan, error_response(dialect, plan.error)
        problem = None if endpoint == "oauth" else dialect.auth_problem(record.headers)
        if problem is None and request.method == "POST" and not isinstance(body, dict):
            problem = dialect.invalid_json()
        return record, plan, None if problem is None else error_response(dialect, problem)

    async def chat(self, request: Request, dialect: Dialect) -> Response:
        raw = await _body(request)
        if raw is None:
            return _gone()
        body = _parse(raw)
        record, plan, early = await self.admit(request, dialect, "chat", body, raw)
        if early is not None:
            return early
        problem = _validate(dialect, body)
        if problem is not None:
            return error_response(dialect, problem)
        if plan.malformed is not None:
            return _malformed(dialect, plan.malformed, record.stream)
        try:
            reply = await self.state.reply(record)
            response = as_response(
                reply,
                prompt_chars=len(raw),
                new_id=dialect.new_call_id,
                model=str(body.get("model") or ""),
            )
            if record.stream:
                events = dialect.render_stream(response, body)
            else:
                data = dialect.render(response, body)
        except Exception as exc:
            # A scripting problem, not a provider error: say so, and tell SDKs not to retry.
            fault = ErrorResponse(500, message=str(exc), headers={"x-should-retry": "false"})
            return error_response(dialect, fault)
        if not record.stream:
            return _json(dialect, data, plan)
        if plan.stream_error is not None:
            cut = max(0, plan.stream_error.after_events)
            events = [*events[:cut], dialect.stream_error(plan.stream_error)]
        cut_after = None if plan.cut is None else plan.cut.after_events
        if plan.cut is not None and plan.cut.clean:
            events, cut_after = events[: plan.cut.after_events], None
        return EventStream(
            events,
            media_type=dialect.stream_media_type,
            headers=dialect.response_headers(),
            cut_after=cut_after,
            interval=0.0 if plan.delay is None else plan.delay.between_events,
        )

    async def embed(self, request: Request, dialect: _Embeds) -> Response:
        raw = await _body(request)
        if raw is None:
            return _gone()
        body = _parse(raw)
        _, plan, early = await self.admit(request, dialect, "embeddings", body, raw)
        if early is not None:
            return early
        if plan.malformed is not None:
            return _malformed(dialect, plan.malformed, stream=False)
        result = dialect.embed(body)
        if isinstance(result, ErrorResponse):
            return error_response(dialect, result)
        return _json(dialect, result, plan)

    async def oauth(self, request: Request) -> Response:
        raw = await _body(request)
        if raw is None:
            return _gone()
        form = dict(parse_qsl(raw.decode(errors="replace")))
        record, plan, early = await self.admit(request, self.gigachat, "oauth", form, raw)
        if early is not None:
            return early
        if plan.malformed is not None:
            return _malformed(self.gigachat, plan.malformed, stream=False)
        result = self.gigachat.issue_token(record.headers, form)
        if isinstance(result, ErrorResponse):
            return error_response(self.gigachat, result)
        return _json(self.gigachat, result, plan)

    async def models(self, request: Request, dialect: Dialect, listing: dict[str, Any]) -> Response:
        _, plan, early = await self.admit(request, dialect, "models", None, b"")
        if early is not None:
            return early
        return _json(dialect, listing, plan)


def _json(dialect: Dialect, data: Any, plan: FaultPlan) -> Response:
    headers = dialect.response_headers()
    if plan.cut is None:
        return json_response(data, headers=headers)
    # Announce the whole body, send half of it, then drop the connection.
    body = orjson.dumps(data)
    half = len(body) // 2
    headers["content-length"] = str(len(body))
    return EventStream(
        [body[:half], body[half:]], media_type="application/json", headers=headers, cut_after=1
    )


def _malformed(dialect: Dialect, fault: MalformedJson, stream: bool) -> Response:
    body = fault.body
    if stream:
        return EventStream(
            [dialect.malformed_event(body)],
            media_type=dialect.stream_media_type,
            headers=dialect.response_headers(),
        )
    return Response(body, 200, dialect.response_headers(), media_type="application/json")


def build_app(
    state: FakeState,
    *,
    openai: OpenAIDialect,
    anthropic: Dialect,
    ollama: OllamaDialect,
    gigachat: GigaChatDialect,
    models: tuple[str, ...],
    responses: Dialect | None = None,
) -> Starlette:
    """The Starlette app answering every provider's routes from `state`."""
    handlers = _Handlers(state, gigachat)

    def chat(dialect: Dialect) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await handlers.chat(request, dialect)

        return endpoint

    def embed(dialect: _Embeds) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await handlers.embed(request, dialect)

        return endpoint

    def listing(dialect: Dialect, data: dict[str, Any]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await handlers.models(request, dialect, data)

        return endpoint

    openai_models = {
        "object": "list",
        "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "agentgraph"} for m in models
        ],
    }
    ollama_models = {
        "models": [
            {
                "name": f"{m}:latest",
                "model": f"{m}:latest",
                "modified_at": "2024-01-01T00:00:00Z",
                "size": 1,
                "digest": "0" * 64,
                "details": {},
            }
            for m in models
        ]
    }
    post = ["POST"]
    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat(openai), methods=post),
            *([Route("/v1/responses", chat(responses), methods=post)] if responses else []),
            Route("/v1/embeddings", embed(openai), methods=post),
            Route("/v1/models", listing(openai, openai_models), methods=["GET"]),
            Route("/v1/messages", chat(anthropic), methods=post),
            Route("/api/chat", chat(ollama), methods=post),
            Route("/api/embed", embed(ollama), methods=post),
            Route("/api/tags", listing(ollama, ollama_models), methods=["GET"]),
            Route("/api/v2/oauth", handlers.oauth, methods=post),
            Route("/api/v1/chat/completions", chat(gigachat), methods=post),
            Route("/api/v1/embeddings", embed(gigachat), methods=post),
        ]
    )
