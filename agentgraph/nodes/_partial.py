"""Partial objects while a structured answer streams in.

```python
request = ChatRequest([Message.user("Review this diff ...")])
async with stream_structured(model, Review, request) as partials:
    async for partial in partials:
        if partial.has("summary"):
            show(partial.get("summary"))      # grows as tokens arrive
        if partial.complete:
            review = partial.result           # the validated Review
```

Each time text arrives, the answer so far is parsed as the lenient parser does
in streaming mode (`loads_lenient(text, partial=True)`: open strings, arrays
and objects are closed; a dangling key is dropped), and a new `Partial` is
produced when the value changed. While the answer is clean JSON only the new
characters are scanned (see `_prefix`). The last partial is complete: its
`result` is the validated object.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Generic, TypeVar, overload

from .._core._errors import OutputError, ResponseFormatError
from ..llm._model import ChatModel, ChatRequest, ChatResponse, ResponseDone, StreamEvent, TextDelta
from ..structured._compile import shape_of
from ..structured._parse import resolve
from ..structured._partial import Partial as Partial
from ..structured._prefix import PrefixParser
from ..structured._shapes import Shape

__all__ = ("Partial", "PartialStream", "stream_structured")

T = TypeVar("T")

_NOTHING: Any = object()


class PartialStream(Generic[T]):
    """Partials from a stream of model events; `response` is set once the stream ends.

    Iterating raises `OutputError` when the complete answer does not parse or
    validate (with `response` already set), and `ResponseFormatError` when the
    stream ends without its final response. `repairs` names what the lenient
    parser repaired in the complete answer.
    """

    def __init__(self, events: AsyncIterator[StreamEvent], shape: Shape, strict: bool) -> None:
        self._events = events
        self._shape = shape
        self._strict = strict
        self._text = ""
        self._parser = PrefixParser()
        self.repairs: tuple[str, ...] = ()
        self._last: Any = _NOTHING
        self._finished = False
        self.response: ChatResponse | None = None

    @property
    def text(self) -> str:
        """The answer so far."""
        return self._text

    def __aiter__(self) -> PartialStream[T]:
        return self

    async def __anext__(self) -> Partial[T]:
        if self._finished:
            raise StopAsyncIteration
        async for event in self._events:
            if isinstance(event, TextDelta):
                partial = self._grow(event.text)
                if partial is not None:
                    return partial
            elif isinstance(event, ResponseDone):
                self._finished = True
                self.response = event.response
                return self._complete(event.response.message.content)
        self._finished = True
        raise ResponseFormatError("the stream ended without its final response")

    def _grow(self, delta: str) -> Partial[T] | None:
        if not delta:
            return None
        self._text += delta
        try:
            value = self._parser.parse(self._text)
        except OutputError:  # prose before the value, or an opening fence: nothing yet
            return None
        if value == self._last and type(value) is type(self._last):
            return None
        self._last = value
        return Partial(value, text=self._text)

    def _complete(self, text: str) -> Partial[T]:
        # The response's own text is the authority: providers may have cleaned it up.
        self._text = text
        data, result, self.repairs = resolve(self._shape, text, strict=self._strict)
        return Partial(data, complete=True, result=result, text=text)


@overload
def stream_structured(
    model: ChatModel, tp: type[T], request: ChatRequest, *, strict: bool = False
) -> AbstractAsyncContextManager[PartialStream[T]]: ...
@overload
def stream_structured(
    model: ChatModel, tp: Any, request: ChatRequest, *, strict: bool = False
) -> AbstractAsyncContextManager[PartialStream[Any]]: ...
def stream_structured(
    model: ChatModel, tp: Any, request: ChatRequest, *, strict: bool = False
) -> AbstractAsyncContextManager[PartialStream[Any]]:
    """Stream `request` from `model` as partial objects of type `tp`.

    The request is sent as given: put the schema in `request.output` (native
    structured output) or `prompt_fragment(tp)` in its messages yourself, or
    use the `generate` node, which does both. Provider errors propagate.

    Raises:
        UnsupportedType: `tp` has no JSON form (before anything is sent).
    """
    shape = shape_of(tp)
    return _open(model, shape, request, strict)


@asynccontextmanager
async def _open(
    model: ChatModel, shape: Shape, request: ChatRequest, strict: bool
) -> AsyncIterator[PartialStream[Any]]:
    async with model.stream(request) as events:
        yield PartialStream(events, shape, strict)
