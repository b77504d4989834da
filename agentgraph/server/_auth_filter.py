"""The filter an authorization handler returns, applied to a resource's metadata.

A handler allows a request on the resources whose metadata match the filter it
returns, the LangGraph SDK's `FilterType`: every key must match (a logical AND),
as plain equality (`{"owner": "alice"}`, or `{"owner": {"$eq": "alice"}}`), or as
membership in a list (`{"tags": {"$contains": "a"}}`, every element of
`{"tags": {"$contains": ["a", "b"]}}`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import orjson

__all__ = ("EVERYTHING", "Filter")

_SCALARS = (str, int, float, bool, type(None))


def _same(stored: Any, wanted: Any) -> bool:
    """Equality that keeps true and false apart from 1 and 0, as JSON does."""
    return bool(stored == wanted) and isinstance(stored, bool) == isinstance(wanted, bool)


def _scalar(key: str, value: Any) -> Any:
    if not isinstance(value, _SCALARS):
        raise ValueError(
            f"the authorization handler's filter on {key!r} compares with {value!r}: "
            "a filter value is a string, a number, true, false or null",
        )
    return value


def _sqlite_same(alias: str, wanted: Any) -> tuple[str, tuple[Any, ...]]:
    """SQLite's `_same`: the `json_each` row `alias` holds `wanted`, of its JSON type."""
    if wanted is None:
        return f"{alias}.type = 'null'", ()
    if isinstance(wanted, bool):
        return f"{alias}.type = '{'true' if wanted else 'false'}'", ()
    if isinstance(wanted, str):
        return f"{alias}.type = 'text' AND {alias}.atom = ?", (wanted,)
    return f"{alias}.type IN ('integer', 'real') AND {alias}.atom = ?", (wanted,)


@attrs.frozen
class Filter:
    """Pairs a resource's metadata must have (`equal`), and lists it must hold every
    value of (`contains`); none of either matches every resource."""

    equal: tuple[tuple[str, Any], ...] = ()
    contains: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    @classmethod
    def of(cls, given: Mapping[Any, Any]) -> Filter:
        """The filter a handler returned; ValueError for one that is not a `FilterType`
        (the server refuses the request: a handler's mistake never allows)."""
        equal: list[tuple[str, Any]] = []
        contains: list[tuple[str, tuple[Any, ...]]] = []
        for key, value in given.items():
            if not isinstance(key, str):
                raise ValueError(f"the authorization handler's filter names {key!r}, not a key")
            if not isinstance(value, Mapping):
                equal.append((key, _scalar(key, value)))
                continue
            if len(value) != 1 or next(iter(value)) not in ("$eq", "$contains"):
                raise ValueError(
                    f"the authorization handler's filter on {key!r} is {dict(value)!r}: "
                    "an operator is one of $eq or $contains, alone",
                )
            operator, operand = next(iter(value.items()))
            if operator == "$eq":
                equal.append((key, _scalar(key, operand)))
            elif isinstance(operand, list | tuple):
                contains.append((key, tuple(_scalar(key, item) for item in operand)))
            else:
                contains.append((key, (_scalar(key, operand),)))
        return cls(tuple(equal), tuple(contains))

    def __bool__(self) -> bool:
        """Whether the filter leaves some resources out."""
        return bool(self.equal or self.contains)

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        """Whether a resource with this metadata passes."""
        for key, wanted in self.equal:
            if key not in metadata or not _same(metadata[key], wanted):
                return False
        for key, items in self.contains:
            held = metadata.get(key)
            if not isinstance(held, list):
                return False
            if not all(any(_same(have, item) for have in held) for item in items):
                return False
        return True

    def sql(self, column: str, *, postgres: bool) -> tuple[str, tuple[Any, ...]]:
        """The filter as an SQL condition on a JSON text `column` and its parameters (`?`
        placeholders), ` AND `-joined and led by ` AND ` (`""` for `EVERYTHING`): what
        `matches` says of each row, so a search reads only the rows it keeps."""
        conditions: list[str] = []
        params: list[Any] = []
        for key, wanted in self.equal:
            if postgres:
                conditions.append(f"(({column})::jsonb -> ?) = ?::jsonb")
                params += [key, orjson.dumps(wanted).decode()]
            else:
                typed, bound = _sqlite_same("m", wanted)
                conditions.append(
                    f"EXISTS (SELECT 1 FROM json_each({column}) AS m WHERE m.key = ? AND {typed})"
                )
                params += [key, *bound]
        for key, items in self.contains:
            if postgres:
                conditions.append(f"(({column})::jsonb -> ?) @> ?::jsonb")
                params += [key, orjson.dumps(list(items)).decode()]
                continue
            # The key holds a list (even for an empty operand, which every list holds).
            conditions.append(
                f"EXISTS (SELECT 1 FROM json_each({column}) AS m "
                "WHERE m.key = ? AND m.type = 'array')"
            )
            params.append(key)
            for item in items:
                typed, bound = _sqlite_same("e", item)
                conditions.append(
                    f"EXISTS (SELECT 1 FROM json_each({column}) AS m, json_each(m.value) AS e "
                    f"WHERE m.key = ? AND m.type = 'array' AND {typed})"
                )
                params += [key, *bound]
        return "".join(f" AND {condition}" for condition in conditions), tuple(params)

    def stamped(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        """`metadata` with the filter's equal pairs set: that of a resource the server
        makes on the caller's behalf (the thread of a run that asks for one), so the
        caller's filter finds it again."""
        return {**metadata, **dict(self.equal)}


EVERYTHING = Filter()
"""The filter of a request a handler allows outright, or that no handler looks at."""
