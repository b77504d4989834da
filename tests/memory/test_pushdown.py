"""Filters in SQL and cached vectors answer exactly as a plain scan, on every store."""

import pytest

from agentgraph.memory import MemoryDataError
from tests.rag.support import WordEmbedder

pytestmark = pytest.mark.anyio

USER = ("user", "42")
# The stores that keep their rows outside the process (the in-memory store holds a dict:
# nothing to share, cache or damage).
SHARED = ["sqlite", "postgres"]

VALUES = {
    "true": {"f": True, "text": "a"},
    "one": {"f": 1, "text": "b"},
    "one-float": {"f": 1.0, "text": "c"},
    "string-one": {"f": "1", "text": "d"},
    "null": {"f": None, "text": "e"},
    "missing": {"text": "f"},
    "list": {"f": [1], "text": "g"},
    "quoted": {"it's": "x", 'say "hi"': "y", "a.b": "z", "text": "h"},
    "tricky": {"f": 'it\'s "quoted"\n', "text": "i"},
}


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"f": True}, {"true"}),
        ({"f": False}, set()),
        ({"f": 1}, {"one", "one-float"}),
        ({"f": 1.0}, {"one", "one-float"}),
        ({"f": "1"}, {"string-one"}),
        ({"f": None}, {"null"}),
        ({"f": [1]}, {"list"}),  # not SQL's to check: Python does
        ({"f": 1, "text": "b"}, {"one"}),
        ({"it's": "x"}, {"quoted"}),
        ({'say "hi"': "y"}, {"quoted"}),
        ({"a.b": "z"}, {"quoted"}),
        ({"f": 'it\'s "quoted"\n'}, {"tricky"}),
        ({"f": 2**60}, set()),
        ({"nothing": None}, set()),
    ],
)
async def test_a_filter_selects_what_json_equality_selects(make_memory, where, expected):
    memory = make_memory(embedder=WordEmbedder())
    await memory.put_many(USER, VALUES)
    listed = await memory.search(USER, filter=where, limit=100)
    assert {h.id for h in listed} == expected
    nearest = await memory.search(USER, "a b c d e f g h i", filter=where, limit=100)
    assert {h.id for h in nearest} == expected


async def test_a_listing_keeps_the_newest_and_breaks_ties_by_key(make_memory, clock):
    memory = make_memory(clock=clock)
    await memory.put_many(USER, {f"k{i}": {"g": i % 2} for i in range(6)})  # one timestamp
    clock.now += 1
    await memory.put(USER, "late", {"g": 0})
    hits = await memory.search(USER, filter={"g": 0}, limit=2)
    assert [h.id for h in hits] == ["late", "k0"]
    hits = await memory.search(USER, filter={"g": 0}, limit=3)
    assert [h.id for h in hits] == ["late", "k0", "k2"]


@pytest.mark.parametrize("make_memory", SHARED, indirect=True)
async def test_another_store_on_the_same_data_sees_every_write(make_memory, clock):
    reader = make_memory(embedder=WordEmbedder(), clock=clock)
    writer = make_memory(embedder=WordEmbedder(), clock=clock)
    await writer.put(USER, "cat", {"text": "a cat"})
    assert [h.id for h in await reader.search(USER, "cat")] == ["cat"]
    await writer.put(USER, "dog", {"text": "a dog and a cat"})
    assert next(h.id for h in await reader.search(USER, "dog")) == "dog"
    await writer.delete(USER, "dog")
    assert [h.id for h in await reader.search(USER, "dog")] == ["cat"]
    await writer.put(USER, "cat", {"text": "a cat"}, ttl=10)
    clock.now += 10  # expiry needs no write: the cached rows carry it
    assert await reader.search(USER, "cat") == []


@pytest.mark.parametrize("make_memory", SHARED, indirect=True)
async def test_a_search_reads_the_vectors_again_only_after_a_write(make_memory, monkeypatch):
    from agentgraph.memory import _pushdown

    loads = []
    real = _pushdown.load

    def counted(*args, **kwargs):
        loads.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_pushdown, "load", counted)
    memory = make_memory(embedder=WordEmbedder())
    await memory.put_many(USER, {"a": {"text": "red apple"}, "b": {"text": "blue sky"}})
    for _ in range(3):
        assert (await memory.search(USER, "apple", limit=1))[0].id == "a"
    assert len(loads) == 1
    await memory.put(USER, "c", {"text": "green apple"})
    assert {h.id for h in await memory.search(USER, "apple", limit=2)} == {"a", "c"}
    assert len(loads) == 2


class Other(WordEmbedder):
    """Vectors of another size than WordEmbedder's."""

    async def embed(self, texts):
        return [[1.0, 0.5, 0.25] for _ in texts]


async def test_vectors_of_another_size_are_a_data_error(make_memory):
    memory = make_memory(embedder=WordEmbedder())
    await memory.put(USER, "a", {"text": "red apple"})
    other = make_memory(embedder=Other()) if make_memory.kind != "memory" else memory
    other.embedder = Other()
    with pytest.raises(MemoryDataError, match="dimensions"):
        await other.search(USER, "apple")


@pytest.mark.parametrize("make_memory", SHARED, indirect=True)
async def test_a_damaged_value_under_a_filter_is_still_named(make_memory):
    memory = make_memory(embedder=WordEmbedder())
    await memory.put_many(USER, {"ok": {"text": "fine", "g": 1}, "bad": {"text": "soon broken"}})
    broken = (b"{not json", "bad")
    if make_memory.kind == "sqlite":
        import sqlite3

        with sqlite3.connect(memory.path) as conn:
            conn.execute("UPDATE memory_items SET value = ? WHERE key = ?", broken)
    else:
        import psycopg

        with psycopg.connect(memory.conninfo, autocommit=True) as conn:
            table = f"{memory.schema}.memory_items"
            conn.execute(f"UPDATE {table} SET value = %s WHERE key = %s", broken)
    for search in (
        memory.search(USER, filter={"g": 1}),
        memory.search(USER, "fine", filter={"g": 1}),
    ):
        with pytest.raises(MemoryDataError, match="'bad' in"):
            await search
