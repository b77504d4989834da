"""The embedded store's file: one self-checking binary file, replaced atomically.

Layout (little-endian):

```
magic      8 bytes   b"AGVECT01"
dimensions u32
count      u64
header     u64       length of the JSON records
crc32      u32       of the JSON records and the vectors
records    JSON      [[id, text, metadata], ...]
vectors    count x dimensions float32, row-major, unit length
```

A write goes to a temporary file in the same folder, is flushed to disk, and
only then renamed over the old file, so a crash at any point leaves either
the old file or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt
import orjson

from .._core._errors import DimensionMismatch, VectorStoreError

__all__ = ("Loaded", "read_store", "write_store")

MAGIC = b"AGVECT01"
_PREFIX = struct.Struct("<8sIQQI")

Loaded = tuple[npt.NDArray[np.float32], list[str], list[str], list[Mapping[str, Any]]]
"""What a store file holds: vectors, ids, texts and metadata, row by row."""


def write_store(
    path: Path,
    vectors: npt.NDArray[np.float32],
    ids: list[str],
    texts: list[str],
    metadata: list[Mapping[str, Any]],
) -> None:
    """Write the store to `path` atomically (blocking: call it from a worker thread)."""
    records = orjson.dumps([[i, t, dict(m)] for i, t, m in zip(ids, texts, metadata, strict=True)])
    matrix = np.ascontiguousarray(vectors, dtype="<f4")
    body = matrix.view(np.uint8).reshape(-1).data  # the raw bytes, without a copy
    crc = zlib.crc32(body, zlib.crc32(records))
    count, dims = matrix.shape
    prefix = _PREFIX.pack(MAGIC, dims, count, len(records), crc)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    replaced = False
    try:
        with os.fdopen(fd, "wb") as file:
            _write_all(file, (prefix, records, body))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
        replaced = True
    finally:
        if not replaced:
            with contextlib.suppress(OSError):
                os.unlink(temp)
    _sync_folder(path.parent)


def _write_all(file: BinaryIO, parts: tuple[bytes | memoryview, ...]) -> None:
    for part in parts:
        file.write(part)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (POSIX); a no-op where folders cannot be opened."""
    flags = getattr(os, "O_DIRECTORY", None)
    if flags is None:
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | flags)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_store(path: Path, *, dimensions: int | None = None) -> Loaded:
    """Read a store file (blocking), checking its format, length and checksum."""
    data = path.read_bytes()
    where = str(path)
    if len(data) < _PREFIX.size or not data.startswith(MAGIC):
        raise VectorStoreError("not an agentgraph vector store file (bad header)", path=where)
    _, dims, count, header, crc = _PREFIX.unpack_from(data)
    start = _PREFIX.size
    expected = start + header + count * dims * 4
    if len(data) != expected:
        raise VectorStoreError(
            f"the file is {len(data)} bytes but its header promises {expected}; "
            "it was cut short or altered",
            path=where,
        )
    records_end = start + header
    if zlib.crc32(data[records_end:], zlib.crc32(data[start:records_end])) != crc:
        raise VectorStoreError("checksum mismatch: the file is corrupt", path=where)
    if dimensions is not None and dims and dims != dimensions:
        raise DimensionMismatch(dimensions, dims, what="the store file", path=where)
    try:
        records = orjson.loads(data[start:records_end])
    except orjson.JSONDecodeError as exc:
        raise VectorStoreError(f"the records are not valid JSON: {exc}", path=where) from exc
    if (
        not isinstance(records, list)
        or len(records) != count
        or not all(_row_ok(r) for r in records)
    ):
        raise VectorStoreError(f"the records do not match the {count} vectors", path=where)
    vectors = np.frombuffer(data, dtype="<f4", count=count * dims, offset=records_end)
    matrix = vectors.reshape(count, dims).astype(np.float32, copy=False)
    return matrix, [r[0] for r in records], [r[1] for r in records], [r[2] for r in records]


def _row_ok(row: Any) -> bool:
    return (
        isinstance(row, list)
        and len(row) == 3
        and isinstance(row[0], str)
        and isinstance(row[1], str)
        and isinstance(row[2], dict)
    )
