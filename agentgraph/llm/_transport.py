"""`HttpTransport`: how a provider client sends its requests, and the clients' shared base."""

from __future__ import annotations

import ssl
from collections.abc import Mapping, Sequence
from typing import Any, Self

import anyio
import httpx
import orjson

from .._errors import ProviderError, ResponseFormatError
from ._http import (
    ProviderRetry,
    dumps,
    error_from_exception,
    error_from_response,
    redact,
    snippet,
)

__all__ = ("DEFAULT_TIMEOUT", "HttpClientBase", "HttpTransport")

DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=5.0)
_BODY_LIMIT = 2000


class HttpTransport:
    """Sends one provider's requests: JSON bodies, retry, error mapping, secrets kept out.

    Uses the given `httpx.AsyncClient` as is, or creates one on first use (and
    then closes it in `aclose`).
    """

    __slots__ = (
        "_client",
        "_extra",
        "_headers",
        "_owns",
        "_verify",
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
        self._client = http_client
        self._owns = http_client is None
        self._verify = verify
        self._extra: dict[str, Any] = {}
        if timeout is not None:
            self._extra["timeout"] = timeout

    def __repr__(self) -> str:
        return f"HttpTransport(provider={self.provider!r}, base_url={self.display_url!r})"

    @property
    def display_url(self) -> str:
        """The base URL without any user:password part."""
        return str(httpx.URL(self.base_url).copy_with(username=None, password=None))

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=DEFAULT_TIMEOUT, verify=self._verify)
        return self._client

    def _url(self, path: str) -> str:
        return path if "://" in path else self.base_url + path

    def _build(
        self,
        path: str,
        body: Any,
        form: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
    ) -> httpx.Request:
        merged = {**self._headers, **(headers or {})}
        if form is not None:
            return self._http().build_request(
                "POST", self._url(path), data=dict(form), headers=merged, **self._extra
            )
        merged["content-type"] = "application/json"
        return self._http().build_request(
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
        request = self._build(path, body, form, headers)
        try:
            response = await self._http().send(request)
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
        request = self._build(path, body, None, headers)
        try:
            response = await self._http().send(request, stream=True)
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
        """Close the HTTP client if this transport created it."""
        if self._owns and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


class HttpClientBase:
    """Lifecycle shared by the provider clients: `aclose()` and `async with`."""

    __slots__ = ()

    _http: HttpTransport
    _model: str

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r}, base_url={self._http.display_url!r})"

    async def aclose(self) -> None:
        """Close the HTTP client if this object created it; an injected client stays open."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
