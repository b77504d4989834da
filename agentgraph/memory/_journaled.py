"""Memory as effects of a run: `journaled(memory, rt)` reads and writes as `MemoryEffect`s.

Each call is one effect of the step, handed to the run's layers like a model
call (a user's layer sees it), and recorded by the run's journal under its key for it
(the step, its attempt and the effect's position): a resumed step and a
replay are served the recorded outcome (a replay never touches the store),
and a fork keeps the outcomes of the steps it copied. A write also hands the
store that key, with the run's id, as its effect id; the store keeps it with
the items, in the same transaction, and applies an effect id once. So a crash
after the store committed a write but before the journal recorded it cannot
write twice, or count a version twice, when the step runs again: the memory
and the checkpoint store can be different databases.

Before a write reaches the store, what the step recorded so far (its reads
above all) is made durable: the journal writes behind, so a crash right after
the store committed the write could otherwise lose the record of a read made
before it, and the resumed step would read its own write.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from .._core._effect_kinds import MemoryEffect
from .._core._effects import PROVIDED
from ..rag._rows import Filter
from ._errors import MemoryDataError
from ._items import Item, Memory, MemoryHit, Namespace

if TYPE_CHECKING:
    from .._core._runtime import Runtime

__all__ = ("JournaledMemory", "journaled")

T = TypeVar("T")


def journaled(memory: Memory, rt: Runtime) -> JournaledMemory:
    """`memory` as the step running in `rt` sees it: every call an effect of the run.

    ```python
    @node
    async def recall(ctx: AgentContext[str], rt: Runtime) -> AgentContext[str]:
        hits = await journaled(memory, rt).search(("user", ctx.state["user"]), ctx.input)
        ...
    ```
    Without a checkpoint store the calls go straight to `memory`.
    """
    if not isinstance(memory, Memory):
        raise TypeError(f"journaled() takes a Memory store, not {type(memory).__name__}")
    return JournaledMemory(memory, rt)


class JournaledMemory:
    """The `Memory` calls of one step, recorded by its run's journal (see `journaled`)."""

    __slots__ = ("_memory", "_rt")

    def __init__(self, memory: Memory, rt: Runtime) -> None:
        self._memory = memory
        self._rt = rt

    async def put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, Any],
        *,
        ttl: float | None = None,
    ) -> Item:
        """`Memory.put`, written at most once per step even across a crash and resume."""
        items = await self._effect(
            f"put {_where(namespace, key)}",
            lambda effect: _one(self._memory.put(namespace, key, value, ttl=ttl, effect=effect)),
            _encode_items,
            _decode_items,
            write=True,
        )
        return items[0]

    async def put_many(
        self,
        namespace: Sequence[str],
        values: Mapping[str, Mapping[str, Any]],
        *,
        ttl: float | None = None,
    ) -> list[Item]:
        """`Memory.put_many`, written at most once per step even across a crash and resume."""
        return await self._effect(
            f"put {_where(namespace, *values)}",
            lambda effect: self._memory.put_many(namespace, values, ttl=ttl, effect=effect),
            _encode_items,
            _decode_items,
            write=True,
        )

    async def delete(self, namespace: Sequence[str], key: str) -> bool:
        """`Memory.delete`, as an effect of the step."""
        return await self._effect(
            f"delete {_where(namespace, key)}",
            lambda effect: self._memory.delete(namespace, key, effect=effect),
            lambda done: done,
            _decode_bool,
            write=True,
        )

    async def get(self, namespace: Sequence[str], key: str) -> Item | None:
        """`Memory.get`; a resumed or replayed step reads what the run read."""
        return await self._effect(
            f"get {_where(namespace, key)}",
            lambda _: self._memory.get(namespace, key),
            lambda item: None if item is None else item.to_data(),
            lambda data: None if data is None else Item.from_data(data),
        )

    async def search(
        self,
        namespace_prefix: Sequence[str],
        query: str | None = None,
        *,
        filter: Filter | None = None,
        limit: int = 10,
    ) -> list[MemoryHit]:
        """`Memory.search`; a resumed or replayed step gets the hits the run got."""
        return await self._effect(
            f"search {_where(namespace_prefix)} {query!r}",
            lambda _: self._memory.search(namespace_prefix, query, filter=filter, limit=limit),
            lambda hits: [[h.score, h.text, h.item.to_data()] for h in hits],
            _decode_hits,
        )

    async def list_namespaces(
        self, prefix: Sequence[str] = (), *, max_depth: int | None = None, limit: int = 100
    ) -> list[Namespace]:
        """`Memory.list_namespaces`, as recorded by the run."""
        return await self._effect(
            f"namespaces {_where(prefix)}",
            lambda _: self._memory.list_namespaces(prefix, max_depth=max_depth, limit=limit),
            lambda found: [list(ns) for ns in found],
            lambda data: [tuple(ns) for ns in data],
        )

    async def _effect(
        self,
        name: str,
        op: Callable[[str | None], Awaitable[T]],
        encode: Callable[[T], Any],
        decode: Callable[[Any], T],
        *,
        write: bool = False,
    ) -> T:
        rt = self._rt
        effect = MemoryEffect(
            self._memory,
            name.partition(" ")[0],
            name,
            op,
            lambda result: orjson.dumps({"v": encode(result)}),
            lambda found, key: _decoded(found, key, decode),
            write=write,
        )
        result: T = await rt._run.stack.memory(rt, effect)
        return result


def _decoded(found: bytes, key: str, decode: Callable[[Any], T]) -> T:
    """A recorded outcome back (an object, as every kind of effect a checkpoint store checks)."""
    try:
        return decode(orjson.loads(found)["v"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise MemoryDataError("journal", key, f"the recorded outcome is damaged: {exc}") from exc


async def _one(put: Awaitable[Item]) -> list[Item]:
    return [await put]


def _where(namespace: Sequence[str], *keys: str) -> str:
    where = (
        "/".join(str(label) for label in namespace) if not isinstance(namespace, str) else namespace
    )
    return f"{where}:{','.join(keys)}" if keys else where


def _encode_items(items: list[Item]) -> list[dict[str, Any]]:
    return [item.to_data() for item in items]


def _decode_items(data: list[dict[str, Any]]) -> list[Item]:
    return [Item.from_data(d) for d in data]


def _decode_bool(data: Any) -> bool:
    if not isinstance(data, bool):
        raise ValueError(f"a delete's outcome is true or false, not {data!r}")
    return data


def _decode_hits(data: list[list[Any]]) -> list[MemoryHit]:
    hits = []
    for score, text, item_data in data:
        item = Item.from_data(item_data)
        hits.append(MemoryHit(item.key, score, text, item.value, item))
    return hits


PROVIDED.memory_view = journaled  # what `Runtime.memory` returns
