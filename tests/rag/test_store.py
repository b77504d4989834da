import os
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import anyio
import pytest

np = pytest.importorskip("numpy", reason="the `rag` extra (numpy) is not installed")

from agentgraph import DimensionMismatch, VectorStoreError  # noqa: E402
from agentgraph.rag import NumpyStore, Record, VectorStore, _file  # noqa: E402

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def records() -> list[Record]:
    return [
        Record("a", [1.0, 0.0, 0.0], "alpha", {"source": "x.md", "tags": ("t1", "t2")}),
        Record("b", [0.0, 2.0, 0.0], "beta", {"source": "y.md"}),
        Record("c", [1.0, 1.0, 0.0], "gamma", {"source": "x.md", "n": 3}),
        Record("d", [0.0, 0.0, 5.0], "delta"),
    ]


async def test_search_ranks_by_cosine_similarity():
    store = NumpyStore()
    assert isinstance(store, VectorStore)
    assert await store.search([1, 0, 0]) == []  # empty
    await store.add(records())
    hits = await store.search([1.0, 0.2, 0.0], k=3)
    assert [h.id for h in hits] == ["a", "c", "b"]
    expected = 1 / np.sqrt(1.04)
    assert hits[0].score == pytest.approx(expected, rel=1e-6)
    assert hits[0].text == "alpha" and hits[0].metadata["source"] == "x.md"
    everything = await store.search([0, 0, 1], k=10)
    assert len(everything) == 4 and everything[0].id == "d"
    assert store.dimensions == 3 and len(store) == 4


async def test_ties_keep_insertion_order():
    store = NumpyStore()
    await store.add([Record(i, [1.0, 1.0]) for i in ("z", "y", "x")])
    assert [h.id for h in await store.search([1, 1], k=2)] == ["z", "y"]
    # Which tied rows make the cut does not depend on how the scores were partitioned.
    many = NumpyStore()
    await many.add([Record(f"r{i:03}", [1.0, 0.0] if i % 3 else [0.0, 1.0]) for i in range(300)])
    hits = await many.search([1, 0], k=10)
    assert [h.id for h in hits] == [f"r{i:03}" for i in range(300) if i % 3][:10]


async def test_metadata_filters():
    store = NumpyStore()
    await store.add(records())
    hits = await store.search([1, 0, 0], k=4, where={"source": "x.md"})
    assert [h.id for h in hits] == ["a", "c"]
    # Metadata is kept as JSON data: a tuple filter matches the stored list.
    assert [h.id for h in await store.search([1, 0, 0], where={"tags": ("t1", "t2")})] == ["a"]
    assert await store.search([1, 0, 0], where={"source": "nowhere"}) == []
    assert await store.search([1, 0, 0], where={"missing": None}) == []
    odd = await store.search([1, 0, 0], where=lambda m: m.get("n", 0) > 2)
    assert [h.id for h in odd] == ["c"]
    assert await store.ids(where={"source": "y.md"}) == ["b"]
    assert await store.ids() == ["a", "b", "c", "d"]
    with pytest.raises(TypeError, match="mapping or a predicate"):
        await store.search([1, 0, 0], where=42)  # type: ignore[arg-type]


async def test_metadata_filters_tell_booleans_from_numbers():
    store = NumpyStore()
    pages: list[object] = [True, 1, 1.0, False, 0, [1, True], {"n": 1}]
    await store.add([Record(str(i), [1.0, 0.0], "t", {"page": p}) for i, p in enumerate(pages)])

    async def found(value: object) -> list[str]:
        return [h.id for h in await store.search([1.0, 0.0], k=10, where={"page": value})]

    assert await found(True) == ["0"]
    assert await found(1) == ["1", "2"]  # JSON does not tell 1 from 1.0
    assert await found(1.0) == ["1", "2"]
    assert await found(False) == ["3"]
    assert await found(0) == ["4"]
    assert await found([1, True]) == ["5"]
    assert await found([True, True]) == []
    assert await found({"n": 1.0}) == ["6"]
    assert await found({"n": True}) == []


async def test_add_delete_upsert_and_get():
    store = NumpyStore()
    await store.add(records())
    with pytest.raises(VectorStoreError, match=r"already in the store.*upsert"):
        await store.add([Record("a", [1, 0, 0])])
    assert await store.delete(["b", "nope", "d"]) == 2
    assert await store.delete(["nope"]) == 0
    assert await store.ids() == ["a", "c"]
    await store.upsert([Record("c", [0, 0, 1], "new gamma", {"v": 2}), Record("e", [0, 1, 0], "e")])
    assert await store.ids() == ["a", "c", "e"]
    (c,) = await store.get(["c"])
    assert (c.text, dict(c.metadata), c.vector) == ("new gamma", {"v": 2}, [0.0, 0.0, 1.0])
    got = await store.get(["e", "zz", "a"])
    assert [r.id for r in got] == ["e", "a"]
    assert [h.id for h in await store.search([0, 0, 1], k=1)] == ["c"]
    await store.add([])  # nothing to do
    assert len(store) == 3


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        ([Record("x", [1, 0])], DimensionMismatch, r"has 2 dimensions where 3 were expected"),
        ([Record("x", [0, 0, 0])], VectorStoreError, "zero vector"),
        ([Record("x", [1, float("nan"), 0])], VectorStoreError, "NaN"),
        ([Record("x", ["a", "b", "c"])], VectorStoreError, "not a number"),
        ([Record("x", [1, 0, 0], metadata={"when": object()})], VectorStoreError, "not JSON"),
        ([Record("x", [1, 0, 0]), Record("x", [0, 1, 0])], VectorStoreError, "twice"),
        ([Record("", [1, 0, 0])], VectorStoreError, "non-empty string"),
        (["not a record"], TypeError, "Record objects"),
    ],
)
async def test_bad_records_are_refused_and_change_nothing(bad, error, message):
    store = NumpyStore(dimensions=3)
    await store.add([Record("ok", [1, 0, 0])])
    with pytest.raises(error, match=message):
        await store.upsert(bad)
    assert await store.ids() == ["ok"]


async def test_bad_queries_and_options():
    store = NumpyStore()
    await store.add(records())
    with pytest.raises(DimensionMismatch, match="the query has 2 dimensions") as caught:
        await store.search([1, 0])
    assert (caught.value.expected, caught.value.got) == (3, 2)
    with pytest.raises(VectorStoreError, match="zero vector"):
        await store.search([0, 0, 0])
    with pytest.raises(ValueError, match="k must be"):
        await store.search([1, 0, 0], k=0)
    with pytest.raises(TypeError, match="wrap a single id"):
        await store.delete("a")
    with pytest.raises(ValueError, match="dimensions must be"):
        NumpyStore(dimensions=0)


async def test_large_stores_search_off_the_event_loop_with_the_same_results():
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((1200, 300)).astype(np.float32)  # above the inline limit
    store = NumpyStore()
    await store.add([Record(str(i), v) for i, v in enumerate(vectors)])
    query = rng.standard_normal(300).astype(np.float32)
    hits = await store.search(query, k=10)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = np.argsort(-(unit @ (query / np.linalg.norm(query))))[:10]
    assert [h.id for h in hits] == [str(i) for i in expected]
    evens = await store.search(query, k=3, where=lambda m: False)
    assert evens == []


# -- persistence ------------------------------------------------------------------


async def test_reopen_and_search_without_embedding_again(tmp_path):
    path = tmp_path / "docs.vectors"
    store = await NumpyStore.open(path)
    assert not path.exists() and store.path == path  # created at the first change
    await store.add(records())
    await store.delete(["d"])
    assert path.exists()
    again = await NumpyStore.open(path)
    assert len(again) == 3 and again.dimensions == 3
    assert await again.search([1, 0.2, 0], k=3) == await store.search([1, 0.2, 0], k=3)
    assert (await again.get(["a"]))[0].metadata == {"source": "x.md", "tags": ["t1", "t2"]}
    assert "3 x 3" in repr(again)


async def test_an_emptied_store_keeps_its_dimension(tmp_path):
    path = tmp_path / "s.vectors"
    store = await NumpyStore.open(path, dimensions=3)
    await store.add([Record("a", [1, 0, 0])])
    await store.delete(["a"])
    again = await NumpyStore.open(path)
    assert len(again) == 0 and again.dimensions == 3


async def test_a_file_of_another_dimension_fails_clearly(tmp_path):
    path = tmp_path / "s.vectors"
    store = await NumpyStore.open(path)
    await store.add(records())
    with pytest.raises(DimensionMismatch, match="file has 3 dimensions where 384 were"):
        await NumpyStore.open(path, dimensions=384)
    reopened = await NumpyStore.open(path, dimensions=3)
    with pytest.raises(DimensionMismatch):
        await reopened.add([Record("z", [1.0] * 384)])


async def test_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        await NumpyStore.open(tmp_path / "no" / "s.vectors")


async def _valid_file(tmp_path: Path) -> Path:
    path = tmp_path / "s.vectors"
    store = await NumpyStore.open(path)
    await store.add(records())
    return path


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data: b"", "bad header"),
        (lambda data: b"PK\x03\x04" + data[4:], "bad header"),
        (lambda data: data[:-10], "cut short"),
        (lambda data: data + b"\0", "cut short or altered"),
        (lambda data: data[:-5] + bytes([data[-5] ^ 0xFF]) + data[-4:], "checksum"),
    ],
)
async def test_a_damaged_file_fails_clearly(tmp_path, damage, message):
    path = await _valid_file(tmp_path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(VectorStoreError, match=message) as caught:
        await NumpyStore.open(path)
    assert caught.value.path == str(path)


def _forge(path: Path, records_json: bytes, count: int) -> None:
    """A file with a valid checksum around records that do not fit."""
    vectors = np.ones((count, 2), dtype="<f4").tobytes()
    crc = zlib.crc32(vectors, zlib.crc32(records_json))
    prefix = struct.pack("<8sIQQI", _file.MAGIC, 2, count, len(records_json), crc)
    path.write_bytes(prefix + records_json + vectors)


@pytest.mark.parametrize(
    ("records_json", "count", "message"),
    [
        (b"[[", 1, "not valid JSON"),
        (b'[["a", "t", {}]]', 2, "do not match"),
        (b'[["a", 5, {}]]', 1, "do not match"),
        (b'[["a", "t", {}], ["a", "u", {}]]', 2, "an id twice"),
    ],
)
async def test_forged_records_fail_clearly(tmp_path, records_json, count, message):
    path = tmp_path / "s.vectors"
    _forge(path, records_json, count)
    with pytest.raises(VectorStoreError, match=message):
        await NumpyStore.open(path)


# -- crash safety -----------------------------------------------------------------------


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


async def test_a_failed_rename_keeps_the_old_file_and_the_old_state(tmp_path, monkeypatch):
    path = tmp_path / "s.vectors"
    store = await NumpyStore.open(path)
    await store.add(records())
    before = path.read_bytes()

    def refuse(src, dst):
        raise OSError("disk went away")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk went away"):
        await store.upsert([Record("a", [0, 0, 1], "changed")])
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert _leftovers(tmp_path) == []
    assert (await store.get(["a"]))[0].text == "alpha"  # memory did not run ahead of the file
    assert len(await NumpyStore.open(path)) == 4


async def test_a_write_failing_halfway_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "s.vectors"
    store = await NumpyStore.open(path)
    await store.add(records())
    before = path.read_bytes()

    def half(file, parts):
        file.write(parts[0])
        file.write(bytes(parts[1])[:5])
        raise OSError("no space left on device")

    monkeypatch.setattr(_file, "_write_all", half)
    with pytest.raises(OSError, match="no space"):
        await store.delete(["a", "b"])
    monkeypatch.undo()
    assert path.read_bytes() == before and _leftovers(tmp_path) == []
    assert len(store) == 4
    await store.delete(["a"])  # the store goes on working
    assert await (await NumpyStore.open(path)).ids() == ["b", "c", "d"]


def test_a_process_killed_mid_write_leaves_the_old_file_readable(tmp_path):
    path = anyio.run(_valid_file, tmp_path)
    before = path.read_bytes()
    script = textwrap.dedent(
        f"""
        import os, anyio
        from agentgraph.rag import NumpyStore, Record, _file

        def die(file, parts):
            file.write(parts[0])
            file.flush()
            os._exit(3)  # no cleanup of any kind, as in a power cut

        async def main():
            store = await NumpyStore.open({str(path)!r})
            _file._write_all = die
            await store.upsert([Record("z", [0.0, 1.0, 1.0], "never stored")])

        anyio.run(main)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=60, check=False)
    assert done.returncode == 3
    assert path.read_bytes() == before
    assert len(_leftovers(tmp_path)) == 1  # the abandoned temporary file

    async def reopen() -> list[str]:
        return await (await NumpyStore.open(path)).ids()

    assert anyio.run(reopen) == ["a", "b", "c", "d"]


async def test_concurrent_changes_all_land_in_memory_and_on_disk(tmp_path):
    path = tmp_path / "s.vectors"
    store = await NumpyStore.open(path)

    async def put(i: int) -> None:
        await store.upsert([Record(f"r{i}", [1.0, float(i), 0.5])])

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(put, i)
    assert len(store) == 20
    assert sorted(await (await NumpyStore.open(path)).ids()) == sorted(await store.ids())
