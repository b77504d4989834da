"""Ingestion: documents cut into overlapping chunks, embedded, and kept in a store.

```python
report = await ingest([Document("README.md", text)], embedder=embedder, store=store)
```
Chunks end on paragraph breaks where they can, else on line or sentence ends,
else between words. Each carries its source and position in its metadata, and
an id derived from the document's content, so ingesting an unchanged
document again finds every chunk already stored and embeds nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from itertools import pairwise
from types import MappingProxyType
from typing import Any

import attrs
import orjson

from ..llm._embedder import Embedder
from ._store import Record, VectorStore

__all__ = ("Chunk", "Document", "IngestReport", "chunk_document", "chunk_text", "ingest")

RESERVED = frozenset({"source", "index", "start", "end", "digest"})
"""Metadata keys every chunk gets from ingestion; a document may not set them."""

# Where a chunk may end, from the best place to the worst.
_BREAKS = (
    re.compile(r"\n[ \t]*\n\s*"),  # paragraphs
    re.compile(r"\n"),  # lines: lists, headings, code
    re.compile(r"(?<=[.!?…;:])\s+"),  # sentences
    re.compile(r"\s+"),  # words
)
_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\n")
_SPACE = re.compile(r"\s+")


def _frozen(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return value if isinstance(value, MappingProxyType) else MappingProxyType(dict(value))


@attrs.frozen
class Document:
    """A text to ingest: `source` names it (a path, a URL) and must be unique in a store."""

    source: str
    text: str
    metadata: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen)


@attrs.frozen
class Chunk:
    """A piece of a document: `text` is `document.text[start:end]` (see `metadata`)."""

    id: str
    text: str
    metadata: Mapping[str, Any] = attrs.field(converter=_frozen)


@attrs.frozen
class IngestReport:
    """What `ingest` did: chunks embedded and stored, stale chunks removed, documents skipped."""

    added: int
    removed: int
    unchanged: int
    chunks: int


def _check_sizes(size: int, overlap: int) -> None:
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive number of characters, not {size!r}")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap < size:
        raise ValueError(f"overlap must be within 0..size-1 characters, not {overlap!r}")


def _segments(text: str, start: int, end: int, limit: int, level: int) -> Iterator[tuple[int, int]]:
    """Cut `text[start:end]` into pieces of at most `limit` characters at the best breaks."""
    if end - start <= limit:
        yield start, end
        return
    if level == len(_BREAKS):
        for at in range(start, end, limit):
            yield at, min(at + limit, end)
        return
    cuts = [m.end() for m in _BREAKS[level].finditer(text, start, end) if start < m.end() < end]
    for a, b in pairwise([start, *cuts, end]):
        yield from _segments(text, a, b, limit, level + 1)


def _overlap_start(text: str, boundary: int, floor: int, overlap: int) -> int:
    """Where a chunk starting at `boundary` begins, reaching back about `overlap` characters."""
    low = max(floor, boundary - overlap)
    if low >= boundary:
        return boundary
    for pattern in (_SENTENCE, _SPACE):  # start on a sentence, else on a word
        found = pattern.search(text, low, boundary)
        if found is not None and found.end() < boundary:
            return found.end()
    return low


def chunk_text(text: str, *, size: int = 1000, overlap: int = 150) -> list[tuple[int, int]]:
    """The `(start, end)` offsets of the chunks of `text`, in order.

    Chunks hold at most `size` characters, with up to `overlap` characters of
    the previous chunk at their start; they end on the best break available
    (paragraph, line, sentence, word) and carry no leading or trailing blanks.
    """
    _check_sizes(size, overlap)
    segments = list(_segments(text, 0, len(text), size - overlap, 0))
    spans: list[tuple[int, int]] = []
    i = 0
    previous = -1
    while i < len(segments):
        first = segments[i][0]
        begin = _overlap_start(text, first, previous + 1, overlap) if spans else first
        end = segments[i][1]
        i += 1
        while i < len(segments) and segments[i][1] - begin <= size:
            end = segments[i][1]
            i += 1
        span = _trim(text, begin, end)
        if span is not None:
            spans.append(span)
            previous = span[0]
    return spans


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _digest(document: Document, size: int, overlap: int) -> str:
    key = orjson.dumps(
        [document.source, document.text, dict(document.metadata), size, overlap],
        option=orjson.OPT_SORT_KEYS,
        default=str,
    )
    return hashlib.sha256(key).hexdigest()[:16]


def chunk_document(document: Document, *, size: int = 1000, overlap: int = 150) -> list[Chunk]:
    """The chunks of `document`, with `source`, `index`, `start`, `end` and `digest` metadata.

    Chunk ids are `source#index@digest`, where the digest covers the text, the
    metadata and the chunk sizes: an unchanged document gets the same ids.
    """
    if not isinstance(document, Document):
        raise TypeError(f"chunk_document takes a Document, not {type(document).__name__}")
    clash = RESERVED.intersection(document.metadata)
    if clash:
        raise ValueError(
            f"document {document.source!r} sets metadata keys that ingestion fills in: "
            f"{sorted(clash)}; rename them"
        )
    digest = _digest(document, size, overlap)
    chunks = []
    for index, (start, end) in enumerate(chunk_text(document.text, size=size, overlap=overlap)):
        position = {"source": document.source, "index": index, "start": start, "end": end}
        chunks.append(
            Chunk(
                f"{document.source}#{index}@{digest}",
                document.text[start:end],
                {**document.metadata, **position, "digest": digest},
            )
        )
    return chunks


async def ingest(
    documents: Sequence[Document],
    *,
    embedder: Embedder,
    store: VectorStore,
    size: int = 1000,
    overlap: int = 150,
) -> IngestReport:
    """Chunk, embed and store `documents`; chunks already stored are not embedded again.

    A document whose content changed replaces its old chunks: the new ones are
    stored first, then the stale ones removed, so an interruption leaves extra
    chunks rather than missing ones. All new chunks go in one `upsert`.

    Raises:
        ValueError: two documents share a source, or a document sets reserved metadata.
    """
    _check_sizes(size, overlap)
    sources = [d.source for d in documents]
    if len(set(sources)) != len(sources):
        raise ValueError("two documents share a source; sources name documents uniquely")
    fresh: list[Chunk] = []
    stale: list[str] = []
    unchanged = total = 0
    for document in documents:
        chunks = chunk_document(document, size=size, overlap=overlap)
        total += len(chunks)
        stored = set(await store.ids(where={"source": document.source}))
        wanted = {c.id for c in chunks}
        if wanted == stored:
            unchanged += 1
            continue
        fresh.extend(c for c in chunks if c.id not in stored)
        stale.extend(sorted(stored - wanted))
    if fresh:
        vectors = await embedder.embed([c.text for c in fresh])
        if len(vectors) != len(fresh):
            raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(fresh)} texts")
        await store.upsert(
            [Record(c.id, v, c.text, c.metadata) for c, v in zip(fresh, vectors, strict=True)]
        )
    removed = await store.delete(stale) if stale else 0
    return IngestReport(added=len(fresh), removed=removed, unchanged=unchanged, chunks=total)
