"""The ASGI middleware that authenticates every request but the open ones (`_api.OPEN`)
with the server's hooks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from starlette.requests import Request
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._api import MAX_BODY, Refused, is_open, json_response
from ._auth import IDENTITY, USER, Access

__all__ = ("Authenticated",)


class Authenticated:
    """Runs `access.authenticate` before the app: the user goes in the scope (`USER`,
    and its identity in `IDENTITY`); an `HTTPException` it raises is the answer."""

    def __init__(self, app: ASGIApp, *, access: Access, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.access = access
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_open(scope["path"]):
            await self.app(scope, receive, send)
            return
        read: list[Message] = []
        body: Any = None
        if self.access.wants_body:
            try:
                read, body = await _whole_body(receive)
            except Refused as refused:
                answer = json_response({"detail": refused.detail}, refused.status)
                await answer(scope, receive, send)
                return

        async def replay() -> Message:
            return read.pop(0) if read else await receive()

        request = Request(scope, replay)
        given = {
            "request": request,
            "body": body,
            "path": scope["path"],
            "method": scope["method"],
            "path_params": self._path_params(scope),
            "query_params": dict(request.query_params),
            "headers": dict(scope["headers"]),
            "authorization": request.headers.get("authorization"),
        }
        try:
            user = await self.access.authenticate(given)
        except Refused as refused:
            answer = json_response({"detail": refused.detail}, refused.status, refused.headers)
            await answer(scope, receive, send)
            return
        scope[USER] = user
        if user.identity:
            scope[IDENTITY] = user.identity
        await self.app(scope, replay, send)

    def _path_params(self, scope: Scope) -> dict[str, Any]:
        """The parameters of the route the request's path names (its method aside)."""
        partial: dict[str, Any] = {}
        for route in self.routes:
            match, child = route.matches(scope)
            if match == Match.FULL:
                return dict(child.get("path_params", {}))
            if match == Match.PARTIAL and not partial:
                partial = dict(child.get("path_params", {}))
        return partial


async def _whole_body(receive: Receive) -> tuple[list[Message], Any]:
    """The request's messages, read to its end, and its body as JSON (None when it is
    empty or not JSON); 413 past `MAX_BODY`."""
    read: list[Message] = []
    raw = b""
    while True:
        message = await receive()
        read.append(message)
        if message["type"] != "http.request":
            break
        raw += message.get("body", b"")
        if len(raw) > MAX_BODY:
            raise Refused(413, f"the body is larger than {MAX_BODY} bytes")
        if not message.get("more_body", False):
            break
    try:
        return read, orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return read, None
