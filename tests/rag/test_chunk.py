import re
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numpy", reason="the `rag` extra (numpy) is not installed")

from agentgraph.rag import (
    Document,
    NumpyStore,
    chunk_document,
    chunk_text,
    ingest,
)

from .support import WordEmbedder

pytestmark = pytest.mark.anyio

PARAGRAPHS = [
    "Graphs are built with a builder. Edges read left to right.",
    "The runner retries failed nodes. It never retries a bug in user code.",
    "Stores keep vectors in one file. A crash never corrupts the file.",
]
TEXT = "\n\n".join(PARAGRAPHS)


def pieces(text: str, **options) -> list[str]:
    return [text[s:e] for s, e in chunk_text(text, **options)]


def test_short_paragraphs_are_packed_and_cut_on_paragraph_breaks():
    assert pieces(TEXT, size=1000, overlap=0) == [TEXT]
    assert pieces(TEXT, size=140, overlap=0) == [
        "\n\n".join(PARAGRAPHS[:2]),
        PARAGRAPHS[2],
    ]
    assert pieces(TEXT, size=80, overlap=0) == PARAGRAPHS


def test_long_paragraphs_are_cut_on_sentences_then_words_then_characters():
    assert pieces(PARAGRAPHS[1], size=40, overlap=0) == [
        "The runner retries failed nodes.",
        "It never retries a bug in user code.",
    ]
    words = pieces("alpha beta gamma delta epsilon", size=12, overlap=0)
    assert words == ["alpha beta", "gamma delta", "epsilon"]
    assert pieces("x" * 25, size=10, overlap=0) == ["x" * 10, "x" * 10, "x" * 5]


def test_overlap_starts_on_a_sentence_or_a_word_of_the_previous_chunk():
    text = " ".join(f"Sentence number {i} is here." for i in range(12))
    spans = chunk_text(text, size=90, overlap=40)
    for (s1, e1), (s2, e2) in pairwise(spans):
        assert s1 < s2 < e1 <= e2  # each chunk reaches back into the previous one
        assert e1 - s2 <= 40
        assert text[s2 - 1] == " " and text[s2].isupper()  # on a sentence start
    assert all(e - s <= 90 for s, e in spans)
    # Without a sentence break in reach, the overlap starts on a word.
    words = " ".join(f"w{i}" for i in range(60))
    for s, _ in chunk_text(words, size=50, overlap=12)[1:]:
        assert words[s - 1] == " "


def test_offsets_metadata_and_blank_input():
    assert chunk_text("") == [] and chunk_text("   \n\n  ") == []
    padded = "\n\n  Hello world.  \n\n"
    assert pieces(padded) == ["Hello world."]
    with pytest.raises(ValueError, match="size"):
        chunk_text("x", size=0)
    with pytest.raises(ValueError, match="overlap"):
        chunk_text("x", size=10, overlap=10)


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab .\n!,"), max_size=400),
    size=st.integers(min_value=2, max_value=80),
    data=st.data(),
)
def test_chunks_fit_cover_the_text_and_move_forward(text, size, data):
    overlap = data.draw(st.integers(min_value=0, max_value=size - 1))
    spans = chunk_text(text, size=size, overlap=overlap)
    covered = set()
    for start, end in spans:
        assert 0 <= start < end <= len(text) and end - start <= size
        piece = text[start:end]
        assert piece == piece.strip() and piece
        covered.update(range(start, end))
    assert [s for s, _ in spans] == sorted({s for s, _ in spans})  # strictly increasing
    assert {i for i, ch in enumerate(text) if not ch.isspace()} <= covered
    if overlap == 0:
        assert all(e1 <= s2 for (_, e1), (s2, _) in pairwise(spans))


def test_chunk_document_metadata_and_stable_ids():
    doc = Document("guide.md", TEXT, {"lang": "en"})
    chunks = chunk_document(doc, size=80, overlap=10)
    assert len(chunks) == 3
    for index, chunk in enumerate(chunks):
        meta = chunk.metadata
        assert meta["source"] == "guide.md" and meta["index"] == index and meta["lang"] == "en"
        assert TEXT[meta["start"] : meta["end"]] == chunk.text
        assert re.fullmatch(rf"guide\.md#{index}@[0-9a-f]{{16}}", chunk.id)
    assert [c.id for c in chunk_document(doc, size=80, overlap=10)] == [c.id for c in chunks]
    changed = [
        chunk_document(Document("guide.md", TEXT + " More."), size=80, overlap=10),
        chunk_document(Document("guide.md", TEXT, {"lang": "fr"}), size=80, overlap=10),
        chunk_document(doc, size=81, overlap=10),
    ]
    for other in changed:
        assert other[0].id != chunks[0].id


def test_chunk_document_refuses_reserved_metadata_and_other_types():
    with pytest.raises(ValueError, match=r"\['source'\]"):
        chunk_document(Document("a", "text", {"source": "b"}))
    with pytest.raises(TypeError, match="Document"):
        chunk_document("just text")  # type: ignore[arg-type]


async def test_ingest_then_ingest_again_adds_and_embeds_nothing():
    store = NumpyStore()
    embedder = WordEmbedder()
    docs = [Document("a.md", TEXT), Document("b.md", "Tools run concurrently. Results keep order.")]
    first = await ingest(docs, embedder=embedder, store=store, size=80, overlap=10)
    assert (first.added, first.removed, first.unchanged, first.chunks) == (4, 0, 0, 4)
    assert len(embedder.calls) == 1 and embedder.embedded == 4  # one batch for everything
    again = await ingest(docs, embedder=embedder, store=store, size=80, overlap=10)
    assert (again.added, again.removed, again.unchanged) == (0, 0, 2)
    assert len(embedder.calls) == 1 and len(store) == 4


async def test_a_changed_document_replaces_its_old_chunks():
    store = NumpyStore()
    embedder = WordEmbedder()
    docs = [Document("a.md", TEXT), Document("b.md", "Unrelated.")]
    await ingest(docs, embedder=embedder, store=store, size=80, overlap=10)
    edited = TEXT.replace("one file", "a single file")
    report = await ingest(
        [Document("a.md", edited), Document("b.md", "Unrelated.")],
        embedder=embedder,
        store=store,
        size=80,
        overlap=10,
    )
    assert (report.added, report.removed, report.unchanged) == (3, 3, 1)
    texts = [r.text for r in await store.get(await store.ids(where={"source": "a.md"}))]
    assert any("a single file" in t for t in texts) and not any("one file" in t for t in texts)
    assert len(store) == 4


async def test_ingest_into_a_file_store_survives_a_reopen(tmp_path):
    path = tmp_path / "docs.vectors"
    embedder = WordEmbedder()
    docs = [Document("a.md", TEXT)]
    await ingest(docs, embedder=embedder, store=await NumpyStore.open(path), size=80, overlap=10)
    reopened = await NumpyStore.open(path)
    report = await ingest(docs, embedder=embedder, store=reopened, size=80, overlap=10)
    assert report.added == 0 and embedder.embedded == 3
    hits = await reopened.search((await WordEmbedder().embed(["crash corrupts file"]))[0], k=1)
    assert hits[0].metadata["source"] == "a.md" and "crash" in hits[0].text


async def test_ingest_refuses_duplicate_sources_and_a_short_embedder():
    store = NumpyStore()
    with pytest.raises(ValueError, match="share a source"):
        await ingest([Document("a", "x"), Document("a", "y")], embedder=WordEmbedder(), store=store)

    class Short(WordEmbedder):
        async def embed(self, texts):
            return (await super().embed(texts))[:-1]

    with pytest.raises(ValueError, match="returned 0 vectors for 1 texts"):
        await ingest([Document("a", "x")], embedder=Short(), store=store)
    assert len(store) == 0


async def test_an_emptied_document_removes_its_chunks():
    embedder = WordEmbedder()
    store = NumpyStore()
    await ingest([Document("a.md", TEXT)], embedder=embedder, store=store, size=80, overlap=10)
    report = await ingest([Document("a.md", "")], embedder=embedder, store=store)
    assert (report.added, report.removed, report.chunks) == (0, 3, 0)
    assert len(store) == 0
