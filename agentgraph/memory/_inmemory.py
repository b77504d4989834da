"""`InMemoryMemory`: a memory store in a dict, for tests and single-process agents."""

from __future__ import annotations

import time
from collections.abc import Sequence

import anyio.lowlevel
import attrs
import orjson

from ..llm._embedder import Embedder
from ._base import KEEP_EFFECTS, Clock, Found, MemoryBase, Row
from ._items import Item, Namespace, terms
from ._pushdown import NOTHING, Where

__all__ = ("InMemoryMemory",)


class InMemoryMemory(MemoryBase):
    """Keeps items in this process only; they are gone when it ends.

    ```python
    memory = InMemoryMemory()
    await memory.put(("user", "42"), "diet", {"text": "vegetarian"})
    ```
    Searches compare against every item under the prefix (exact, no index).
    See `MemoryBase` for the arguments.
    """

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        index: Sequence[str] | None = None,
        clock: Clock = time.time,
        keep_effects: float | None = KEEP_EFFECTS,
    ) -> None:
        super().__init__(embedder=embedder, index=index, clock=clock, keep_effects=keep_effects)
        self._items: dict[tuple[Namespace, str], Found] = {}
        self._effects: dict[str, tuple[float, object]] = {}

    def __len__(self) -> int:
        return len(self._items)

    async def _write(
        self,
        ns: Namespace,
        rows: list[Row],
        now: float,
        expires: float | None,
        effect: str | None,
    ) -> list[Item]:
        await anyio.lowlevel.checkpoint()
        if effect is not None and effect in self._effects:
            done: list[Item] = self._effects[effect][1]  # type: ignore[assignment]
            return [_own(item) for item in done]
        items = []
        for row in rows:
            old = self._live(ns, row.key, now)
            version, created = (1, now) if old is None else (old.version + 1, old.created)
            item = Item(ns, row.key, row.value, version, created, now, expires)
            self._items[(ns, row.key)] = Found(_own(item), row.text, row.vector)
            items.append(item)
        if effect is not None:
            self._effects[effect] = (now, [_own(item) for item in items])
        return items

    async def _prune(self, before: float) -> int:
        await anyio.lowlevel.checkpoint()
        old = [effect for effect, (at, _) in self._effects.items() if at < before]
        for effect in old:
            del self._effects[effect]
        return len(old)

    async def _get(self, ns: Namespace, key: str, now: float) -> Item | None:
        await anyio.lowlevel.checkpoint()
        item = self._live(ns, key, now)
        return None if item is None else _own(item)

    async def _delete(self, ns: Namespace, key: str, now: float, effect: str | None) -> bool:
        await anyio.lowlevel.checkpoint()
        if effect is not None and effect in self._effects:
            return bool(self._effects[effect][1])
        there = self._live(ns, key, now) is not None
        self._items.pop((ns, key), None)
        if effect is not None:
            self._effects[effect] = (now, there)
        return there

    async def _scan(
        self,
        prefix: Namespace,
        now: float,
        *,
        vectors: bool,
        where: Where = NOTHING,
        newest: int | None = None,
    ) -> list[Found]:
        await anyio.lowlevel.checkpoint()
        return [attrs.evolve(found, item=_own(found.item)) for found in self._under(prefix, now)]

    async def _keyword(self, prefix: Namespace, words: list[str], now: float) -> list[Found]:
        wanted = set(words)
        out = []
        await anyio.lowlevel.checkpoint()
        for found in self._under(prefix, now):
            matched = len(wanted.intersection(terms(found.text)))
            if matched:
                out.append(Found(_own(found.item), found.text, None, matched / len(wanted)))
        return out

    async def _namespaces(self, prefix: Namespace, now: float) -> set[Namespace]:
        await anyio.lowlevel.checkpoint()
        return {found.item.namespace for found in self._under(prefix, now)}

    def _under(self, prefix: Namespace, now: float) -> list[Found]:
        depth = len(prefix)
        return [
            found
            for (ns, _), found in self._items.items()
            if ns[:depth] == prefix and _alive(found.item, now)
        ]

    def _live(self, ns: Namespace, key: str, now: float) -> Item | None:
        found = self._items.get((ns, key))
        return None if found is None or not _alive(found.item, now) else found.item


def _own(item: Item) -> Item:
    """`item` with a value of its own: what a caller changes in it never reaches the store,
    as with the stores that decode every read from their rows."""
    return attrs.evolve(item, value=orjson.loads(orjson.dumps(dict(item.value))))


def _alive(item: Item, now: float) -> bool:
    return item.expires is None or item.expires > now
