"""`HttpTransport`: how a provider client sends its requests, and the clients' shared bases."""

from __future__ import annotations

import abc
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, ClassVar, Self, TypeVar

import anyio
import attrs
import httpx
import orjson

from .._core._errors import ProviderConfigError, ProviderError, ResponseFormatError
from ._capabilities import Capabilities
from ._decode import SSEReader, fold_sse, stream_events
from ._http import (
    ProviderRetry,
    dumps,
    error_from_exception,
    error_from_response,
    redact,
    scrub,
    snippet,
)
from ._loops import LoopPools, current_loop
from ._model import ChatRequest, ChatResponse, StreamEvent
from ._pool import default_client
from ._transcript import Wire, check_transcript

__all__ = ("DEFAULT_TIMEOUT", "ChatClientBase", "HttpClientBase", "HttpTransport", "KeyRule")

T = TypeVar("T")

DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=5.0, pool=60.0)
"""Long answers may take minutes; a connection, or a place in line for one, should not."""
_BODY_LIMIT = 2000


class HttpTransport:
    """Sends one provider's requests: JSON bodies, retry, error mapping, secrets kept out.

    Uses the given `httpx.AsyncClient` as is. Without one, it makes a pool of
    connections in each event loop it is used in (`LoopPools`): each is closed
    by `aclose` when awaited in that loop, or else when that loop ends.
    """

    __slots__ = (
        "_display",
        "_extra",
        "_headers",
        "_source",
        "base_url",
        "provider",
        "retry",
        "secrets",
    )

    def __init__(
        self,
        provider: str,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        secrets: Sequence[str | None] = (),
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout | None = None,
        retry: ProviderRetry | None = None,
        verify: ssl.SSLContext | str | bool = True,
    ) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.retry = retry or ProviderRetry()
        self.secrets: tuple[str, ...] = tuple(s for s in secrets if s)
        self._headers = {"accept": "application/json", **(headers or {})}
        # The factory holds `verify`, not the transport: no cycle keeps a dropped model alive.
        self._source: httpx.AsyncClient | LoopPools = (
            http_client
            if http_client is not None
            else LoopPools(
                lambda: default_client(timeout=DEFAULT_TIMEOUT, verify=verify),
                f"{provider} client",
            )
        )
        self._extra: dict[str, Any] = {}
        self._display: tuple[str, str] | None = None
        if timeout is not None:
            self._extra["timeout"] = timeout

    def __repr__(self) -> str:
        return f"HttpTransport(provider={self.provider!r}, base_url={self.display_url!r})"

    @property
    def display_url(self) -> str:
        """The base URL without any user:password part.

        Parsed once per `base_url` (every request's event reports it), not per call.
        """
        cached = self._display
        if cached is None or cached[0] != self.base_url:
            shown = str(httpx.URL(self.base_url).copy_with(username=None, password=None))
            self._display = cached = (self.base_url, shown)
        return cached[1]

    def _http(self) -> httpx.AsyncClient:
        source = self._source
        if not isinstance(source, LoopPools):
            return source
        loop = current_loop()
        bound = source.bound
        if bound is not None and bound[0] is loop:
            return bound[1]
        return source.client(loop)

    def enter(self) -> None:
        """Tie the connections this transport makes to the running event loop, until `aclose`."""
        if isinstance(self._source, LoopPools):
            self._source.enter()

    def _url(self, path: str) -> str:
        return path if "://" in path else self.base_url + path

    def _build(
        self,
        client: httpx.AsyncClient,
        path: str,
        body: Any,
        form: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
    ) -> httpx.Request:
        merged = {**self._headers, **(headers or {})}
        if form is not None:
            return client.build_request(
                "POST", self._url(path), data=dict(form), headers=merged, **self._extra
            )
        merged["content-type"] = "application/json"
        return client.build_request(
            "POST", self._url(path), content=dumps(body), headers=merged, **self._extra
        )

    def _status_error(self, response: httpx.Response, content: bytes) -> ProviderError:
        return error_from_response(
            self.provider,
            response.status_code,
            response.headers,
            content,
            secrets=self.secrets,
            max_retry_after=self.retry.max_retry_after,
        )

    async def post(
        self,
        path: str,
        body: Any = None,
        *,
        form: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """POST and return the decoded JSON answer, retrying per `retry`."""
        return await self.retry.call(lambda: self._post_once(path, body, form, headers))

    async def _post_once(
        self,
        path: str,
        body: Any,
        form: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
    ) -> Any:
        client = self._http()
        request = self._build(client, path, body, form, headers)
        try:
            response = await client.send(request)
        except httpx.HTTPError as exc:
            raise error_from_exception(self.provider, exc, secrets=self.secrets) from exc
        if response.status_code >= 400:
            raise self._status_error(response, response.content)
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError as exc:
            # A proxy answering 200 with a broken body: treated like a 502.
            text = redact(response.text, self.secrets)
            raise ResponseFormatError(
                f"response body is not JSON: {snippet(text)!r}",
                provider=self.provider,
                status=response.status_code,
                body=text[:_BODY_LIMIT],
                retryable=True,
            ) from exc

    async def open(
        self, path: str, body: Any, *, headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        """POST and return the streaming response once its status is good; the caller closes it."""
        return await self.retry.call(lambda: self._open_once(path, body, headers))

    async def _open_once(
        self, path: str, body: Any, headers: Mapping[str, str] | None
    ) -> httpx.Response:
        client = self._http()
        request = self._build(client, path, body, None, headers)
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise error_from_exception(self.provider, exc, secrets=self.secrets) from exc
        if response.status_code < 400:
            return response
        content = b""
        try:
            content = await response.aread()
        except httpx.HTTPError:
            pass  # the status alone still classifies the error
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
        raise self._status_error(response, content)

    async def aclose(self) -> None:
        """Close the connections made in the running loop; a given `http_client` stays open."""
        if isinstance(self._source, LoopPools):
            await self._source.aclose()


@attrs.frozen
class KeyRule:
    """A vendor's own API needs a key; compatible and local servers at other hosts may not."""

    vendor: str
    host: str
    env: str
    """The environment variable the key is usually read from, for the message."""

    def official(self, base_url: str) -> bool:
        """Whether `base_url` is the vendor's own API."""
        return httpx.URL(base_url).host == self.host

    def check(self, api_key: str | None, base_url: str, *, provider: str) -> None:
        """Raise `ProviderConfigError` when the vendor's own API is used without a key."""
        if not api_key and self.official(base_url):
            raise ProviderConfigError(
                f"{self.vendor} needs an API key: set the {self.env} environment variable, "
                "or pass api_key= to the model",
                provider=provider,
            )


class HttpClientBase:
    """What every provider client shares: its transport, `aclose()` and `async with`.

    Subclasses pass their connection arguments on positionally, named as in
    their public constructors. `api_key` goes into the headers `_auth_headers`
    makes (a bearer token by default) and is kept out of every error.
    """

    __slots__ = ("_http", "_model")

    def __init__(
        self,
        model: str,
        provider: str,
        base_url: str,
        headers: Mapping[str, str] | None,
        http_client: httpx.AsyncClient | None,
        timeout: float | httpx.Timeout | None,
        retry: ProviderRetry | None,
        /,
        *,
        api_key: str | None = None,
        secrets: Sequence[str | None] = (),
        verify: ssl.SSLContext | str | bool = True,
    ) -> None:
        auth = self._auth_headers(api_key) if api_key else {}
        self._model = model
        self._http = HttpTransport(
            provider,
            base_url,
            headers={**(headers or {}), **auth},
            secrets=(api_key, *secrets),
            http_client=http_client,
            timeout=timeout,
            retry=retry,
            verify=verify,
        )

    def _auth_headers(self, key: str) -> dict[str, str]:
        """The headers that carry `key`."""
        return {"authorization": f"Bearer {key}"}

    @property
    def provider(self) -> str:
        """The provider's name, as traces report it (`openai`, `ollama`, ...)."""
        return self._http.provider

    @property
    def base_url(self) -> str:
        """The URL requests go to, without any credentials in it."""
        return self._http.display_url

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r}, base_url={self._http.display_url!r})"

    async def aclose(self) -> None:
        """Close the connections this object made in the running event loop.

        Those it made in other loops are closed when their loops end; an injected
        `http_client` stays open.
        """
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        self._http.enter()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class ChatClientBase(HttpClientBase, abc.ABC):
    """What the chat clients share: the capability policy, `request` and `stream`.

    A subclass names its `_path`, builds the body, parses a complete answer
    and decodes a streamed one; sending, the stream's guard and closing the
    response live here. `_authorized` is where a client adds per-request
    headers (GigaChat's refreshed token).
    """

    __slots__ = ("_caps",)

    _caps: Capabilities
    _path: ClassVar[str]
    _native_output: ClassVar[bool] = True
    """Whether the provider can take `ChatRequest.output` as a native schema at all."""

    @property
    def name(self) -> str:
        """The model requests go to."""
        return self._model

    @property
    def supports_output_schema(self) -> bool:
        """Whether `ChatRequest.output` is sent as provider-native structured output."""
        return self._native_output and self._caps.output is not False

    @abc.abstractmethod
    def build_body(self, request: ChatRequest, *, stream: bool = False) -> dict[str, Any]:
        """The JSON body for `request`, after the capability policy."""

    @abc.abstractmethod
    def _parse(self, data: Any, model: str) -> ChatResponse:
        """The complete answer in a decoded response body."""

    @abc.abstractmethod
    def _decode(self, response: httpx.Response, model: str) -> AsyncGenerator[StreamEvent, None]:
        """The events of a streaming response, ending with `ResponseDone`."""

    def _fold_sse(
        self, response: httpx.Response, reader: SSEReader
    ) -> AsyncGenerator[StreamEvent, None]:
        """The events `reader` makes of a server-sent-events response."""
        return fold_sse(response, reader, provider=self._http.provider, secrets=self._http.secrets)

    async def _authorized(self, op: Callable[[Mapping[str, str]], Awaitable[T]]) -> T:
        """Run one HTTP exchange `op` with the headers this request needs (none here)."""
        return await op({})

    def _check_transcript(self, request: ChatRequest, wire: Wire, *, think: bool = False) -> None:
        """Refuse `request`'s messages if `wire` would, before its body is built."""
        if request.check_transcript:
            check_transcript(request.messages, wire=wire, think=think, provider=self._http.provider)

    async def request(self, request: ChatRequest) -> ChatResponse:
        """Send `request` and return the complete answer."""
        body = self.build_body(request)
        data = await self._authorized(
            lambda headers: self._http.post(self._path, body, headers=headers)
        )
        try:
            return self._parse(data, body["model"])
        except ProviderError as exc:
            # A 200 answer can carry an error body that echoes the key back.
            raise scrub(exc, self._http.secrets) from exc.__cause__

    def stream(
        self, request: ChatRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        """Stream the answer to `request` as deltas, ending with `ResponseDone`."""
        body = self.build_body(request, stream=True)

        async def open_response() -> httpx.Response:
            return await self._authorized(
                lambda headers: self._http.open(self._path, body, headers=headers)
            )

        return stream_events(open_response, lambda response: self._decode(response, body["model"]))
