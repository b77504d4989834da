"""The answer so far of a structured answer that streams in, as data (`Partial`).

`agentgraph.nodes.stream_structured` makes them from a model's stream; a
`generate` node reports them as `PartialOutput` events.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

import attrs
import orjson

from ._compile import shape_of
from ._parse import check

__all__ = ("Partial",)

T = TypeVar("T")


@attrs.frozen
class Partial(Generic[T]):
    """The answer so far, as data.

    Attributes:
        value: the JSON parsed so far: for an object, a dict of the fields that
            have arrived (the last one may still be growing).
        complete: True for the last partial of a stream, once the answer has
            been parsed and validated in full.
        result: the validated instance of the requested type when `complete`,
            else None.
        text: the raw answer so far.
    """

    value: Any
    complete: bool = False
    result: T | None = None
    text: str = ""

    def has(self, name: str) -> bool:
        """Whether the field `name` has begun to arrive."""
        return isinstance(self.value, Mapping) and name in self.value

    def get(self, name: str, default: Any = None) -> Any:
        """The field's value so far, or `default` when it has not begun to arrive."""
        if isinstance(self.value, Mapping):
            return self.value.get(name, default)
        return default

    def with_field(self, name: str, value: Any) -> Partial[T]:
        """A copy with field `name` set to `value`: build a partial object by hand."""
        fields = dict(self.value) if isinstance(self.value, Mapping) else {}
        fields[name] = value
        return Partial(fields, text=self.text)

    def to_complete(self, tp: type[T], *, strict: bool = False) -> Partial[T]:
        """The fields so far validated as a whole `tp`: a complete partial with `result` set.

        Raises:
            OutputError: a field is missing or wrong; `.errors` lists each one.
        """
        raw = self.text or orjson.dumps(self.value, default=str).decode()
        result = check(shape_of(tp), self.value, strict=strict, raw=raw)
        return Partial(self.value, complete=True, result=result, text=self.text)

    def done(self, name: str) -> bool:
        """Whether the field's value is final: the answer is complete or a later field began.

        Fields arrive in order, so only the last field so far can still grow.
        """
        if not self.has(name):
            return False
        return self.complete or name != list(self.value)[-1]
