"""`AgentContext`: the immutable data a run passes from node to node."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

import attrs

from .._util._public import stored_as
from ..llm._messages import Message, ToolSpec, Usage, reduce_frozen

if TYPE_CHECKING:
    from ._json import Types

__all__ = ("AgentContext", "History", "Settings")

T = TypeVar("T")
U = TypeVar("U")

_EMPTY_STATE: Mapping[str, Any] = MappingProxyType({})


_SHOWN = 3
"""Messages a `History` repr shows at each end."""

_MAX_DEPTH = 8
"""Forks of forks a `History` chains before it flattens into one list."""


class Encoded:
    """A stored message not decoded yet: `decode(data)` makes it when first read.

    A `History` may hold these in its list (`History._encoded`); reading a position
    decodes what it holds there and puts the message in its place, so every view
    sharing the list decodes each message at most once, and none it never reads.
    """

    __slots__ = ("data", "decode")

    def __init__(self, data: Any, decode: Callable[[Any], Message]) -> None:
        self.data = data
        self.decode = decode


def _decoded(items: list[Any], i: int) -> Message:
    """The message at `items[i]`, decoded (and kept decoded) if it was stored encoded."""
    item = items[i]
    if type(item) is Encoded:
        item = items[i] = item.decode(item.data)
    message: Message = item
    return message


class History(Sequence[Message]):
    """An immutable sequence of messages whose `append` never copies the old ones.

    A `History` is an optional shared prefix (an older history, kept as it is)
    followed by a view of the first items of a list that only ever grows.
    Appending to the newest view extends that list in place (older views cannot
    see the new items), so a step that appends costs the same at message 10 as
    at message 10,000. Appending to an older view, a fork, starts a new list
    after it and keeps the older view as its prefix, so forks share their
    common past. A chain of forks of forks is flattened into one list when it
    grows deeper than a few links, which keeps indexing O(1).
    """

    __slots__ = ("_base", "_depth", "_items", "_len", "_off")

    _base: History | None
    _depth: int
    _items: list[Message]
    _len: int
    _off: int

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._base = None
        self._depth = 0
        self._off = 0
        self._items = list(messages)
        self._len = len(self._items)

    @classmethod
    def _encoded(
        cls, base: History | None, data: Sequence[Any], decode: Callable[[Any], Message]
    ) -> History:
        """`base` (or nothing) followed by the messages `data` stores, each decoded by
        `decode` when first read: a long history read back from a store costs what
        its reader looks at. Indistinguishable from a history of the decoded messages."""
        items: list[Any] = [Encoded(d, decode) for d in data]
        if base is None:
            return History._view(None, items, len(items))
        return base.append(*items)

    @classmethod
    def _view(cls, base: History | None, items: list[Message], length: int) -> History:
        view = cls.__new__(cls)
        view._base = base
        if base is None:
            view._depth = view._off = 0
        else:
            view._depth = base._depth + 1
            view._off = base._off + base._len
        view._items = items
        view._len = length
        return view

    def append(self, *messages: Message) -> History:
        """Return a new history with `messages` added at the end."""
        items = self._items
        if len(items) == self._len:
            items.extend(messages)
            return History._view(self._base, items, len(items))
        if self._depth < _MAX_DEPTH:
            return History._view(self, list(messages), len(messages))
        return History((*self, *messages))

    def _added_after(self, base: History) -> list[Message] | None:
        """The messages this history adds after `base`, or None if it does not extend it."""
        if self._items is base._items and self._base is base._base:
            # One append-only list: the shorter view is a prefix of the longer.
            if self._len < base._len:
                return None
            return [_decoded(self._items, i) for i in range(base._len, self._len)]
        if self._base is not None and self._off >= len(base):
            before = self._base._added_after(base)
            if before is None:
                return None
            return before + [_decoded(self._items, i) for i in range(self._len)]
        if len(self) < len(base):
            return None
        mine = list(self)
        if all(old is new or old == new for old, new in zip(base, mine, strict=False)):
            return mine[len(base) :]
        return None

    def __reduce__(self) -> tuple[Any, ...]:
        return History, (tuple(self),)

    def __len__(self) -> int:
        return self._off + self._len

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> History: ...
    def __getitem__(self, index: int | slice) -> Message | History:
        if isinstance(index, slice):
            taken = range(*index.indices(self._off + self._len))
            if 4 * len(taken) < self._off + self._len:
                # Only the positions a short slice takes are read (`history[-20:]`
                # of a long one decodes 20 stored messages, not all of them).
                return History([self[i] for i in taken])
            return History(list(self)[index])
        size = self._off + self._len
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("history index out of range")
        view = self
        while index < view._off:
            view = view._base  # type: ignore[assignment]  # _off > 0 means a base exists
        return _decoded(view._items, index - view._off)

    def __iter__(self) -> Iterator[Message]:
        if self._base is not None:
            yield from self._base
        items = self._items
        for i in range(self._len):
            item: Any = items[i]
            yield item if type(item) is not Encoded else _decoded(items, i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, History):
            if len(self) != len(other):
                return False
            if self._items is other._items and self._base is other._base:
                return True
            return list(self) == list(other)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a sequence of data, compared like a list

    def __repr__(self) -> str:
        # Bounded: a long conversation must not cost a long repr (tracebacks, loggers).
        size = len(self)
        if size <= 2 * _SHOWN:
            return f"History({list(self)!r})"
        head = ", ".join(repr(self[i]) for i in range(_SHOWN))
        tail = ", ".join(repr(self[i]) for i in range(size - _SHOWN, size))
        return f"History([{head}, <{size - 2 * _SHOWN} more>, {tail}], len={size})"

    def last(self, role: str | None = None) -> Message | None:
        """The last message, or the last one with `role`; None when there is none."""
        view: History | None = self
        while view is not None:
            items = view._items
            for i in range(view._len - 1, -1, -1):
                message = _decoded(items, i)
                if role is None or message.role == role:
                    return message
            view = view._base
        return None


def _to_history(value: Iterable[Message]) -> History:
    return value if isinstance(value, History) else History(value)


def _to_state(value: Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(value, MappingProxyType):
        return value
    return MappingProxyType(dict(value)) if value else _EMPTY_STATE


def _to_tools(value: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]:
    return value if isinstance(value, tuple) else tuple(value)


Think = bool | Literal["low", "medium", "high", "auto"] | None
"""A thinking hint: on or off, an effort, `"auto"` (the model's own default), or unset."""


def _check_think(value: Any) -> None:
    if value is None:  # the default: no need to load the model module to accept it
        return
    from ..llm._model import think_hint

    think_hint(value)


@stored_as("agentgraph:Settings")
@attrs.frozen
class Settings:
    """Model settings as data: which model, and the hints sent with each request.

    `cache` turns prompt caching on or off for the request (Anthropic's
    `cache_control` breakpoints); `None` leaves it to the model's own setting.
    """

    model: str | None = None
    temperature: float | None = None
    max_output: int | None = None
    think: Think = attrs.field(default=None, validator=lambda _, __, value: _check_think(value))
    cache: bool | None = None

    def with_(self, **changes: Any) -> Settings:
        """Return a copy with `changes` applied."""
        return attrs.evolve(self, **changes)


_DEFAULT_SETTINGS = Settings()
_NO_USAGE = Usage()


@stored_as("agentgraph:AgentContext")
@attrs.frozen(eq=True, slots=True, weakref_slot=False)
class AgentContext(Generic[T]):
    """What a node receives and returns: frozen data, safe to keep, share and retry.

    Args:
        input: the value the next node works on; its type is the node's `In`.
        history: the conversation so far.
        system_prompt: the agent's identity and standing instructions.
        settings: the model and its request hints.
        tools: the specs of the tools the model may call.
        state: a read-only mapping for the user's own data.
        usage: tokens and model calls spent so far.
    """

    input: T
    history: History = attrs.field(factory=History, converter=_to_history)
    system_prompt: str | None = None
    settings: Settings = _DEFAULT_SETTINGS
    tools: tuple[ToolSpec, ...] = attrs.field(default=(), converter=_to_tools)
    state: Mapping[str, Any] = attrs.field(factory=lambda: _EMPTY_STATE, converter=_to_state)
    usage: Usage = _NO_USAGE

    def with_input(self, value: U) -> AgentContext[U]:
        """Return a context whose input is `value`; everything else is shared."""
        return AgentContext(
            value,
            self.history,
            self.system_prompt,
            self.settings,
            self.tools,
            self.state,
            self.usage,
        )

    def map(self, fn: Callable[[T], U]) -> AgentContext[U]:
        """Return a context whose input is `fn(input)`."""
        return self.with_input(fn(self.input))

    def append(self, *messages: Message) -> AgentContext[T]:
        """Return a context with `messages` added to the history (no copy of the old ones)."""
        return AgentContext(
            self.input,
            self.history.append(*messages),
            self.system_prompt,
            self.settings,
            self.tools,
            self.state,
            self.usage,
        )

    def with_state(self, **values: Any) -> AgentContext[T]:
        """Return a context whose state also holds `values`."""
        return attrs.evolve(self, state={**self.state, **values})

    def add_usage(self, usage: Usage) -> AgentContext[T]:
        """Return a context with `usage` added to the running total."""
        return attrs.evolve(self, usage=self.usage + usage)

    def evolve(self, **changes: Any) -> AgentContext[T]:
        """Return a copy with fields replaced (`input` keeps its type; use `with_input`)."""
        return attrs.evolve(self, **changes)

    def to_json(self) -> bytes:
        """Encode as JSON (types are tagged so that `from_json` restores them)."""
        from ._json import dumps_tagged

        return dumps_tagged(self)

    @staticmethod
    def from_json(data: bytes | str, *, types: Types | None = None) -> AgentContext[Any]:
        """Decode what `to_json` produced.

        Only agentgraph's own types and the classes in `types` are constructed
        (see `Types`); stored data never chooses which code runs.

        Raises:
            ContextDecodingError: the data is broken, names a type `types` does
                not hold, or holds something other than a context.
        """
        from ._errors import ContextDecodingError
        from ._json import NO_TYPES, loads_tagged

        value = loads_tagged(data, types if types is not None else NO_TYPES)
        if not isinstance(value, AgentContext):
            raise ContextDecodingError(f"the JSON holds a {type(value).__name__}, not a context")
        return value


# Pickling (for your own processes): the read-only state travels as a dict.
AgentContext.__reduce__ = reduce_frozen  # type: ignore[assignment,method-assign]
