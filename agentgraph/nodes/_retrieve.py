"""The `retrieve` node: hits from a vector store go into the context as labelled sources.

```python
find = retrieve(embedder, store, k=4, max_chars=4000)

@node
def present(ctx: AgentContext[str]) -> AgentContext[str]:
    sources = format_sources(ctx.state["sources"])
    return ctx.evolve(system_prompt=f"Answer from these sources; cite their labels.\\n\\n{sources}")
```
The node adds no prompt text of its own: the sources are data in `ctx.state`,
and how they reach the model is the graph's choice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from .._core._context import AgentContext
from .._core._events import Retrieved, RetrievedSource
from .._core._node import Node
from .._util._public import stored_as
from ..llm._embedder import Embedder
from ..llm._messages import Message
from ._tokens import TokenCounter, clip_at_word, clip_to_tokens, estimate_tokens

if TYPE_CHECKING:
    from .._core._runner import Runtime
    from ..rag._store import Filter, Hit, VectorStore

__all__ = ("Retrieve", "Source", "default_label", "format_sources", "retrieve")

T = TypeVar("T")

Query = Callable[[AgentContext[Any]], str]
"""Where the query comes from: a function of the context."""


@stored_as("agentgraph:Source")
@attrs.frozen
class Source:
    """A retrieved passage as it sits in the context.

    Attributes:
        label: how the passage is cited, e.g. `[1] README.md`.
        id: the record id in the store.
        text: the passage, cut when `clipped`.
        score: cosine similarity to the query.
        metadata: the record's metadata (source, position, ...).
        clipped: True when the budget cut the passage.
    """

    label: str
    id: str
    text: str
    score: float
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    clipped: bool = False


def default_label(number: int, hit: Hit) -> str:
    """`[n] source` when the metadata names a source, else `[n] id`."""
    source = hit.metadata.get("source")
    return f"[{number}] {source if isinstance(source, str) and source else hit.id}"


def format_sources(sources: Sequence[Source]) -> str:
    """The sources as text: each label on its own line above its passage, blank lines between."""
    return "\n\n".join(f"{s.label}\n{s.text}" for s in sources)


def _default_query(ctx: AgentContext[Any]) -> str:
    value = ctx.input
    if isinstance(value, str):
        return value
    if isinstance(value, Message):
        return value.content
    raise TypeError(
        f"retrieve takes its query from the input, which is a {type(value).__name__}, "
        "not a str or a Message; pass query=lambda ctx: ... to say where the query is"
    )


def _check_budget(instance: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"{attribute.name} must be a number >= 0 or None, not {value!r}")


def _check_k(instance: Any, attribute: Any, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"k must be a positive integer, not {value!r}")


@attrs.frozen(eq=False, slots=True, repr=False)
class Retrieve(Node[T, T]):
    """Embeds a query from the context, searches `store`, and puts the hits in `ctx.state`.

    The hits, best first, become `Source`s under `ctx.state[key]` within the
    budget: `max_chars` characters and/or `max_tokens` tokens of passage text
    (labels are not counted). The passage that crosses the budget is cut at a
    word; the ones after it are left out. A `Retrieved` event records the
    query, every hit, and how much of each went in. A blank query retrieves
    nothing. The input passes through.
    """

    embedder: Embedder
    store: VectorStore
    query: Query | None = None
    k: int = attrs.field(default=4, validator=_check_k)
    where: Filter | None = None
    min_score: float | None = None
    max_chars: int | None = attrs.field(default=4000, validator=_check_budget)
    max_tokens: int | None = attrs.field(default=None, validator=_check_budget)
    count: TokenCounter = estimate_tokens
    label: Callable[[int, Hit], str] = default_label
    key: str = "sources"

    async def run(self, ctx: AgentContext[T], rt: Runtime) -> AgentContext[T]:
        text = (self.query or _default_query)(ctx)
        if not isinstance(text, str):
            raise TypeError(f"the query function returned a {type(text).__name__}, not a str")
        hits: list[Hit] = []
        if text.strip():
            vectors = await rt.embed(self.embedder, [text])
            hits = await self.store.search(vectors[0], k=self.k, where=self.where)
        if self.min_score is not None:
            hits = [h for h in hits if h.score >= self.min_score]
        sources, entries = self._fit(hits)
        await rt.emit(
            Retrieved(rt.step, rt.path, text, self.k, entries, self.max_chars, self.max_tokens)
        )
        return ctx.with_state(**{self.key: sources})

    def _fit(self, hits: list[Hit]) -> tuple[tuple[Source, ...], tuple[RetrievedSource, ...]]:
        chars_left = self.max_chars
        tokens_left = self.max_tokens
        sources: list[Source] = []
        entries: list[RetrievedSource] = []
        for number, hit in enumerate(hits, start=1):
            label = self.label(number, hit)
            shown = hit.text
            if chars_left is not None:
                shown = clip_at_word(shown, chars_left)
            if tokens_left is not None:
                shown = clip_to_tokens(shown, tokens_left, self.count)
            clipped = len(shown) < len(hit.text)
            entries.append(
                RetrievedSource(label, hit.id, hit.score, len(hit.text), len(shown), clipped)
            )
            if shown:
                sources.append(Source(label, hit.id, shown, hit.score, dict(hit.metadata), clipped))
            if chars_left is not None:
                chars_left = 0 if clipped else chars_left - len(shown)
            if tokens_left is not None:
                tokens_left = 0 if clipped else tokens_left - self.count(shown)
        return tuple(sources), tuple(entries)


def retrieve(
    embedder: Embedder,
    store: VectorStore,
    *,
    query: Query | None = None,
    k: int = 4,
    where: Filter | None = None,
    min_score: float | None = None,
    max_chars: int | None = 4000,
    max_tokens: int | None = None,
    count: TokenCounter = estimate_tokens,
    label: Callable[[int, Hit], str] = default_label,
    key: str = "sources",
    name: str = "retrieve",
) -> Retrieve[Any]:
    """A node that retrieves the top `k` passages for a query into `ctx.state[key]`.

    Args:
        embedder: embeds the query (use the one the store was built with).
        store: the vector store to search.
        query: a function of the context giving the query; the input by default
            (a string, or a message's text).
        k: how many hits to ask for.
        where: a metadata filter for the search.
        min_score: leave out hits less similar than this.
        max_chars: the character budget for all passages; None for no limit.
        max_tokens: a token budget, counted with `count`; None for no limit.
        label: names each hit: `(number, hit) -> label`.
        key: the state key the sources go under.
    """
    return Retrieve(
        embedder,
        store,
        query,
        k,
        where,
        min_score,
        max_chars,
        max_tokens,
        count,
        label,
        key,
        name=name,
    )
