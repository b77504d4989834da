"""Retrieval: a vector store, ingestion with chunking, and a local embedder.

Needs numpy (`pip install agentgraph-engine[rag]`); the local embedder also needs the
`rag-local` extra. The `retrieve` node lives in `agentgraph.nodes`.
"""

import importlib.util as _util

from .._util._extras import pip_install as _pip_install

if _util.find_spec("numpy") is None:
    raise ImportError(f"agentgraph.rag needs numpy: {_pip_install('rag')}")

from .._core._errors import DimensionMismatch as DimensionMismatch
from .._core._errors import VectorStoreError as VectorStoreError
from ..llm._embed import Embedder as Embedder
from ..llm._embed import OllamaEmbedder as OllamaEmbedder
from ..llm._embed import OpenAIEmbedder as OpenAIEmbedder
from ._chunk import Chunk as Chunk
from ._chunk import Document as Document
from ._chunk import IngestReport as IngestReport
from ._chunk import chunk_document as chunk_document
from ._chunk import chunk_text as chunk_text
from ._chunk import ingest as ingest
from ._local import LocalEmbedder as LocalEmbedder
from ._store import Filter as Filter
from ._store import Hit as Hit
from ._store import NumpyStore as NumpyStore
from ._store import Record as Record
from ._store import VectorStore as VectorStore

__all__ = (
    "Chunk",
    "DimensionMismatch",
    "Document",
    "Embedder",
    "Filter",
    "Hit",
    "IngestReport",
    "LocalEmbedder",
    "NumpyStore",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "Record",
    "VectorStore",
    "VectorStoreError",
    "chunk_document",
    "chunk_text",
    "ingest",
)

from .._util._public import publish as _publish

_publish(__name__, __all__, globals())
