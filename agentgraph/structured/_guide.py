"""Descriptions attached to types: `Guide` for fields and values, `generable` for classes.

```python
@generable("A problem found in a file")
@attrs.frozen
class Issue:
    line: Annotated[int, Guide("1-based line number")]
    message: str = attrs.field(metadata={"guide": "what is wrong, in one sentence"})
```
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

import attrs

__all__ = ("GUIDE_KEY", "Generable", "Guide", "class_info", "field_guide", "generable")

C = TypeVar("C", bound=type[Any])

GUIDE_KEY = "guide"
"""The key under which attrs and dataclass field metadata hold a field's guide."""

_INFO_ATTR = "__agentgraph_generable__"


@attrs.frozen
class Guide:
    """A description of a value for the model: `Annotated[int, Guide("line number")]`."""

    text: str


@attrs.frozen
class Generable:
    """What `@generable` recorded about a class.

    Attributes:
        description: one line about the class; goes into its schema and description.
        describe: text that replaces the generated `describe()` output verbatim.
    """

    description: str | None = None
    describe: str | None = None
    values: tuple[tuple[str, str], ...] = ()
    """For an enum: `(member name, what it means)` pairs."""


@overload
def generable(cls: C, /) -> C: ...
@overload
def generable(
    description: str | None = None,
    /,
    *,
    describe: str | None = None,
    values: Mapping[str, str] | None = None,
) -> Callable[[C], C]: ...
def generable(
    target: Any = None,
    /,
    *,
    describe: str | None = None,
    values: Mapping[str, str] | None = None,
) -> Any:
    """Mark an attrs class, dataclass or enum as a structured-output type and describe it.

    Use bare (`@generable`: the class docstring is the description), with a
    description (`@generable("An issue")`), or with `describe=` text that
    replaces the generated markdown description verbatim. For an enum,
    `values` documents its members (by name), in the schema and the prompt:

    ```python
    @generable("How urgent it is.", values={"LOW": "can wait a week", "HIGH": "today"})
    class Priority(enum.Enum):
        LOW = "low"
        HIGH = "high"
    ```
    """
    documented = tuple((values or {}).items())
    if isinstance(target, type):
        return _mark(target, Generable(None, describe, documented))
    if target is not None and not isinstance(target, str):
        raise TypeError(
            f"generable() takes a class or a description string, not {type(target).__name__}"
        )
    info = Generable(target, describe, documented)
    return lambda cls: _mark(cls, info)


def _mark(cls: C, info: Generable) -> C:
    # A class attribute survives attrs' slotted-class rebuild in either decorator order.
    setattr(cls, _INFO_ATTR, info)
    return cls


def class_info(cls: type[Any]) -> Generable:
    """The class's own `@generable` record (not inherited); the docstring fills a gap."""
    info = cls.__dict__.get(_INFO_ATTR)
    if not isinstance(info, Generable):
        info = Generable()
    if info.description is None:
        info = Generable(_docstring(cls), info.describe, info.values)
    return info


def _docstring(cls: type[Any]) -> str | None:
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or not doc.strip():
        return None
    # dataclasses invent a docstring from the signature; it describes nothing.
    if dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}("):
        return None
    return inspect.cleandoc(doc).split("\n\n", 1)[0].replace("\n", " ")


def field_guide(metadata: Mapping[Any, Any]) -> str | None:
    """The guide in attrs or dataclass field metadata, if any."""
    value = metadata.get(GUIDE_KEY)
    if isinstance(value, Guide):
        return value.text
    return value if isinstance(value, str) else None
