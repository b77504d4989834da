"""The `VectorStore` protocol, its records, and `NumpyStore`: exact cosine search in one file."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, TypeVar, runtime_checkable

import anyio.to_thread
import attrs
import numpy as np

from .._core._errors import VectorStoreError
from ._file import read_store, write_store
from ._rows import (
    Filter,
    Matrix,
    Rows,
    as_matrix,
    empty_rows,
    filter_mask,
    json_metadata,
    unit_rows,
)

__all__ = ("Filter", "Hit", "NumpyStore", "Record", "VectorStore")

R = TypeVar("R")

# Above this many stored floats a search runs in a worker thread, off the event loop.
_INLINE_LIMIT = 1 << 18


def _frozen(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return value if isinstance(value, MappingProxyType) else MappingProxyType(dict(value))


@attrs.frozen
class Record:
    """What a store keeps per entry: an id, its vector, the passage text and its metadata."""

    id: str
    vector: Sequence[float]
    text: str = ""
    metadata: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen)


@attrs.frozen
class Hit:
    """A search result: the record's id, text and metadata, and its cosine similarity."""

    id: str
    score: float
    text: str
    metadata: Mapping[str, Any]


@runtime_checkable
class VectorStore(Protocol):
    """Vectors with text and metadata, searched by cosine similarity.

    ```python
    await store.upsert([Record("a", vector, "passage", {"source": "README.md"})])
    hits = await store.search(query_vector, k=4, where={"source": "README.md"})
    ```
    """

    @property
    def dimensions(self) -> int | None:
        """The vector length, or None while the store is empty and was given none."""
        ...

    async def add(self, records: Sequence[Record]) -> None:
        """Add new records; an id already in the store is an error."""
        ...

    async def upsert(self, records: Sequence[Record]) -> None:
        """Add records, replacing those whose id is already in the store."""
        ...

    async def delete(self, ids: Sequence[str]) -> int:
        """Remove records by id; returns how many were there."""
        ...

    async def get(self, ids: Sequence[str]) -> list[Record]:
        """The records with these ids, in the order asked; unknown ids are skipped."""
        ...

    async def ids(self, *, where: Filter | None = None) -> list[str]:
        """The ids of the stored records (those matching `where`), in insertion order."""
        ...

    async def search(
        self, vector: Sequence[float], *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]:
        """The `k` records most similar to `vector`, best first."""
        ...


class NumpyStore:
    """The embedded default `VectorStore`: exact cosine search with numpy, no server.

    ```python
    store = await NumpyStore.open("docs.vectors")   # loads the file if it exists
    await store.upsert(records)                      # written to the file at once
    hits = await store.search(vector, k=4)
    ```
    A store made with `NumpyStore()` lives in memory only. One opened on a
    file writes the whole store after every change (add, upsert, delete), to
    a temporary file renamed over the old one, so a crash never leaves a
    half-written store: batch records into few calls. Vectors are kept at
    unit length, so scores are cosine similarities. Metadata is kept as JSON
    data (tuples come back as lists). Changes run in a worker thread, one at
    a time; searches read a consistent state and never wait for them.

    Args:
        dimensions: the vector length; learned from the first record when None.
    """

    __slots__ = ("_lock", "_path", "_rows")

    def __init__(self, *, dimensions: int | None = None) -> None:
        if dimensions is not None and (
            isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1
        ):
            raise ValueError(f"dimensions must be a positive integer, not {dimensions!r}")
        self._rows = empty_rows(dimensions)
        self._path: Path | None = None
        self._lock = threading.Lock()

    @classmethod
    async def open(
        cls, path: str | os.PathLike[str], *, dimensions: int | None = None
    ) -> NumpyStore:
        """A store kept in the file at `path`: read now if it exists, created at the first change.

        Raises:
            VectorStoreError: the file is not a store, or is corrupt.
            DimensionMismatch: the file holds vectors of another length than `dimensions`.
            FileNotFoundError: the folder for the file does not exist.
        """
        store = cls(dimensions=dimensions)
        store._path = Path(path)
        loaded = await anyio.to_thread.run_sync(partial(_load, store._path, dimensions))
        if loaded is not None:
            store._rows = loaded
        return store

    @property
    def path(self) -> Path | None:
        """The file the store is kept in; None for a store in memory."""
        return self._path

    @property
    def dimensions(self) -> int | None:
        """The vector length, or None while the store is empty and was given none."""
        return self._rows.dimensions

    def __len__(self) -> int:
        return len(self._rows.ids)

    def __repr__(self) -> str:
        where = f" at {self._path}" if self._path else ""
        return f"<NumpyStore {len(self)} x {self.dimensions or '?'}{where}>"

    async def add(self, records: Sequence[Record]) -> None:
        """Add new records; an id already in the store is a `VectorStoreError`."""
        await self._change(partial(_add, list(records), replace=False))

    async def upsert(self, records: Sequence[Record]) -> None:
        """Add records, replacing those whose id is already in the store."""
        await self._change(partial(_add, list(records), replace=True))

    async def delete(self, ids: Sequence[str]) -> int:
        """Remove records by id; returns how many were there."""
        return await self._change(partial(_delete, _id_list(ids)))

    async def get(self, ids: Sequence[str]) -> list[Record]:
        """The records with these ids, in the order asked; unknown ids are skipped."""
        rows = self._rows
        found = [rows.index[i] for i in _id_list(ids) if i in rows.index]
        return [
            Record(rows.ids[r], rows.matrix[r].tolist(), rows.texts[r], rows.metadata[r])
            for r in found
        ]

    async def ids(self, *, where: Filter | None = None) -> list[str]:
        """The ids of the stored records (those matching `where`), in insertion order."""
        rows = self._rows
        if where is None:
            return list(rows.ids)
        mask = filter_mask(rows.metadata, where)
        return [rows.ids[r] for r in np.flatnonzero(mask)]

    async def search(
        self, vector: Sequence[float], *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]:
        """The `k` records most similar to `vector` (and matching `where`), best first.

        Raises:
            DimensionMismatch: `vector` has another length than the stored vectors.
            VectorStoreError: `vector` is zero or not finite.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, not {k!r}")
        rows = self._rows
        if not rows.ids:
            return []
        query = unit_rows(as_matrix([vector], rows.dimensions, "the query"), "the query")[0]
        if rows.matrix.size <= _INLINE_LIMIT:
            return _top_k(rows, query, k, where)
        return await anyio.to_thread.run_sync(_top_k, rows, query, k, where)

    async def _change(self, change: Callable[[Rows], tuple[Rows, R]]) -> R:
        return await anyio.to_thread.run_sync(self._apply, change)

    def _apply(self, change: Callable[[Rows], tuple[Rows, R]]) -> R:
        # Runs in a worker thread. The lock orders changes; the file is written
        # before the new state is published, so memory never runs ahead of disk.
        with self._lock:
            rows, result = change(self._rows)
            if rows is not self._rows:
                if self._path is not None:
                    write_store(self._path, rows.matrix, rows.ids, rows.texts, rows.metadata)
                self._rows = rows
            return result


def _load(path: Path, dimensions: int | None) -> Rows | None:
    if not path.parent.is_dir():
        raise FileNotFoundError(f"the folder for the vector store {path} does not exist")
    if not path.exists():
        return None
    matrix, ids, texts, metadata = read_store(path, dimensions=dimensions)
    if len(set(ids)) != len(ids):
        raise VectorStoreError("the file holds an id twice", path=str(path))
    if not ids and dimensions is not None:
        matrix = np.zeros((0, dimensions), np.float32)
    return Rows(matrix, ids, texts, [MappingProxyType(m) for m in metadata])


def _id_list(ids: Sequence[str]) -> list[str]:
    if isinstance(ids, str):
        raise TypeError("ids is a sequence of ids; wrap a single id in a list")
    return list(ids)


def _check_ids(records: list[Record]) -> None:
    seen: set[str] = set()
    for record in records:
        if not isinstance(record, Record):
            raise TypeError(f"a store takes Record objects, not {type(record).__name__}")
        if not isinstance(record.id, str) or not record.id:
            raise VectorStoreError(f"a record id is a non-empty string, not {record.id!r}")
        if record.id in seen:
            raise VectorStoreError(f"the batch holds the id {record.id!r} twice")
        seen.add(record.id)


def _add(records: list[Record], rows: Rows, *, replace: bool) -> tuple[Rows, None]:
    if not records:
        return rows, None
    _check_ids(records)
    if not replace:
        taken = [r.id for r in records if r.id in rows.index]
        if taken:
            raise VectorStoreError(
                f"ids already in the store: {taken[:5]}; use upsert to replace records"
            )
    what = "a record's vector" if len(records) > 1 else f"the vector of {records[0].id!r}"
    vectors = unit_rows(as_matrix([r.vector for r in records], rows.dimensions, what), what)
    metadata = [json_metadata(r.metadata, r.id) for r in records]
    if not any(r.id in rows.index for r in records):  # only new ids: append, no row loop
        matrix = np.concatenate([rows.matrix, vectors]) if rows.ids else vectors
        return Rows(
            matrix,
            [*rows.ids, *(r.id for r in records)],
            [*rows.texts, *(r.text for r in records)],
            [*rows.metadata, *metadata],
        ), None
    matrix = rows.matrix.copy()
    ids, texts, metas = list(rows.ids), list(rows.texts), list(rows.metadata)
    fresh: list[int] = []
    for position, record in enumerate(records):
        row = rows.index.get(record.id)
        if row is None:
            fresh.append(position)
            ids.append(record.id)
            texts.append(record.text)
            metas.append(metadata[position])
        else:
            matrix[row] = vectors[position]
            texts[row] = record.text
            metas[row] = metadata[position]
    matrix = np.concatenate([matrix, vectors[fresh]]) if fresh else matrix
    return Rows(matrix, ids, texts, metas), None


def _delete(ids: list[str], rows: Rows) -> tuple[Rows, int]:
    doomed = sorted({rows.index[i] for i in ids if i in rows.index})
    if not doomed:
        return rows, 0
    keep = np.ones(len(rows.ids), dtype=bool)
    keep[doomed] = False
    kept = np.flatnonzero(keep).tolist()
    new = Rows(
        rows.matrix[keep],
        [rows.ids[r] for r in kept],
        [rows.texts[r] for r in kept],
        [rows.metadata[r] for r in kept],
    )
    return new, len(doomed)


def _top_k(rows: Rows, query: Matrix, k: int, where: Filter | None) -> list[Hit]:
    # einsum rather than `@`: a matrix-vector product through a multithreaded BLAS hands
    # work to BLAS threads and back, which costs milliseconds on a busy machine.
    if where is None:
        picked = None
        scores = np.einsum("ij,j->i", rows.matrix, query)
    else:
        picked = np.flatnonzero(filter_mask(rows.metadata, where))
        if picked.size == 0:
            return []
        scores = np.einsum("ij,j->i", rows.matrix[picked], query)
    count = scores.shape[0]
    k = min(k, count)
    if k < count:
        # The k-th best score, then every row above it and the earliest rows equal to it:
        # which of several tied rows make the cut must not depend on the partition.
        floor = scores[np.argpartition(scores, count - k)[count - k :]].min()
        above = np.flatnonzero(scores > floor)
        top = np.concatenate([above, np.flatnonzero(scores == floor)[: k - above.size]])
    else:
        top = np.arange(k)
    top = top[np.lexsort((top, -scores[top]))]  # best first; ties by insertion order
    found = picked[top] if picked is not None else top
    return [
        Hit(rows.ids[row], float(scores[at]), rows.texts[row], rows.metadata[row])
        for row, at in zip(found.tolist(), top.tolist(), strict=True)
    ]
