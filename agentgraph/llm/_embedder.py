"""The `Embedder` protocol, apart from the clients so that the engine can name it cheaply."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ("Embedder", "checked_texts")


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors, one per text, in order.

    ```python
    async def index(embedder: Embedder) -> list[list[float]]:
        return await embedder.embed(["first passage", "second passage"])
    ```
    """

    @property
    def dimensions(self) -> int | None:
        """The vector length: as configured, else learned from the first answer, else `None`."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def checked_texts(texts: Sequence[str]) -> list[str]:
    """`texts` as a list, refusing a lone string and anything that is not a string."""
    if isinstance(texts, str):
        # A lone string would otherwise be embedded one character at a time.
        raise TypeError("embed() takes a sequence of strings; wrap a single text in a list")
    items = list(texts)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"embed() takes strings, got {type(item).__name__}")
    return items
