"""A deterministic bag-of-words embedder for store, ingestion and retrieval tests."""

import hashlib
import math
import re
from collections.abc import Sequence
from typing import Any

from agentgraph import GraphBuilder, GraphRunner

DIMENSIONS = 64


def word_vector(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "big") % DIMENSIONS] += 1.0
    if not any(vector):
        vector[0] = 1.0  # texts without words still get a direction
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


class WordEmbedder:
    """Texts sharing words get similar vectors; every call is recorded."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [word_vector(t) for t in texts]

    @property
    def embedded(self) -> int:
        return sum(len(batch) for batch in self.calls)


async def run_node(step, ctx, events=None):
    """Run one node as a graph of its own; `events` collects the trace when given."""
    with GraphBuilder[Any, Any]("g") as g:
        g.start.edge_to(step).edge_to(g.finish)
    runner = GraphRunner(sinks=[events.append] if events is not None else [])
    return await runner.run(g.build(), ctx)
