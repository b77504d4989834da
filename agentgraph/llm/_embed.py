"""The `Embedder` protocol and its OpenAI (`/embeddings`) and Ollama (`/api/embed`) clients."""

from __future__ import annotations

import abc
import base64
import binascii
import sys
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import httpx

from .._core._errors import ProviderConfigError, ResponseFormatError
from ._embedder import Embedder as Embedder
from ._embedder import checked_texts as checked_texts
from ._http import ProviderRetry
from ._ollama import OLLAMA_BASE_URL
from ._openai import OPENAI_BASE_URL, OPENAI_KEY
from ._transport import HttpClientBase

__all__ = ("Embedder", "OllamaEmbedder", "OpenAIEmbedder")


def _floats(value: Any, *, provider: str) -> list[float]:
    if isinstance(value, list):
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in value):
            raise ResponseFormatError(
                "embedding holds a value that is not a number", provider=provider
            )
        return [float(x) for x in value]
    if isinstance(value, str):  # base64 of little-endian float32
        try:
            raw = base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise ResponseFormatError("embedding is not valid base64", provider=provider) from exc
        if len(raw) % 4:
            raise ResponseFormatError("base64 embedding is not whole float32s", provider=provider)
        vector = array("f")
        vector.frombytes(raw)
        if sys.byteorder == "big":
            vector.byteswap()
        return vector.tolist()
    raise ResponseFormatError("embedding is neither a list nor base64", provider=provider)


def _checked_batch(value: int, *, provider: str, limit: int | None = None) -> int:
    if value < 1 or (limit is not None and value > limit):
        bounds = "at least 1" if limit is None else f"within 1..{limit}"
        raise ProviderConfigError(f"batch_size must be {bounds}, got {value}", provider=provider)
    return value


class _EmbedderBase(HttpClientBase, abc.ABC):
    __slots__ = ("_batch_size", "_dimensions")

    _dimensions: int | None
    _batch_size: int

    @property
    def dimensions(self) -> int | None:
        """The vector length: as configured, else learned from the first answer, else `None`."""
        return self._dimensions

    def _batches(self, items: list[str]) -> list[list[str]]:
        """`items` in batches of at most `batch_size` texts."""
        return [items[i : i + self._batch_size] for i in range(0, len(items), self._batch_size)]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; sent in batches the provider accepts."""
        items = checked_texts(texts)
        vectors: list[list[float]] = []
        for batch in self._batches(items):
            got = await self._embed_batch(batch)
            if len(got) != len(batch):
                raise ResponseFormatError(
                    f"asked for {len(batch)} embeddings, got {len(got)}",
                    provider=self._http.provider,
                )
            vectors.extend(got)
        if vectors and self._dimensions is None:
            self._dimensions = len(vectors[0])
        return vectors

    @abc.abstractmethod
    async def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        """The vectors of one batch, in input order."""


def estimate_tokens(text: str) -> int:
    """A token count that errs high: BPE tokens are never more than UTF-8 bytes, and
    rarely fewer than three bytes in prose."""
    return len(text.encode("utf-8")) // 3 + 1


class OpenAIEmbedder(_EmbedderBase):
    """An `Embedder` over `POST {base_url}/embeddings` (OpenAI and compatible servers).

    Requests respect the API's limits: at most `batch_size` texts (2,048 at
    most) and `max_batch_tokens` tokens summed (300,000), each text at most
    `max_input_tokens` (8,192; a longer one is refused before anything is
    sent: chunk it first). Tokens are counted with `count_tokens`, by default
    an estimate that errs high (pass `tiktoken_counter()` for exact counts).

    Args:
        model: e.g. `text-embedding-3-small`.
        dimensions: sent as `dimensions` (only `text-embedding-3*` and later accept it).
        encoding_format: `base64` (compact float32, the default) or `float`.
        batch_size: texts per request (the API takes at most 2048).
        max_batch_tokens, max_input_tokens, count_tokens: the token limits, as above.
        api_key, base_url, headers, http_client, timeout, retry, provider: as for `OpenAIModel`.
    """

    __slots__ = ("_count", "_encoding", "_max_batch_tokens", "_max_input_tokens")

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        api_key: str | None = None,
        base_url: str = OPENAI_BASE_URL,
        dimensions: int | None = None,
        encoding_format: Literal["base64", "float"] = "base64",
        batch_size: int = 512,
        max_batch_tokens: int = 300_000,
        max_input_tokens: int = 8_192,
        count_tokens: Callable[[str], int] = estimate_tokens,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout | None = None,
        retry: ProviderRetry | None = None,
        provider: str = "openai",
    ) -> None:
        OPENAI_KEY.check(api_key, base_url, provider=provider)
        self._max_batch_tokens = max_batch_tokens
        self._max_input_tokens = max_input_tokens
        self._count = count_tokens
        self._batch_size = _checked_batch(batch_size, provider=provider, limit=2048)
        super().__init__(
            model, provider, base_url, headers, http_client, timeout, retry, api_key=api_key
        )
        self._dimensions = dimensions
        self._encoding = encoding_format

    def _batches(self, items: list[str]) -> list[list[str]]:
        batches: list[list[str]] = []
        batch: list[str] = []
        tokens = 0
        for index, text in enumerate(items):
            count = self._count(text)
            if count > self._max_input_tokens:
                raise ProviderConfigError(
                    f"text {index} has about {count:,} tokens, over the {self._max_input_tokens:,} "
                    "one input may have: split it (agentgraph.rag.chunk) before embedding",
                    provider=self._http.provider,
                )
            full = len(batch) >= self._batch_size or tokens + count > self._max_batch_tokens
            if batch and full:
                batches.append(batch)
                batch, tokens = [], 0
            batch.append(text)
            tokens += count
        if batch:
            batches.append(batch)
        return batches

    async def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {
            "model": self._model,
            "input": batch,
            "encoding_format": self._encoding,
        }
        if self._dimensions is not None:
            body["dimensions"] = self._dimensions
        data = await self._http.post("/embeddings", body)
        provider = self._http.provider
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ResponseFormatError("answer has no data list", provider=provider, body=data)
        # `index` is the input position; the list order is not a promise.
        ordered = sorted(enumerate(items), key=lambda pair: pair[1].get("index", pair[0]))
        return [_floats(item.get("embedding"), provider=provider) for _, item in ordered]


class OllamaEmbedder(_EmbedderBase):
    """An `Embedder` over Ollama's `POST {base_url}/api/embed`.

    Args:
        model: e.g. `nomic-embed-text`.
        dimensions: sent as `dimensions` (models that support truncation).
        truncate: cut inputs longer than the context instead of failing.
        keep_alive: how long the server keeps the model loaded.
        batch_size: texts per request.
        base_url, api_key, headers, http_client, timeout, retry, provider: as for `OllamaModel`.
    """

    __slots__ = ("_keep_alive", "_truncate")

    def __init__(
        self,
        model: str,
        *,
        base_url: str = OLLAMA_BASE_URL,
        api_key: str | None = None,
        dimensions: int | None = None,
        truncate: bool = True,
        keep_alive: str | float | None = None,
        batch_size: int = 256,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout | None = None,
        retry: ProviderRetry | None = None,
        provider: str = "ollama",
    ) -> None:
        self._batch_size = _checked_batch(batch_size, provider=provider)
        super().__init__(
            model, provider, base_url, headers, http_client, timeout, retry, api_key=api_key
        )
        self._dimensions = dimensions
        self._truncate = truncate
        self._keep_alive = keep_alive

    async def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self._model, "input": batch, "truncate": self._truncate}
        if self._dimensions is not None:
            body["dimensions"] = self._dimensions
        if self._keep_alive is not None:
            body["keep_alive"] = self._keep_alive
        data = await self._http.post("/api/embed", body)
        vectors = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(vectors, list):
            raise ResponseFormatError(
                "answer has no embeddings list", provider=self._http.provider, body=data
            )
        return [_floats(vector, provider=self._http.provider) for vector in vectors]
