"""One contract, every memory store: InMemoryMemory, SQLiteMemory and PostgresMemory."""

import pytest

from agentgraph.memory import (
    MAX_KEY,
    Item,
    Memory,
    MemoryEmbedError,
    MemoryHit,
    MemoryInputError,
)
from agentgraph.rag import Hit
from tests.rag.support import WordEmbedder

pytestmark = pytest.mark.anyio

USER = ("user", "42")


class Failing(WordEmbedder):
    async def embed(self, texts):
        raise ConnectionError("embedding server down")


async def test_put_get_versions_and_timestamps(make_memory, clock):
    memory = make_memory(clock=clock)
    assert isinstance(memory, Memory)
    first = await memory.put(USER, "diet", {"text": "vegetarian", "tags": ("food",)})
    assert (first.version, first.created, first.updated, first.expires) == (1, 1000.0, 1000.0, None)
    clock.now = 1010.0
    second = await memory.put(USER, "diet", {"text": "vegan"})
    assert (second.version, second.created, second.updated) == (2, 1000.0, 1010.0)
    got = await memory.get(USER, "diet")
    assert got == Item(USER, "diet", {"text": "vegan"}, 2, 1000.0, 1010.0, None)
    assert await memory.get(USER, "other") is None
    assert await memory.get(("user", "43"), "diet") is None
    first_again = await memory.put(USER, "tags", {"tags": ("a", ("b", 1.5)), "n": None})
    assert dict(first_again.value) == {"tags": ["a", ["b", 1.5]], "n": None}
    assert (await memory.get(USER, "tags")).value == {"tags": ["a", ["b", 1.5]], "n": None}


async def test_delete(make_memory):
    memory = make_memory()
    await memory.put(USER, "a", {"text": "x"})
    assert await memory.delete(USER, "a") is True
    assert await memory.get(USER, "a") is None
    assert await memory.delete(USER, "a") is False
    again = await memory.put(USER, "a", {"text": "y"})
    assert again.version == 1


async def test_ttl_expires_by_the_injected_clock(make_memory, clock):
    memory = make_memory(clock=clock)
    item = await memory.put(USER, "short", {"text": "soon gone"}, ttl=60)
    await memory.put(USER, "long", {"text": "stays"})
    assert item.expires == 1060.0
    clock.now = 1059.0
    assert (await memory.get(USER, "short")).key == "short"
    clock.now = 1060.0
    assert await memory.get(USER, "short") is None
    assert [h.id for h in await memory.search(USER)] == ["long"]
    assert [h.id for h in await memory.search(USER, "soon")] == []
    reborn = await memory.put(USER, "short", {"text": "back"})
    assert (reborn.version, reborn.created) == (1, 1060.0)
    await memory.put(("gone",), "k", {"text": "x"}, ttl=1)
    clock.now = 2000.0
    assert await memory.list_namespaces() == [USER]


async def test_namespace_prefixes_are_label_wise(make_memory):
    memory = make_memory()
    await memory.put(("user", "42"), "a", {"text": "forty-two"})
    await memory.put(("user", "42", "facts"), "b", {"text": "deeper"})
    await memory.put(("user", "420"), "c", {"text": "four hundred twenty"})
    await memory.put(("team",), "d", {"text": "team"})
    assert sorted(h.id for h in await memory.search(("user", "42"))) == ["a", "b"]
    assert sorted(h.id for h in await memory.search(())) == ["a", "b", "c", "d"]
    assert await memory.list_namespaces() == [
        ("team",),
        ("user", "42"),
        ("user", "42", "facts"),
        ("user", "420"),
    ]
    assert await memory.list_namespaces(("user",), max_depth=2) == [
        ("user", "42"),
        ("user", "420"),
    ]
    assert await memory.list_namespaces(("user",), limit=1) == [("user", "42")]


async def test_listing_is_newest_first_and_filters_on_value_fields(make_memory, clock):
    memory = make_memory(clock=clock)
    for i, kind in enumerate(["food", "place", "food"]):
        clock.now = 1000.0 + i
        await memory.put(USER, f"k{i}", {"text": f"fact {i}", "kind": kind, "n": i})
    hits = await memory.search(USER)
    assert [h.id for h in hits] == ["k2", "k1", "k0"]
    assert all(isinstance(h, MemoryHit) and isinstance(h, Hit) and h.score == 0.0 for h in hits)
    assert [h.id for h in await memory.search(USER, filter={"kind": "food"})] == ["k2", "k0"]
    assert [h.id for h in await memory.search(USER, filter=lambda v: v["n"] >= 1)] == ["k2", "k1"]
    assert [h.id for h in await memory.search(USER, limit=1)] == ["k2"]
    assert await memory.search(USER, filter={"kind": True}) == []


async def test_keyword_search_without_an_embedder(make_memory):
    memory = make_memory()
    await memory.put(USER, "diet", {"text": "The user is vegetarian and hates mushrooms"})
    await memory.put(USER, "city", {"text": "The user lives in Lyon"})
    await memory.put(USER, "pet", {"text": "Has a cat named Mushroom", "kind": "pet"})
    await memory.put(USER, "silent", {"n": 1})
    hits = await memory.search(USER, "vegetarian mushrooms")
    assert hits[0].id == "diet"
    assert {h.id for h in hits} == {"diet"}
    assert hits[0].text == "The user is vegetarian and hates mushrooms"
    assert [h.id for h in await memory.search(USER, "LYON")] == ["city"]
    assert [h.id for h in await memory.search(USER, "cat lyon", filter={"kind": "pet"})] == ["pet"]
    assert await memory.search(USER, "...") == []
    assert await memory.search(USER, "zebra") == []


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("ann@example.com", {"mail", "site"}),  # its words: ann, example, com
        ("example", {"mail", "site"}),
        ("ANN", {"mail"}),
        ("cafe", {"cafe", "upper"}),  # accents and case folded, both ways
        ("Café", {"cafe", "upper"}),
        ("CAFÉ", {"cafe", "upper"}),
        ("naïve", {"naive"}),
        ("naive", {"naive"}),
        ("STRASSE", {"street"}),  # case folding: ß is ss
        ("strasse", {"street"}),
        ("ﬁle", {"ligature"}),  # compatibility forms decompose: ﬁ is fi
        ("file", {"ligature"}),
        ("snake", {"snake"}),  # _ separates words
        ("snake_case", {"snake"}),
        ("v2", {"version"}),
        ("東京", {"tokyo"}),
        ("हिन्दी", {"hindi"}),  # spacing marks stay in the word
        ("भाषा", {"hindi"}),
        ("x2", {"power"}),
        ("x²", {"power"}),
        ("x" * 201, set()),  # too long a word to index
        ("@.-_", set()),
    ],
)
async def test_keyword_search_folds_and_splits_words_the_same_in_every_store(
    make_memory, query, found
):
    memory = make_memory()
    await memory.put(USER, "mail", {"text": "Write to Ann@Example.com today"})
    await memory.put(USER, "site", {"text": "see https://www.example.org/x"})
    await memory.put(USER, "cafe", {"text": "Meet at the café"})
    await memory.put(USER, "upper", {"text": "CAFÉ DE FLORE"})
    await memory.put(USER, "naive", {"text": "a naïve plan"})
    await memory.put(USER, "street", {"text": "Lange Straße 5"})
    await memory.put(USER, "ligature", {"text": "the ﬁle"})
    await memory.put(USER, "snake", {"text": "call snake_case names"})
    await memory.put(USER, "version", {"text": "release v2, not v3"})
    await memory.put(USER, "tokyo", {"text": "東京 trip"})
    await memory.put(USER, "hindi", {"text": "हिन्दी भाषा"})
    await memory.put(USER, "power", {"text": "x² grows"})
    await memory.put(USER, "long", {"text": "x" * 201})
    assert {h.id for h in await memory.search(USER, query)} == found


async def test_semantic_search_embeds_on_put_in_one_batch(make_memory):
    embedder = WordEmbedder()
    memory = make_memory(embedder=embedder, index=["text"])
    await memory.put_many(
        USER,
        {
            "diet": {"text": "vegetarian food only please"},
            "city": {"text": "lives in the city of Lyon"},
            "quiet": {"other": "not indexed"},
        },
    )
    assert embedder.calls == [["vegetarian food only please", "lives in the city of Lyon"]]
    hits = await memory.search(USER, "what food does the user eat", limit=2)
    assert [h.id for h in hits] == ["diet", "city"]
    assert hits[0].score > hits[1].score > 0
    assert [h.id for h in await memory.search(USER, "lyon city", filter={"text": "x"})] == []
    assert [h.id for h in await memory.search(("user",), "Lyon city", limit=1)] == ["city"]


async def test_an_effect_id_is_applied_once(make_memory):
    memory = make_memory()
    first = await memory.put(USER, "k", {"text": "one"}, effect="run/1.1.1")
    again = await memory.put(USER, "k", {"text": "one"}, effect="run/1.1.1")
    assert first == again and again.version == 1
    assert (await memory.get(USER, "k")).version == 1
    assert (await memory.put(USER, "k", {"text": "two"}, effect="run/1.1.2")).version == 2
    assert await memory.delete(USER, "k", effect="run/1.1.3") is True
    await memory.put(USER, "k", {"text": "three"})
    assert await memory.delete(USER, "k", effect="run/1.1.3") is True  # recorded, not redone
    assert (await memory.get(USER, "k")).value == {"text": "three"}


async def test_a_failing_embedder_stores_nothing(make_memory):
    memory = make_memory(embedder=Failing())
    with pytest.raises(MemoryEmbedError, match="embedding server down") as caught:
        await memory.put_many(USER, {"a": {"text": "x"}, "b": {"text": "y"}}, effect="e")
    assert caught.value.keys == ("a", "b")
    assert isinstance(caught.value.__cause__, ConnectionError)
    assert await memory.search(()) == []
    assert await memory.list_namespaces() == []


class Wrong(WordEmbedder):
    async def embed(self, texts):
        return [[0.0, 0.0] for _ in texts]


async def test_an_embedder_answering_zero_vectors_stores_nothing(make_memory):
    memory = make_memory(embedder=Wrong())
    with pytest.raises(MemoryEmbedError, match="zero vector"):
        await memory.put(USER, "a", {"text": "x"})
    assert await memory.get(USER, "a") is None


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda m: m.put((), "k", {}), "namespace is empty"),
        (lambda m: m.put("user", "k", {}), "namespace is a tuple of strings"),
        (lambda m: m.put(("user", 42), "k", {}), r"namespace\[1\] is a string, not int"),
        (lambda m: m.put(("user", ""), "k", {}), r"namespace\[1\] is an empty string"),
        (lambda m: m.put(("a\x1fb",), "k", {}), "control character"),
        (lambda m: m.put(USER, "", {}), "key is an empty string"),
        (lambda m: m.put(USER, "k" * (MAX_KEY + 1), {}), f"at most {MAX_KEY}"),
        (lambda m: m.put(USER, 7, {}), "key is a string, not int"),
        (lambda m: m.put(USER, "k", ["a"]), "is a JSON object"),
        (lambda m: m.put(USER, "k", {"when": {1, 2}}), r"\['when'\] is a set, not JSON data"),
        (lambda m: m.put(USER, "k", {"x": float("nan")}), "nan, which JSON cannot hold"),
        (lambda m: m.put(USER, "k", {1: "a"}), "JSON keys are strings"),
        (lambda m: m.put(USER, "k", {"a": 1}, ttl=0), "ttl is a positive number"),
        (lambda m: m.search(USER, limit=0), "limit is a positive integer"),
        (lambda m: m.search(USER, 5), "query is a string"),
        (lambda m: m.search(USER, filter=3), "filter is a mapping or a predicate"),
        (lambda m: m.search(USER, filter={"a": {1}}), "filter holds values that are not JSON"),
        # Text no store can keep as it is: refused the same way by every store.
        (lambda m: m.put(USER, "k", {"a": "x\ud800y"}), r"value of 'k'\['a'\] .*U\+D800"),
        (lambda m: m.put(USER, "k", {"a": ["\udfff"]}), r"value of 'k'\['a'\]\[0\] .*surrogate"),
        (lambda m: m.put(USER, "k", {"\ud800": 1}), "key '.ud800' holds a lone surrogate"),
        (lambda m: m.put(USER, "k\ud800", {}), "key holds a lone surrogate"),
        (lambda m: m.put(("user", "\udc00"), "k", {}), r"namespace\[1\] holds a lone surrogate"),
        (lambda m: m.put(USER, "k", {"a": "x\x00y"}), r"value of 'k'\['a'\] holds a NUL"),
        (lambda m: m.put(USER, "k", {"a\x00": 1}), "key 'a.x00' holds a NUL"),
        (lambda m: m.put(USER, "k\x00", {}), "key holds a NUL"),
        (lambda m: m.put_many(USER, {"ok": {}, "k": {"a": "\x00"}}), "value of 'k'"),
        (lambda m: m.get(USER, "k\ud800"), "key holds a lone surrogate"),
        (lambda m: m.delete(("\ud800",), "k"), r"namespace\[0\] holds a lone surrogate"),
        (lambda m: m.search(("\ud800",)), r"namespace prefix\[0\] holds a lone surrogate"),
        (lambda m: m.search(USER, "caf\ud800"), "query holds a lone surrogate"),
        (lambda m: m.search(USER, "a\x00"), "query holds a NUL"),
        (lambda m: m.search(USER, filter={"a": "\x00"}), r"filter\['a'\] holds a NUL"),
        (lambda m: m.search(USER, filter={"a": "\ud800"}), "filter holds values that are not"),
        (lambda m: m.list_namespaces(("\ud800",)), "lone surrogate"),
    ],
)
async def test_bad_input_is_a_typed_error_and_stores_nothing(make_memory, call, what):
    memory = make_memory()
    with pytest.raises(MemoryInputError, match=what):
        await call(memory)
    assert await memory.list_namespaces() == []


async def test_what_a_store_returns_is_the_callers_own(make_memory):
    memory = make_memory()
    put = await memory.put(USER, "k", {"tags": ["a"], "deep": {"n": [1]}, "text": "tag a"})
    put.value["tags"].append("from put")
    got = await memory.get(USER, "k")
    assert got is not None
    got.value["tags"].append("from get")
    got.value["deep"]["n"].append(2)
    [found] = await memory.search(USER)
    found.metadata["tags"].append("from a listing")
    found.item.value["deep"]["n"].append(3)
    [hit] = await memory.search(USER, "tag")
    hit.item.value["tags"].append("from a keyword search")
    again = await memory.get(USER, "k")
    assert again is not None
    assert dict(again.value) == {"tags": ["a"], "deep": {"n": [1]}, "text": "tag a"}
    assert again.version == 1


async def test_an_effect_applied_again_returns_a_copy(make_memory):
    memory = make_memory()
    first = await memory.put(USER, "k", {"tags": ["a"]}, effect="run/1")
    first.value["tags"].append("changed")
    second = await memory.put(USER, "k", {"tags": ["b"]}, effect="run/1")
    assert dict(second.value) == {"tags": ["a"]}
    second.value["tags"].append("changed")
    again = await memory.put(USER, "k", {"tags": ["c"]}, effect="run/1")
    assert dict(again.value) == {"tags": ["a"]}


async def test_a_damaged_row_is_a_typed_error_naming_the_item(tmp_path):
    import sqlite3

    from agentgraph.memory import MemoryDataError, SQLiteMemory

    memory = SQLiteMemory(tmp_path / "m.db")
    await memory.put(USER, "ok", {"text": "fine"})
    await memory.put(USER, "bad", {"text": "soon broken"})
    memory.close()
    with sqlite3.connect(tmp_path / "m.db") as conn:
        conn.execute("UPDATE memory_items SET value = ? WHERE key = 'bad'", (b"[1, 2",))
    memory = SQLiteMemory(tmp_path / "m.db")
    assert (await memory.get(USER, "ok")).value == {"text": "fine"}
    with pytest.raises(MemoryDataError, match="'bad' in \\('user', '42'\\) is damaged"):
        await memory.get(USER, "bad")
    with sqlite3.connect(tmp_path / "m.db") as conn:
        conn.execute("UPDATE memory_items SET value = ? WHERE key = 'bad'", (b"[1, 2]",))
    with pytest.raises(MemoryDataError, match="is a list, not an object"):
        await memory.search(USER)
    memory.close()


async def test_old_effect_ids_are_pruned_after_the_horizon(make_memory, clock):
    memory = make_memory(clock=clock, keep_effects=100)
    await memory.put(USER, "a", {"n": 1}, effect="run/1")
    assert (await memory.put(USER, "a", {"n": 1}, effect="run/1")).version == 1  # applied once
    clock.now += 50
    await memory.delete(USER, "gone", effect="run/2")
    assert await memory.prune_effects(older_than=10) == 1  # run/1 is 50 s old, run/2 new
    # The trade-off: an effect id pruned before its run came back is applied again.
    assert (await memory.put(USER, "a", {"n": 1}, effect="run/1")).version == 2
    clock.now += 101  # past the horizon: the next write prunes on its own
    await memory.put(USER, "b", {"n": 1}, effect="run/3")
    clock.now += 2
    assert await memory.prune_effects(older_than=1) == 1  # only run/3 was left
    assert await memory.prune_effects() == 0
    with pytest.raises(MemoryInputError, match="older_than"):
        await memory.prune_effects(older_than=0)
    with pytest.raises(MemoryInputError, match="keep_effects"):
        make_memory(keep_effects=-1)
    forever = make_memory(clock=clock, keep_effects=None)
    assert await forever.prune_effects() == 0
