"""A run's state as an AG-UI client sees it: redacted JSON data, and JSON Patches between steps.

A step that changes the state usually changes one or two of its keys and passes
the others on as the same objects (`ctx.evolve(state={**ctx.state, ...})`). So
the state is converted and redacted key by key: an entry whose value is the very
same scalar as before keeps its converted form, and the patch compares only the
entries that were converted again. The patch is what `jsonpatch.make_patch`
would send in meaning (applied to the client's state it gives the new state),
built without copying the whole state twice per step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._util._redact import Redactor
from ..tracing._records import plain

__all__ = ("StateView",)

_SCALARS = frozenset({str, int, float, bool, type(None)})
"""Values that cannot change in place: the same object is the same data."""

Entry = tuple[Any, Any, Any]
"""A state entry: the value given, then its key and value as the client sees them."""


class StateView:
    """The state last sent to the client, and what changed since."""

    __slots__ = ("_entries", "_redactor", "seen", "shown")

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._entries: dict[Any, Entry] = {}
        self.seen: Any = None
        """The state mapping last looked at: most steps pass it on untouched."""
        self.shown: dict[str, Any] = {}
        """The state as the client has it."""

    def start(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """The snapshot of the run's first state."""
        self._entries = {}
        self.seen = state
        self.shown = self._view(state)
        return self.shown

    def change(self, state: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The JSON Patch from the state last sent to `state` (empty when it shows the same)."""
        self.seen = state
        before, after = self.shown, self._view(state)
        self.shown = after
        ops: list[dict[str, Any]] = []
        _diff(before, after, "", ops)
        return ops

    def _view(self, state: Mapping[str, Any]) -> dict[str, Any]:
        previous, entries = self._entries, {}
        for key, value in state.items():
            entry = previous.get(key)
            if entry is None or entry[0] is not value or type(value) not in _SCALARS:
                entry = (value, *self._entry(key, value))
            entries[key] = entry
        self._entries = entries
        return {shown_key: shown for _, shown_key, shown in entries.values()}

    def _entry(self, key: Any, value: Any) -> tuple[Any, Any]:
        """One entry converted and redacted as it is within the whole state."""
        scalar = type(key) is str and type(value) in _SCALARS
        data = {key: value} if scalar else plain({key: value})  # plain data as it is
        cleaned = self._redactor.record({"state": data})["state"]
        if not isinstance(cleaned, dict) or len(cleaned) != 1:  # pragma: no cover - defensive
            return str(key), cleaned
        return next(iter(cleaned.items()))


def _pointer(key: Any) -> str:
    text = str(key)
    if "~" in text or "/" in text:
        text = text.replace("~", "~0").replace("/", "~1")
    return "/" + text


def _diff(
    before: Mapping[str, Any], after: Mapping[str, Any], path: str, ops: list[dict[str, Any]]
) -> None:
    for key in before:
        if key not in after:
            ops.append({"op": "remove", "path": path + _pointer(key)})
    for key, value in after.items():
        where = path + _pointer(key)
        if key not in before:
            ops.append({"op": "add", "path": where, "value": value})
            continue
        old = before[key]
        if old is value:
            continue
        if type(old) is dict and type(value) is dict:
            _diff(old, value, where, ops)
        elif not _same(old, value):
            ops.append({"op": "replace", "path": where, "value": value})


def _same(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same JSON (`1`, `1.0` and `true` are not)."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if kind is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
