"""`GigaChatEmbedder`: GigaChat's `POST {base_url}/embeddings`, with the chat client's OAuth."""

from __future__ import annotations

import ssl
from collections.abc import Mapping, Sequence
from typing import Any, Self

import httpx

from .._core._errors import ResponseFormatError
from ._embed import checked_texts
from ._gigachat import GIGACHAT_AUTH_URL, GIGACHAT_BASE_URL, GigaChatModel
from ._http import ProviderRetry

__all__ = ("GigaChatEmbedder",)


class GigaChatEmbedder:
    """An `Embedder` over GigaChat's embeddings endpoint.

    It signs in as `GigaChatModel` does (an access token from `credentials`,
    refreshed once when refused) and sends texts in batches.

    Args:
        model: `Embeddings` or `EmbeddingsGigaR`.
        batch_size: texts per request.
        credentials, scope, access_token, base_url, auth_url: as for `GigaChatModel`.
        verify, headers, http_client, timeout, retry, provider: as for `GigaChatModel`.
    """

    __slots__ = ("_batch_size", "_client", "_dimensions")

    def __init__(
        self,
        model: str = "Embeddings",
        *,
        credentials: str | None = None,
        scope: str = "GIGACHAT_API_PERS",
        access_token: str | None = None,
        base_url: str = GIGACHAT_BASE_URL,
        auth_url: str = GIGACHAT_AUTH_URL,
        verify: ssl.SSLContext | str | bool = True,
        batch_size: int = 100,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout | None = None,
        retry: ProviderRetry | None = None,
        provider: str = "gigachat",
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self._client = GigaChatModel(
            model,
            credentials=credentials,
            scope=scope,
            access_token=access_token,
            base_url=base_url,
            auth_url=auth_url,
            verify=verify,
            headers=headers,
            http_client=http_client,
            timeout=timeout,
            retry=retry,
            provider=provider,
        )
        self._batch_size = batch_size
        self._dimensions: int | None = None

    @property
    def name(self) -> str:
        return self._client.name

    @property
    def dimensions(self) -> int | None:
        """The vector length, learned from the first answer."""
        return self._dimensions

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        items = checked_texts(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(items), self._batch_size):
            batch = items[start : start + self._batch_size]
            got = await self._batch(batch)
            vectors.extend(got)
        if vectors and self._dimensions is None:
            self._dimensions = len(vectors[0])
        return vectors

    async def _batch(self, batch: list[str]) -> list[list[float]]:
        client = self._client
        body = {"model": client.name, "input": batch}
        data = await client._authorized(
            lambda auth: client._http.post("/embeddings", body, headers=auth)
        )
        provider = client._http.provider
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or len(items) != len(batch):
            raise ResponseFormatError(
                f"asked for {len(batch)} embeddings, the answer holds "
                f"{len(items) if isinstance(items, list) else 'no list of them'}",
                provider=provider,
                body=data,
            )
        ordered = sorted(enumerate(items), key=lambda pair: _index(pair[1], pair[0]))
        return [_vector(item, provider) for _, item in ordered]

    async def aclose(self) -> None:
        """Close the connections this embedder made in the running event loop."""
        await self._client.aclose()

    async def __aenter__(self) -> Self:
        await self._client.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _index(item: Any, position: int) -> int:
    index = item.get("index") if isinstance(item, dict) else None
    return index if isinstance(index, int) else position


def _vector(item: Any, provider: str) -> list[float]:
    vector = item.get("embedding") if isinstance(item, dict) else None
    if not isinstance(vector, list) or not all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in vector
    ):
        raise ResponseFormatError("an embedding is not a list of numbers", provider=provider)
    return [float(x) for x in vector]
