"""What a SQL store can do itself: value filters in SQL, vectors kept as one matrix.

`Where` is the part of a search's filter that a database can check exactly:
value fields that must equal a JSON scalar (a string, a number small enough
to compare exactly, a boolean or null). The store's SQL narrows the rows by
it, and `MemoryBase` still checks the whole filter on what comes back, so a
filter SQL cannot express (a predicate, a list, a dict) is only slower,
never answered differently.

`VectorCache` keeps the vectors under a few prefixes as one float32 matrix
per prefix, with each row's expiry, stamped with the store's change count (a
counter every write transaction raises, from any process). A search whose
stamp still matches scores the matrix without reading a vector from disk; any
write anywhere in the store makes the next search load the prefix again.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt
import orjson

from ..rag._rows import Filter, Matrix

__all__ = (
    "CACHED_PREFIXES",
    "NOTHING",
    "Loaded",
    "VectorCache",
    "Where",
    "load",
    "pushdown",
    "top",
    "wrong_size",
)

CACHED_PREFIXES = 8
"""How many prefixes' vectors a store keeps in memory (least recently searched go first)."""

_EXACT = 2**53
"""Numbers below this size compare the same as JSON in SQL and in Python."""


@attrs.frozen
class Where:
    """Value fields that must equal JSON scalars, and whether that is the whole filter."""

    equal: tuple[tuple[str, Any], ...] = ()
    complete: bool = True

    @property
    def fields(self) -> bool:
        return bool(self.equal)


NOTHING = Where()


def pushdown(where: Filter | None) -> Where:
    """The part of `where` a database checks exactly (see the module's docstring)."""
    if where is None:
        return NOTHING
    if not isinstance(where, Mapping):
        return Where((), False)
    # Through JSON, as `filter_mask` compares: tuples become lists, and so on.
    wanted = orjson.loads(orjson.dumps(dict(where)))
    equal = tuple((k, v) for k, v in wanted.items() if _scalar(v) and _plain(k))
    return Where(equal, len(equal) == len(wanted))


def _plain(field: str) -> bool:
    """A field name a JSON path can quote without escapes."""
    return '"' not in field and "\\" not in field


def _scalar(value: Any) -> bool:
    if value is None or isinstance(value, bool | str):
        return True
    if isinstance(value, int | float):
        return math.isfinite(value) and abs(value) < _EXACT
    return False


@attrs.frozen
class Loaded:
    """The vectors under one prefix at one change count: `refs[i]` names row `i`."""

    version: int
    refs: list[Any]
    expires: npt.NDArray[np.float64]
    """When each row expires; +inf for never."""
    matrix: Matrix


class VectorCache:
    """The last few prefixes' vectors, each valid while the store's change count holds."""

    def __init__(self, size: int = CACHED_PREFIXES) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[str, ...], Loaded] = OrderedDict()

    def get(self, prefix: tuple[str, ...], version: int) -> Loaded | None:
        found = self._entries.get(prefix)
        if found is None or found.version != version:
            return None
        self._entries.move_to_end(prefix)
        return found

    def put(self, prefix: tuple[str, ...], loaded: Loaded) -> None:
        self._entries[prefix] = loaded
        self._entries.move_to_end(prefix)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def vectors(
        self,
        prefix: tuple[str, ...],
        version: int,
        read: Callable[[], Sequence[tuple[Any, float | None, Any]]],
        damaged: Callable[[Any, str], Exception],
        query: Matrix,
    ) -> Loaded:
        """The vectors under `prefix` at change count `version`: kept ones, else `read()`'s
        rows stacked (see `load`) and kept.

        Raises `damaged(ref, why)` for a damaged vector, or when the vectors are not
        of `query`'s size.
        """
        loaded = self.get(prefix, version)
        if loaded is None:
            loaded = load(version, read(), damaged)
            self.put(prefix, loaded)
        if loaded.refs and loaded.matrix.shape[1] != query.shape[0]:
            raise damaged(loaded.refs[0], wrong_size(loaded.matrix.shape[1], query.shape[0]))
        return loaded


def load(
    version: int,
    rows: Sequence[tuple[Any, float | None, Any]],
    damaged: Callable[[Any, str], Exception],
) -> Loaded:
    """Stack `(ref, expires, vector)` rows into one matrix; `damaged(ref, why)` for a bad one."""
    if not rows:
        return Loaded(version, [], np.zeros(0), np.zeros((0, 0), np.float32))
    first = rows[0][2]
    size = len(first) if isinstance(first, bytes) else 0
    for ref, _, vector in rows:
        if not isinstance(vector, bytes) or len(vector) != size or size % 4 or not size:
            raise damaged(ref, "its vector is damaged, or has another length than the others")
    matrix = np.frombuffer(b"".join(r[2] for r in rows), np.float32).reshape(len(rows), -1)
    expires = np.array([math.inf if r[1] is None else r[1] for r in rows], np.float64)
    return Loaded(version, [r[0] for r in rows], expires, matrix)


def wrong_size(size: int, query: int) -> str:
    """Why an item's vector of `size` dimensions cannot be scored against a `query`-sized one."""
    return (
        f"its vector has {size} dimensions, the query {query}: "
        "search with the embedder the items were stored with"
    )


def top(
    loaded: Loaded,
    query: Matrix,
    now: float,
    allowed: set[Any] | None,
    limit: int,
) -> list[tuple[Any, float]]:
    """The best `limit` live rows for `query` (among `allowed` refs), best first, ties by row."""
    if not loaded.refs:
        return []
    live = loaded.expires > now
    if allowed is not None:
        live &= np.fromiter((ref in allowed for ref in loaded.refs), bool, len(loaded.refs))
    rows = np.flatnonzero(live)
    if not len(rows):
        return []
    scores = loaded.matrix[rows] @ query if len(rows) < len(live) else loaded.matrix @ query
    if limit < len(rows):
        best = np.argpartition(-scores, limit - 1)[:limit]
        # Rows tied with the last one kept may sit outside the partition: take them too.
        edge = scores[best].min()
        best = np.flatnonzero(scores >= edge)
    else:
        best = np.arange(len(rows))
    order = best[np.lexsort((best, -scores[best]))][:limit]
    return [(loaded.refs[rows[i]], float(scores[i])) for i in order.tolist()]
