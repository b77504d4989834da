"""Payloads: contexts as agentgraph's typed JSON, and large payloads kept out of the history.

Every value a run sends through Temporal (workflow input and result, activity
arguments and results, signals, queries) is converted by `ContextPayloadConverter`:
the tagged JSON of `agentgraph._core._json`, decoded only into agentgraph's own data
types and the classes of the `Types` it was made with. Conversion is
synchronous and does no I/O, as Temporal requires.

Temporal refuses a payload over 2 MB. `BlobCodec` moves any payload at or over
its threshold into content-addressed blob storage (a checkpoint store's
`put_blob`/`get_blob`, or any `BlobStore`) and sends a small reference in its
place; decoding fetches the blob back and checks its digest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    BinaryNullPayloadConverter,
    BinaryPlainPayloadConverter,
    CompositePayloadConverter,
    DataConverter,
    EncodingPayloadConverter,
    PayloadCodec,
)

from .._core._errors import CheckpointError, ContextDecodingError, ContextEncodingError
from .._core._json import NO_TYPES, Types, dumps_tagged, loads_tagged

__all__ = (
    "BLOB_THRESHOLD",
    "BlobCodec",
    "BlobStore",
    "ContextPayloadConverter",
    "data_converter",
)

ENCODING = "json/agentgraph"
_BLOB = b"agentgraph/blob"

BLOB_THRESHOLD = 1_000_000
"""Bytes at which `BlobCodec` offloads a payload: half of Temporal's 2 MB payload limit."""


class ContextPayloadConverter(EncodingPayloadConverter):
    """Any value agentgraph's typed JSON can hold, as a payload of encoding `json/agentgraph`.

    Values it cannot encode fall to the next converter of the composite (bytes
    and None go before it). Decoding constructs only the classes of `types`
    and agentgraph's own.
    """

    def __init__(self, types: Types = NO_TYPES) -> None:
        self._types = types

    @property
    def encoding(self) -> str:
        return ENCODING

    def to_payload(self, value: Any) -> Payload | None:
        try:
            data = dumps_tagged(value)
        except ContextEncodingError:
            return None
        return Payload(metadata={"encoding": ENCODING.encode()}, data=data)

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        return loads_tagged(payload.data, self._types)


def _converter_class(types: Types) -> type[CompositePayloadConverter]:
    """A payload converter class (Temporal makes it without arguments) decoding `types`."""

    class AgentgraphPayloadConverter(CompositePayloadConverter):
        def __init__(self) -> None:
            super().__init__(
                BinaryNullPayloadConverter(),
                BinaryPlainPayloadConverter(),
                ContextPayloadConverter(types),
            )

    return AgentgraphPayloadConverter


@runtime_checkable
class BlobStore(Protocol):
    """Content-addressed bytes: every checkpoint store of `agentgraph.checkpoint` is one.

    `put_blob` stores bytes under their SHA-256 digest (it may write behind;
    `BlobCodec` then awaits the store's `flush()`, when it has one) and returns
    the digest; `get_blob` returns the bytes stored under a digest.
    """

    def put_blob(self, data: bytes) -> str: ...

    async def get_blob(self, digest: str) -> bytes: ...


class BlobCodec(PayloadCodec):
    """Offloads payloads of `threshold` bytes or more to `blobs`, sending a reference instead.

    Both sides of a run (the client and every worker) need a codec over the
    same store. A reference whose blob is missing, or whose bytes do not match
    its digest, is a `CheckpointError`.
    """

    def __init__(self, blobs: BlobStore, *, threshold: int = BLOB_THRESHOLD) -> None:
        if not isinstance(blobs, BlobStore):
            raise TypeError(
                f"{type(blobs).__name__} is not a blob store: it needs put_blob and get_blob"
            )
        if threshold < 1:
            raise ValueError(f"threshold must be at least 1 byte, not {threshold}")
        self._blobs = blobs
        self._threshold = threshold

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        encoded: list[Payload] = []
        wrote = False
        for payload in payloads:
            if payload.ByteSize() < self._threshold:
                encoded.append(payload)
                continue
            data = payload.SerializeToString(deterministic=True)
            digest = self._blobs.put_blob(data)
            wrote = True
            metadata = {"encoding": _BLOB, "digest": digest.encode(), "size": b"%d" % len(data)}
            encoded.append(Payload(metadata=metadata))
        flush = getattr(self._blobs, "flush", None)
        if wrote and flush is not None:
            await flush()  # the reference may leave only once its blob is durable
        return encoded

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        decoded: list[Payload] = []
        for payload in payloads:
            if payload.metadata.get("encoding") != _BLOB:
                decoded.append(payload)
                continue
            digest = payload.metadata.get("digest", b"").decode()
            data = await self._blobs.get_blob(digest)
            if hashlib.sha256(data).hexdigest() != digest:
                raise CheckpointError(f"blob {digest!r} does not match its digest")
            try:
                decoded.append(Payload.FromString(data))
            except Exception as error:  # protobuf's DecodeError
                raise ContextDecodingError(f"blob {digest!r} is not a payload: {error}") from None
        return decoded


def data_converter(
    types: Types = NO_TYPES,
    *,
    blobs: BlobStore | None = None,
    threshold: int = BLOB_THRESHOLD,
) -> DataConverter:
    """Temporal's data converter for agentgraph runs.

    Args:
        types: the classes decoding may construct, beyond agentgraph's own.
        blobs: where payloads of `threshold` bytes or more go (see `BlobCodec`);
            None sends every payload as it is.
        threshold: the size in bytes at which a payload is offloaded.
    """
    codec = None if blobs is None else BlobCodec(blobs, threshold=threshold)
    return DataConverter(payload_converter_class=_converter_class(types), payload_codec=codec)
