"""The embedded store's state as immutable numpy rows, and the checks records pass."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from .._core._errors import DimensionMismatch, VectorStoreError

__all__ = (
    "Filter",
    "Matrix",
    "Rows",
    "as_matrix",
    "empty_rows",
    "filter_mask",
    "json_metadata",
    "unit_rows",
)

Matrix = npt.NDArray[np.float32]

Filter = Mapping[str, Any] | Callable[[Mapping[str, Any]], bool]
"""Which records a search or listing may return: metadata keys and the values they must
equal (`{"source": "README.md"}`), or a predicate on a record's metadata."""

_MISSING = object()


class Rows:
    """One immutable state of a store; a change builds a new one."""

    __slots__ = ("ids", "index", "matrix", "metadata", "texts")

    def __init__(
        self,
        matrix: Matrix,
        ids: list[str],
        texts: list[str],
        metadata: list[Mapping[str, Any]],
    ) -> None:
        self.matrix = matrix
        self.ids = ids
        self.texts = texts
        self.metadata = metadata
        self.index = {record_id: row for row, record_id in enumerate(ids)}

    @property
    def dimensions(self) -> int | None:
        return self.matrix.shape[1] or None


def empty_rows(dimensions: int | None) -> Rows:
    return Rows(np.zeros((0, dimensions or 0), np.float32), [], [], [])


def as_matrix(vectors: Sequence[Any], dimensions: int | None, what: str) -> Matrix:
    expected = dimensions or len(vectors[0])
    for vector in vectors:
        if len(vector) != expected:
            raise DimensionMismatch(expected, len(vector), what=what)
    try:
        if all(isinstance(v, np.ndarray) for v in vectors):
            matrix = np.stack(vectors).astype(np.float32, copy=False)  # rows from numpy: no loop
        else:
            matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise VectorStoreError(f"{what} holds a value that is not a number") from exc
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise VectorStoreError(f"{what} is not a non-empty list of numbers")
    return matrix


def unit_rows(matrix: Matrix, what: str) -> Matrix:
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    if not np.isfinite(norms).all():  # a NaN or an infinity anywhere makes its norm one too
        if not np.isfinite(matrix).all():
            raise VectorStoreError(f"{what} holds a NaN or an infinity")
        raise VectorStoreError(f"{what} holds values too large for float32 arithmetic")
    if (norms == 0).any():
        raise VectorStoreError(f"{what} is a zero vector, which has no direction to compare")
    matrix /= norms[:, None]  # in place: `as_matrix` always hands over a fresh array
    return matrix


_NO_METADATA: Mapping[str, Any] = MappingProxyType({})


def json_metadata(metadata: Mapping[str, Any], record_id: str) -> Mapping[str, Any]:
    if not metadata:
        return _NO_METADATA
    try:
        return MappingProxyType(orjson.loads(orjson.dumps(dict(metadata))))
    except TypeError as exc:
        raise VectorStoreError(f"the metadata of {record_id!r} is not JSON data: {exc}") from exc


def _json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: `true` is not `1` (as Python has it), but `1` is `1.0`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping | list | tuple) or isinstance(b, Mapping | list | tuple):
        return False
    return bool(a == b)


def filter_mask(metadata: list[Mapping[str, Any]], where: Filter) -> npt.NDArray[np.bool_]:
    if isinstance(where, Mapping):
        try:
            wanted = list(orjson.loads(orjson.dumps(dict(where))).items())
        except TypeError as exc:
            raise TypeError(
                f"a metadata filter holds values that are not JSON data: {exc}"
            ) from exc
        matches = (
            all(_json_equal(m.get(key, _MISSING), value) for key, value in wanted) for m in metadata
        )
    elif callable(where):
        matches = (bool(where(m)) for m in metadata)
    else:
        raise TypeError(f"where is a mapping or a predicate, not {type(where).__name__}")
    return np.fromiter(matches, dtype=bool, count=len(metadata))
