"""`MemoryBase`: the `Memory` protocol over a few storage hooks a backend fills in.

Everything that does not depend on where rows live happens here, once: the
checks on namespaces, keys and values, the text a value is searched by, the
embedding of a put's batch (before any row is written, so a failing embedder
stores nothing), filters, scores and limits. A backend stores `Row`s,
applies each effect id at most once, and finds candidates for a search.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import orjson

from ..llm._embedder import Embedder
from ..rag._rows import Filter, Matrix, filter_mask
from ._errors import MemoryDataError, MemoryEmbedError, MemoryInputError
from ._items import (
    Item,
    MemoryHit,
    Namespace,
    check_key,
    check_limit,
    check_namespace,
    check_text,
    check_ttl,
    encode_value,
    indexed_text,
    terms,
)
from ._pushdown import NOTHING, Where, pushdown, wrong_size

__all__ = ("Clock", "Found", "MemoryBase", "Row", "effect_result", "hit", "items_result")

Clock = Callable[[], float]

KEEP_EFFECTS = 30 * 86400.0
"""Seconds a store remembers an applied effect id by default (see `MemoryBase.prune_effects`)."""
PRUNE_EVERY = 60.0
"""Seconds between a store's own prunings of old effect ids."""


@attrs.frozen
class Row:
    """One value of a put, checked and ready to store."""

    key: str
    value: dict[str, Any]
    raw: bytes
    text: str
    vector: bytes | None


@attrs.frozen
class Found:
    """A search candidate: the item, its indexed text, and its vector or keyword score."""

    item: Item
    text: str
    vector: bytes | None = None
    score: float = 0.0


def items_result(items: Sequence[Item]) -> bytes:
    """A put's outcome as an effect's stored result."""
    return orjson.dumps([item.to_data() for item in items])


def effect_result(raw: bytes, effect: str) -> Any:
    """The outcome an effect stored: a list of items (put) or a bool (delete)."""
    try:
        data = orjson.loads(raw)
        if isinstance(data, bool):
            return data
        return [Item.from_data(d) for d in data]
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise MemoryDataError(
            "effects", effect, f"its recorded result is unreadable: {exc}"
        ) from exc


class MemoryBase(ABC):
    """The shared half of every memory store; subclasses implement the `_` hooks.

    Args:
        embedder: embeds values on put and queries on search (semantic search);
            without one, a query is matched by its words (keyword search).
        index: the value fields whose strings are searched; None for every
            top-level string (and list of strings) of the value.
        clock: seconds since the epoch; inject one to test expiry.
        keep_effects: seconds an applied effect id is remembered (see
            `prune_effects`); None to remember every one for good.
    """

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        index: Sequence[str] | None = None,
        clock: Clock = time.time,
        keep_effects: float | None = KEEP_EFFECTS,
    ) -> None:
        if embedder is not None and not isinstance(embedder, Embedder):
            raise TypeError(f"embedder is an Embedder, not {type(embedder).__name__}")
        if isinstance(index, str):
            raise TypeError("index is a sequence of field names; wrap a single name in a list")
        if keep_effects is not None:
            check_ttl(keep_effects, "keep_effects")
        self.embedder = embedder
        self.index = None if index is None else tuple(index)
        self.clock = clock
        self.keep_effects = keep_effects
        self._pruned = -math.inf

    async def prune_effects(self, *, older_than: float | None = None) -> int:
        """Forget the effect ids applied more than `older_than` seconds ago; returns how many.

        A store remembers each effect id it applied, so that a run resumed after
        a crash does not apply its write twice. The record would grow with every
        journaled write; stores prune it themselves, at most once a minute,
        keeping `keep_effects` seconds (30 days unless given). The trade-off: a
        run resumed after its effect ids were pruned, whose journal missed a
        write (the crash came between the store's commit and the journal's),
        applies that write again. Keep effects longer than runs wait to resume.
        """
        horizon = self.keep_effects if older_than is None else older_than
        if horizon is None:
            return 0
        check_ttl(horizon, "older_than")
        return await self._prune(self.clock() - horizon)

    async def _prune_now_and_then(self, now: float) -> None:
        if self.keep_effects is not None and now - self._pruned >= PRUNE_EVERY:
            self._pruned = now
            await self._prune(now - self.keep_effects)

    # -- the protocol -------------------------------------------------------------------
    async def put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, Any],
        *,
        ttl: float | None = None,
        effect: str | None = None,
    ) -> Item:
        """Store `value` (a JSON object) under `key`, replacing what was there.

        Raises:
            MemoryInputError: a bad namespace, key, value or ttl.
            MemoryEmbedError: the embedder failed; nothing was stored.
        """
        check_key(key)
        return (await self.put_many(namespace, {key: value}, ttl=ttl, effect=effect))[0]

    async def put_many(
        self,
        namespace: Sequence[str],
        values: Mapping[str, Mapping[str, Any]],
        *,
        ttl: float | None = None,
        effect: str | None = None,
    ) -> list[Item]:
        """Store several values in one namespace: one embedding batch, all or nothing."""
        ns = check_namespace(namespace)
        if not isinstance(values, Mapping):
            raise MemoryInputError("values", f"is a mapping of keys to values, not {type(values)}")
        if not values:
            return []
        expires_in = check_ttl(ttl)
        keys = [check_key(k) for k in values]
        encoded = [encode_value(values[k], f"value of {k!r}") for k in keys]
        texts = [indexed_text(data, self.index) for data, _ in encoded]
        vectors = await self._vectors(ns, keys, texts)
        rows = [
            Row(k, data, raw, text, vector)
            for k, (data, raw), text, vector in zip(keys, encoded, texts, vectors, strict=True)
        ]
        now = self.clock()
        expires = None if expires_in is None else now + expires_in
        items = await self._write(ns, rows, now, expires, effect)
        if effect is not None:
            await self._prune_now_and_then(now)
        return items

    async def get(self, namespace: Sequence[str], key: str) -> Item | None:
        """The item under `key`, or None when there is none or it expired."""
        return await self._get(check_namespace(namespace), check_key(key), self.clock())

    async def delete(
        self, namespace: Sequence[str], key: str, *, effect: str | None = None
    ) -> bool:
        """Remove the item under `key`; returns whether a live one was there."""
        ns, key = check_namespace(namespace), check_key(key)
        now = self.clock()
        there = await self._delete(ns, key, now, effect)
        if effect is not None:
            await self._prune_now_and_then(now)
        return there

    async def search(
        self,
        namespace_prefix: Sequence[str],
        query: str | None = None,
        *,
        filter: Filter | None = None,
        limit: int = 10,
    ) -> list[MemoryHit]:
        """Items under `namespace_prefix` matching `filter`, best for `query` first.

        With an embedder the query is compared by meaning (cosine similarity of
        the embeddings); without one, by its words (items holding any of them,
        the most matching first). Without a query, items come newest first.
        `filter` is a mapping of value fields to the values they must equal, or
        a predicate on the value.
        """
        prefix = check_namespace(namespace_prefix, prefix=True)
        check_limit(limit)
        if filter is not None and not (isinstance(filter, Mapping) or callable(filter)):
            raise MemoryInputError("filter", f"is a mapping or a predicate, not {type(filter)}")
        if isinstance(filter, Mapping):
            try:
                orjson.dumps(dict(filter))
            except TypeError as exc:
                raise MemoryInputError("filter", f"holds values that are not JSON: {exc}") from exc
            encode_value(filter, "filter")  # text every store compares the same way
        if query is not None and not isinstance(query, str):
            raise MemoryInputError("query", f"is a string or None, not {type(query).__name__}")
        if query is not None:
            check_text(query, "query")
        now = self.clock()
        where = pushdown(filter)
        if query is None:
            newest = limit if where.complete else None
            scanned = await self._scan(prefix, now, vectors=False, where=where, newest=newest)
            found = _filtered(scanned, filter)
            found.sort(key=lambda f: (-f.item.updated, f.item.namespace, f.item.key))
            return [hit(f, 0.0) for f in found[:limit]]
        if self.embedder is None:
            words = terms(query)
            if not words:
                return []
            found = _filtered(await self._keyword(prefix, words, now), filter)
            found.sort(key=lambda f: (-f.score, f.item.namespace, f.item.key))
            return [hit(f, f.score) for f in found[:limit]]
        query_vector = (await self._embed_query(query))[0]
        if where.complete:
            hits = await self._semantic(prefix, now, query_vector, where, limit)
            if hits is not None:
                return hits
        scanned = await self._scan(prefix, now, vectors=True, where=where)
        candidates = [f for f in scanned if f.vector]
        return _nearest(_filtered(candidates, filter), query_vector, limit)

    async def list_namespaces(
        self, prefix: Sequence[str] = (), *, max_depth: int | None = None, limit: int = 100
    ) -> list[Namespace]:
        """The namespaces under `prefix` that hold live items, sorted, cut to `max_depth`."""
        start = check_namespace(prefix, prefix=True)
        check_limit(limit)
        if max_depth is not None:
            check_limit(max_depth, "max_depth")
        found = await self._namespaces(start, self.clock())
        if max_depth is not None:
            found = {ns[:max_depth] for ns in found}
        return sorted(found)[:limit]

    # -- embeddings ---------------------------------------------------------------------
    async def _vectors(
        self, ns: Namespace, keys: list[str], texts: list[str]
    ) -> list[bytes | None]:
        if self.embedder is None:
            return [None] * len(texts)
        todo = [i for i, text in enumerate(texts) if text]
        out: list[bytes | None] = [None] * len(texts)
        if not todo:
            return out
        try:
            vectors = await self.embedder.embed([texts[i] for i in todo])
            matrix = _unit_matrix(vectors, len(todo))
        except Exception as exc:  # the embedder's own failure, whatever its type
            raise MemoryEmbedError(ns, keys, f"{type(exc).__name__}: {exc}") from exc
        for row, i in enumerate(todo):
            out[i] = matrix[row].tobytes()
        return out

    async def _embed_query(self, query: str) -> Matrix:
        assert self.embedder is not None
        return _unit_matrix(await self.embedder.embed([query]), 1)

    # -- the backend's hooks ------------------------------------------------------------
    @abstractmethod
    async def _write(
        self,
        ns: Namespace,
        rows: list[Row],
        now: float,
        expires: float | None,
        effect: str | None,
    ) -> list[Item]: ...

    @abstractmethod
    async def _get(self, ns: Namespace, key: str, now: float) -> Item | None: ...

    @abstractmethod
    async def _prune(self, before: float) -> int:
        """Forget the effect ids applied before `before`; how many there were."""

    @abstractmethod
    async def _delete(self, ns: Namespace, key: str, now: float, effect: str | None) -> bool: ...

    @abstractmethod
    async def _scan(
        self,
        prefix: Namespace,
        now: float,
        *,
        vectors: bool,
        where: Where = NOTHING,
        newest: int | None = None,
    ) -> list[Found]:
        """Every live item under `prefix` (with its vector when `vectors`).

        A backend may leave out items that `where` rules out, and with `newest`
        every item but the `newest` most recently updated (and any tied with the
        last of them): the caller filters and orders what it gets again.
        """

    async def _semantic(
        self, prefix: Namespace, now: float, query: Matrix, where: Where, limit: int
    ) -> list[MemoryHit] | None:
        """The `limit` nearest live items matching `where` (the whole filter), or None
        to have `search` score what `_scan` returns."""
        return None

    @abstractmethod
    async def _keyword(self, prefix: Namespace, words: list[str], now: float) -> list[Found]:
        """Live items under `prefix` holding any of `words`, scored (higher is better)."""

    @abstractmethod
    async def _namespaces(self, prefix: Namespace, now: float) -> set[Namespace]: ...


def _unit_matrix(vectors: Sequence[Sequence[float]], count: int) -> Matrix:
    if len(vectors) != count:
        raise ValueError(f"the embedder returned {len(vectors)} vectors for {count} texts")
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
        raise ValueError("the embedder returned vectors that are not finite lists of numbers")
    norms = np.linalg.norm(matrix, axis=1)
    if (norms == 0).any():
        raise ValueError("the embedder returned a zero vector")
    out: Matrix = matrix / norms[:, None]
    return out


def _filtered(found: list[Found], where: Filter | None) -> list[Found]:
    if where is None or not found:
        return found
    try:
        mask = filter_mask([f.item.value for f in found], where)
    except TypeError as exc:
        raise MemoryInputError("filter", str(exc)) from exc
    return [f for f, keep in zip(found, mask.tolist(), strict=True) if keep]


def _nearest(found: list[Found], query: Matrix, limit: int) -> list[MemoryHit]:
    if not found:
        return []
    size = len(found[0].vector or b"")
    for f in found:
        if len(f.vector or b"") != size or size % 4:
            reason = "its vector is damaged, or has another length than the others"
            raise MemoryDataError(f.item.namespace, f.item.key, reason)
    joined = b"".join(f.vector or b"" for f in found)
    matrix = np.frombuffer(joined, np.float32).reshape(len(found), -1)
    if matrix.shape[1] != query.shape[0]:
        first = found[0].item
        raise MemoryDataError(
            first.namespace, first.key, wrong_size(matrix.shape[1], query.shape[0])
        )
    scores = np.einsum("ij,j->i", matrix, query)
    order = np.argsort(-scores, kind="stable")[:limit]
    return [hit(found[i], float(scores[i])) for i in order.tolist()]


def hit(found: Found, score: float) -> MemoryHit:
    """`found` as a search result with `score`."""
    item = found.item
    return MemoryHit(item.key, score, found.text, item.value, item)
