"""What memory stores keep (`Item`), what search finds (`MemoryHit`), the `Memory`
protocol, and the checks every namespace, key and value passes before a store sees it."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import attrs
import orjson

from ..rag._rows import Filter
from ..rag._store import Hit
from ._errors import MemoryDataError, MemoryInputError

__all__ = (
    "MAX_KEY",
    "MAX_LABEL",
    "MAX_WORD",
    "Item",
    "Memory",
    "MemoryHit",
    "Namespace",
    "check_key",
    "check_limit",
    "check_namespace",
    "check_text",
    "check_ttl",
    "decode_value",
    "encode_value",
    "indexed_text",
    "join_namespace",
    "split_namespace",
    "terms",
)

Namespace = tuple[str, ...]
"""Where an item lives: `("user", "42", "facts")`; searches take a prefix of it."""

MAX_KEY = 256
"""The longest key, in characters."""
MAX_LABEL = 128
"""The longest label of a namespace, in characters."""
MAX_DEPTH = 16
"""The most labels a namespace may have."""
_MAX_NESTING = 64
_SEP = "\x1f"
"""Joins a namespace's labels in a stored row; a label may not hold it."""
_ASCII_WORD = re.compile(r"[a-z0-9]+")
MAX_WORD = 200
"""The longest word keyword search indexes and matches, in characters."""


def _frozen(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return value if isinstance(value, MappingProxyType) else MappingProxyType(dict(value))


@attrs.frozen
class Item:
    """One remembered value: where it lives, its JSON object, and its history.

    Attributes:
        version: 1 when first put, one more with every later put of the same key.
        created: when the key was first put (seconds since the epoch, by the store's clock).
        updated: when it was last put.
        expires: when it stops being visible; None to live until deleted.
    """

    namespace: Namespace
    key: str
    value: Mapping[str, Any] = attrs.field(converter=_frozen)
    version: int
    created: float
    updated: float
    expires: float | None = None

    def to_data(self) -> dict[str, Any]:
        return {
            "ns": list(self.namespace),
            "key": self.key,
            "value": dict(self.value),
            "version": self.version,
            "created": self.created,
            "updated": self.updated,
            "expires": self.expires,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Item:
        """The item `to_data` gave (from a journal's record: plain JSON, no code)."""
        return cls(
            tuple(data["ns"]),
            data["key"],
            data["value"],
            data["version"],
            data["created"],
            data["updated"],
            data["expires"],
        )


@attrs.frozen
class MemoryHit(Hit):
    """A search result: a `Hit` (id = the key, text = what was indexed, metadata = the
    value, score = cosine similarity or keyword rank; 0 for a listing) and its `Item`."""

    item: Item


@runtime_checkable
class Memory(Protocol):
    """A long-term store of JSON objects under tuple namespaces, kept across runs.

    ```python
    await memory.put(("user", "42"), "diet", {"text": "vegetarian"})
    item = await memory.get(("user", "42"), "diet")
    hits = await memory.search(("user",), "what does the user eat?", limit=3)
    ```
    A put with an `effect` id that the store already applied changes nothing and
    returns what that put returned: runs pass their journal's effect key there,
    so a resumed step cannot write twice.
    """

    async def put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, Any],
        *,
        ttl: float | None = None,
        effect: str | None = None,
    ) -> Item:
        """Store `value` under `key`, replacing what was there; returns the stored item."""
        ...

    async def put_many(
        self,
        namespace: Sequence[str],
        values: Mapping[str, Mapping[str, Any]],
        *,
        ttl: float | None = None,
        effect: str | None = None,
    ) -> list[Item]:
        """Store several values at once (one embedding batch, one transaction)."""
        ...

    async def get(self, namespace: Sequence[str], key: str) -> Item | None:
        """The item under `key`, or None (also when it expired)."""
        ...

    async def delete(
        self, namespace: Sequence[str], key: str, *, effect: str | None = None
    ) -> bool:
        """Remove the item under `key`; returns whether there was one."""
        ...

    async def search(
        self,
        namespace_prefix: Sequence[str],
        query: str | None = None,
        *,
        filter: Filter | None = None,
        limit: int = 10,
    ) -> list[MemoryHit]:
        """Items under `namespace_prefix` matching `filter`, most relevant to `query` first."""
        ...

    async def list_namespaces(
        self, prefix: Sequence[str] = (), *, max_depth: int | None = None, limit: int = 100
    ) -> list[Namespace]:
        """The namespaces holding live items, sorted (cut to `max_depth` labels)."""
        ...


def check_namespace(namespace: Sequence[str], *, prefix: bool = False) -> Namespace:
    what = "namespace prefix" if prefix else "namespace"
    if isinstance(namespace, str) or not isinstance(namespace, Sequence):
        raise MemoryInputError(what, f"is a tuple of strings, not {type(namespace).__name__}")
    labels = tuple(namespace)
    if not labels and not prefix:
        raise MemoryInputError(what, "is empty; name at least one label, like ('user', '42')")
    if len(labels) > MAX_DEPTH:
        raise MemoryInputError(what, f"has {len(labels)} labels; at most {MAX_DEPTH} are allowed")
    for i, label in enumerate(labels):
        if not isinstance(label, str):
            raise MemoryInputError(f"{what}[{i}]", f"is a string, not {type(label).__name__}")
        if not label:
            raise MemoryInputError(f"{what}[{i}]", "is an empty string")
        if len(label) > MAX_LABEL:
            raise MemoryInputError(f"{what}[{i}]", f"is longer than {MAX_LABEL} characters")
        if _SEP in label or "\x00" in label:
            raise MemoryInputError(f"{what}[{i}]", "holds a control character (\\x00 or \\x1f)")
        check_text(label, f"{what}[{i}]")
    return labels


def check_key(key: str) -> str:
    if not isinstance(key, str):
        raise MemoryInputError("key", f"is a string, not {type(key).__name__}")
    if not key:
        raise MemoryInputError("key", "is an empty string")
    if len(key) > MAX_KEY:
        raise MemoryInputError("key", f"is {len(key)} characters long; at most {MAX_KEY}")
    return check_text(key, "key")


def check_ttl(ttl: float | None, what: str = "ttl") -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not (0 < ttl < math.inf):
        raise MemoryInputError(what, f"is a positive number of seconds or None, not {ttl!r}")
    return float(ttl)


def check_limit(limit: int, what: str = "limit") -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise MemoryInputError(what, f"is a positive integer, not {limit!r}")
    return limit


def check_text(text: str, where: str) -> str:
    """`text` when every store can keep it as it is: no NUL, no lone surrogate.

    PostgreSQL's text and jsonb cannot hold U+0000, and no store can encode a
    lone surrogate (half of a UTF-16 pair) as UTF-8; refusing both here, before
    any store is asked, makes every store accept and refuse the same text.
    """
    if "\x00" in text:
        raise MemoryInputError(where, f"holds a NUL character (U+0000) at {text.index(chr(0))}")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MemoryInputError(
                where, f"holds a lone surrogate (U+{ord(text[exc.start]):04X}) at {exc.start}"
            ) from None
    return text


def _json(value: Any, where: str, depth: int) -> Any:
    """`value` as plain JSON data (tuples become lists), or a refusal naming where it fails."""
    if isinstance(value, str):
        return check_text(value, where)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            raise MemoryInputError(where, "is an integer too large for JSON numbers")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MemoryInputError(where, f"is {value}, which JSON cannot hold")
        return value
    if depth >= _MAX_NESTING:
        raise MemoryInputError(where, f"is nested deeper than {_MAX_NESTING} levels")
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise MemoryInputError(f"{where}", f"has the key {k!r}; JSON keys are strings")
            check_text(k, f"{where} key {k!r}")
            out[k] = _json(v, f"{where}[{k!r}]", depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [_json(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    raise MemoryInputError(
        where, f"is a {type(value).__name__}, not JSON data (dict, list, str, number, bool, None)"
    )


def encode_value(value: Mapping[str, Any], where: str = "value") -> tuple[dict[str, Any], bytes]:
    """The value as JSON data and as the bytes a store keeps."""
    if not isinstance(value, Mapping):
        raise MemoryInputError(where, f"is a JSON object (a dict), not {type(value).__name__}")
    data = _json(value, where, 0)
    return data, orjson.dumps(data)


def decode_value(raw: bytes | str, namespace: Namespace | str, key: str) -> Mapping[str, Any]:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise MemoryDataError(namespace, key, f"its value is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise MemoryDataError(
            namespace, key, f"its value is a {type(data).__name__}, not an object"
        )
    return MappingProxyType(data)


def join_namespace(namespace: Namespace) -> str:
    """A namespace as one string ending in the separator, so that a prefix of labels is
    a prefix of strings: ("user", "4") never matches ("user", "42")."""
    return "".join(label + _SEP for label in namespace)


def split_namespace(stored: str, key: str) -> Namespace:
    if not stored.endswith(_SEP):
        raise MemoryDataError(stored, key, "its namespace is not a stored namespace")
    return tuple(stored[:-1].split(_SEP))


def indexed_text(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """The text a value is searched by: the named fields' strings, else every top-level string."""
    names = value.keys() if fields is None else fields
    parts = []
    for name in names:
        found = value.get(name)
        if isinstance(found, str) and found:
            parts.append(found)
        elif isinstance(found, list):
            parts.extend(x for x in found if isinstance(x, str) and x)
    return "\n".join(parts)


def terms(text: str) -> list[str]:
    """The words of `text` as keyword search indexes and matches them, each once, in order.

    The same rule in every store: the text is case-folded and decomposed
    (NFKD), its accents (nonspacing marks) dropped, and its words are the runs
    of letters, digits and spacing marks (punctuation, symbols, spaces and `_`
    separate them; "Ann@Example.com" is `ann`, `example`, `com`; "Café" is
    `cafe`). Words longer than `MAX_WORD` characters are left out.
    """
    if text.isascii():
        words: Iterable[str] = _ASCII_WORD.findall(text.lower())
    else:
        decomposed = unicodedata.normalize("NFKD", text.casefold())
        words = "".join(_word_char(c) for c in decomposed).split()
    return list(dict.fromkeys(w for w in words if len(w) <= MAX_WORD))


def _word_char(c: str) -> str:
    """`c` as part of a word, "" for an accent, or a space for a separator."""
    kind = unicodedata.category(c)
    if kind == "Mn":
        return ""
    return c if kind[0] in "LN" or kind in ("Mc", "Me") else " "
