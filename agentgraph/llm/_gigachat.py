"""`GigaChatModel`: Sber GigaChat, with OAuth tokens fetched and refreshed on demand.

The access token comes from the OAuth endpoint (Basic authorization key,
`scope`, a fresh `RqUID`) and lives about 30 minutes. It is refreshed shortly
before it expires, and once more when the API answers 401; a second 401 with
a freshly issued token is reported as `AuthenticationError`.
"""

from __future__ import annotations

import ssl
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
import httpx

from .._core._errors import (
    AuthenticationError,
    ProviderConfigError,
    ProviderStatusError,
    ResponseFormatError,
    UnsupportedSetting,
)
from ._capabilities import Capabilities
from ._gigachat_wire import ChunkReader, gigachat_messages, parse_completion
from ._http import ProviderRetry
from ._loops import current_loop
from ._messages import ToolSpec
from ._model import ChatRequest, ChatResponse, StreamEvent
from ._transport import ChatClientBase

__all__ = ("GIGACHAT_AUTH_URL", "GIGACHAT_BASE_URL", "GigaChatModel")

T = TypeVar("T")

GIGACHAT_BASE_URL = "https://gigachat.devices.sberbank.ru/api/v1"
GIGACHAT_AUTH_URL = "https://ngw.devices.sberbank.ru:9443/api/v2/oauth"
_REFRESH_MARGIN = 60.0


class GigaChatModel(ChatClientBase):
    """A `ChatModel` over GigaChat's `POST {base_url}/chat/completions`.

    Args:
        model: e.g. `GigaChat-Max`.
        credentials: the authorization key (base64 of `client_id:secret`) used
            to obtain access tokens.
        scope: `GIGACHAT_API_PERS`, `GIGACHAT_API_B2B` or `GIGACHAT_API_CORP`.
        access_token: a ready token, used until it is refused; without
            `credentials` it cannot be refreshed.
        auth_url: the OAuth endpoint.
        verify: TLS verification for a client created here (GigaChat's
            certificates chain to the Russian Ministry of Digital Development
            CA: pass its bundle path or an `ssl.SSLContext`).
        headers, http_client, timeout, retry, capabilities, provider: as for `OpenAIModel`.
    """

    __slots__ = ("_auth_url", "_credentials", "_expires", "_lock", "_scope", "_token")

    _path = "/chat/completions"
    _native_output = False  # answers follow the prompt fragment and the lenient parser

    def __init__(
        self,
        model: str = "GigaChat",
        *,
        credentials: str | None = None,
        scope: str = "GIGACHAT_API_PERS",
        access_token: str | None = None,
        base_url: str = GIGACHAT_BASE_URL,
        auth_url: str = GIGACHAT_AUTH_URL,
        verify: ssl.SSLContext | str | bool = True,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout | None = None,
        retry: ProviderRetry | None = None,
        capabilities: Capabilities | None = None,
        provider: str = "gigachat",
    ) -> None:
        if not credentials and not access_token:
            raise ProviderConfigError(
                "GigaChat needs credentials= (or GIGACHAT_CREDENTIALS) or an access_token=",
                provider=provider,
            )
        super().__init__(
            model,
            provider,
            base_url,
            headers,
            http_client,
            timeout,
            retry,
            secrets=(credentials, access_token),
            verify=verify,
        )
        self._caps = capabilities or Capabilities()
        self._credentials = credentials
        self._scope = scope
        self._auth_url = auth_url
        self._token = access_token
        self._expires = float("inf") if access_token else 0.0
        self._lock: tuple[object, anyio.Lock] | None = None

    async def _access_token(self, *, stale: str | None = None) -> str:
        """A valid token; a new one when the current one is `stale` or about to expire."""
        token = self._token
        if token and token != stale and time.time() < self._expires - _REFRESH_MARGIN:
            return token
        async with self._refresh_lock():
            # Another task may have refreshed while this one waited.
            if (
                self._token
                and self._token != stale
                and time.time() < self._expires - _REFRESH_MARGIN
            ):
                return self._token
            return await self._fetch_token()

    def _refresh_lock(self) -> anyio.Lock:
        """The lock of the running event loop: a lock, like a connection, serves one loop."""
        loop = current_loop()
        held = self._lock
        if held is None or held[0] is not loop:
            self._lock = held = (loop, anyio.Lock())
        return held[1]

    async def _fetch_token(self) -> str:
        provider = self._http.provider
        if not self._credentials:
            raise AuthenticationError(
                "GigaChat refused the access token and no credentials are set to get a new one",
                provider=provider,
                status=401,
            )
        headers = {"authorization": f"Basic {self._credentials}", "rquid": str(uuid.uuid4())}
        try:
            data = await self._http.post(
                self._auth_url, form={"scope": self._scope}, headers=headers
            )
        except ProviderStatusError as exc:
            if exc.retryable:
                raise
            detail = str(exc).removeprefix(f"{provider}: ").removesuffix(f" (HTTP {exc.status})")
            raise AuthenticationError(
                f"GigaChat did not issue an access token: {detail}",
                provider=provider,
                status=exc.status,
                body=exc.body,
                code=exc.code,
            ) from exc
        data = data if isinstance(data, dict) else {}
        token = data.get("access_token") or data.get("tok")
        if not isinstance(token, str) or not token:
            raise ResponseFormatError("OAuth answer has no access_token", provider=provider)
        previous, self._token = self._token, token
        self._expires = _expiry(data.get("expires_at") or data.get("exp"))
        # The old token stays a secret too: an error body may still quote it.
        self._http.secrets = tuple(s for s in (self._credentials, previous, token) if s)
        return token

    async def _authorized(self, op: Callable[[Mapping[str, str]], Awaitable[T]]) -> T:
        """Run `op` with a bearer token; on 401 refresh the token exactly once."""
        token = await self._access_token()
        try:
            return await op(self._auth_headers(token))
        except AuthenticationError as exc:
            if exc.status != 401:
                raise
        token = await self._access_token(stale=token)
        try:
            return await op(self._auth_headers(token))
        except AuthenticationError as exc:
            if exc.status != 401:
                raise
            raise AuthenticationError(
                "GigaChat refused a freshly issued access token; check the credentials and "
                f"that the scope {self._scope!r} matches them",
                provider=self._http.provider,
                status=401,
                body=exc.body,
                code=exc.code,
            ) from exc

    def build_body(self, request: ChatRequest, *, stream: bool = False) -> dict[str, Any]:
        """The JSON body for `request`, after the capability policy."""
        model = request.model or self._model
        if any(m.role == "tool" and m.parts for m in request.messages):
            raise UnsupportedSetting(
                model,
                "images in tool results",
                "a GigaChat function result is JSON text; have the tool return text "
                "(for an MCP server, MCPTools(images=False) describes its images in words)",
            )
        self._caps.check_media(
            request.messages,
            model=model,
            images=False,
            documents=False,
            reason="GigaChat takes files only as uploads referenced by id, which this client "
            "does not do: describe the file in text, or use another provider for it",
        )
        self._check_transcript(request, "gigachat")
        body: dict[str, Any] = {
            "model": model,
            "messages": gigachat_messages(request.messages, provider=self._http.provider),
        }
        if request.tools:
            body["functions"] = [_function(t) for t in request.tools]
            choice = self._function_call(request, model)
            if choice is not None:
                body["function_call"] = choice
        if request.temperature is not None and self._caps.allows("temperature", model=model):
            body["temperature"] = request.temperature
        if request.max_output is not None:
            body["max_tokens"] = request.max_output
        if request.think and self._caps.allows("think", model=model):
            body["reasoning_effort"] = "medium" if request.think is True else request.think
        if request.output is not None:
            self._caps.allows("output", model=model, default=False, reason="use the prompt instead")
        if stream:
            body["stream"] = True
        return body

    def _function_call(self, request: ChatRequest, model: str) -> Any:
        choice = request.tool_choice
        if choice in (None, "auto", "none"):
            return choice
        if choice == "required":
            if len(request.tools) == 1:
                return {"name": request.tools[0].name}
            self._caps.allows(
                "tool_choice",
                model=model,
                default=False,
                reason="no 'required' among many functions",
            )
            return "auto"
        return {"name": choice}

    def _parse(self, data: Any, model: str) -> ChatResponse:
        return parse_completion(data, provider=self._http.provider, model=model)

    def _decode(self, response: httpx.Response, model: str) -> AsyncGenerator[StreamEvent, None]:
        return self._fold_sse(response, ChunkReader(provider=self._http.provider, model=model))


def _function(spec: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters,
    }
    if spec.examples:
        function["few_shot_examples"] = [
            {"request": request, "params": arguments} for request, arguments in spec.examples
        ]
    return function


def _expiry(value: Any) -> float:
    """Expiry as epoch seconds: `expires_at` is in milliseconds, `exp` in seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return time.time() + 1800.0
    return float(value) / 1000.0 if value > 1e11 else float(value)
