"""What a thread search asks for: filters, order, page, fields and extracted paths.

`client.threads.search` sends `metadata` and `values` (matched by containment,
as a JSON document contains another: objects key by key, lists element by
element, anything else by equality), `ids`, `status`, `sort_by` and
`sort_order`, `limit` and `offset`, `select` (the fields each thread keeps)
and `extract` (up to ten aliases of paths into each thread, such as
`values.messages[-1]`, answered in its `extracted` field). Anything the
search cannot read is a 422 naming it, never a search that quietly ignores
it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ._api import Refused, check_uuid, whole_number

__all__ = ("ThreadQuery", "contains")

STATUSES = ("idle", "busy", "interrupted", "error")
SORTS = ("thread_id", "status", "created_at", "updated_at", "state_updated_at")
FIELDS = ("thread_id", "created_at", "updated_at", "metadata", "status", "values", "interrupts")
"""The fields a thread has here; `config` and `context`, which a client may also select,
are not kept on threads, so selecting them adds nothing."""
SELECTABLE = (*FIELDS, "config", "context")
MAX_EXTRACTS = 10
_STEP = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[(-?\d+)\]")


def contains(document: Any, query: Any) -> bool:
    """Whether `document` contains `query` as PostgreSQL's `@>` has it for JSON."""
    if isinstance(query, dict):
        return isinstance(document, dict) and all(
            key in document and contains(document[key], value) for key, value in query.items()
        )
    if isinstance(query, list):
        return isinstance(document, list) and all(
            any(contains(element, wanted) for element in document) for wanted in query
        )
    return type(document) is type(query) and bool(document == query)


def _path(alias: str, text: Any) -> tuple[str | int, ...]:
    """A dotted path with bracketed indices (`values.messages[-1].content`) as its steps."""
    if not isinstance(text, str) or not text:
        raise Refused(422, f"extract {alias!r} is a path such as values.messages[-1], not {text!r}")
    steps: list[str | int] = []
    at = 0
    while at < len(text):
        found = _STEP.match(text, at)
        if found is None or (at == 0 and text.startswith(".")):
            raise Refused(422, f"extract {alias!r}: {text!r} is not a path (at {text[at:]!r})")
        name, index = found.groups()
        steps.append(name if name is not None else int(index))
        at = found.end()
    return tuple(steps)


def _follow(document: Any, steps: Sequence[str | int]) -> Any:
    """What `steps` reach in `document`, None when any of them finds nothing."""
    for step in steps:
        if isinstance(step, int):
            if not isinstance(document, list) or not -len(document) <= step < len(document):
                return None
            document = document[step]
        elif isinstance(document, dict) and step in document:
            document = document[step]
        else:
            return None
    return document


def _object(body: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = body.get(name) or {}
    if not isinstance(value, dict):
        raise Refused(422, f"{name} is a JSON object, not {value!r}")
    return value


def _choice(body: Mapping[str, Any], name: str, choices: Sequence[str], default: Any) -> Any:
    value = body.get(name) or default
    if value is not default and value not in choices:
        raise Refused(422, f"{name} is one of {', '.join(choices)}, not {value!r}")
    return value


@attrs.frozen
class ThreadQuery:
    """A thread search's body, read and checked."""

    metadata: dict[str, Any]
    values: dict[str, Any]
    ids: frozenset[str] | None
    status: str | None
    sort_by: str
    descending: bool
    limit: int
    offset: int
    select: tuple[str, ...]
    extract: tuple[tuple[str, tuple[str | int, ...]], ...]

    @classmethod
    def read(cls, body: Mapping[str, Any], *, metadata: dict[str, Any]) -> ThreadQuery:
        """The query `body` asks, with `metadata` as the authorization hooks left it; 422
        for anything it cannot read."""
        ids = body.get("ids")
        if ids is not None and not isinstance(ids, list):
            raise Refused(422, f"ids is a list of thread ids, not {ids!r}")
        select = body.get("select") or list(FIELDS)
        if not isinstance(select, list) or not all(f in SELECTABLE for f in select):
            raise Refused(422, f"select is a list of {', '.join(SELECTABLE)}, not {select!r}")
        extract = _object(body, "extract")
        if len(extract) > MAX_EXTRACTS:
            raise Refused(422, f"extract has at most {MAX_EXTRACTS} paths, not {len(extract)}")
        order = _choice(body, "sort_order", ("asc", "desc"), "desc")
        return cls(
            metadata=metadata,
            values=_object(body, "values"),
            ids=None if ids is None else frozenset(check_uuid(str(i), "thread id") for i in ids),
            status=_choice(body, "status", STATUSES, None),
            sort_by=_choice(body, "sort_by", SORTS, "created_at"),
            descending=order == "desc",
            limit=whole_number(body, "limit", 10),
            offset=whole_number(body, "offset", 0),
            select=tuple(dict.fromkeys(f for f in select if f in FIELDS)),
            extract=tuple((alias, _path(alias, path)) for alias, path in extract.items()),
        )

    def matches(self, thread: Mapping[str, Any]) -> bool:
        """Whether a thread (as the clients read it) is one the query asks for."""
        return (
            (self.ids is None or thread["thread_id"] in self.ids)
            and (self.status is None or thread["status"] == self.status)
            and contains(thread["metadata"], self.metadata)
            and contains(thread["values"], self.values)
        )

    def answer(self, threads: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The page of matching threads, ordered, with the selected fields and the extracts."""
        found = [t for t in threads if self.matches(t)]
        # The state changes with the thread, so its last update orders `state_updated_at`.
        key = "updated_at" if self.sort_by == "state_updated_at" else self.sort_by
        found.sort(key=lambda t: (t[key], t["thread_id"]), reverse=self.descending)
        page = found[self.offset : self.offset + self.limit]
        answered = []
        for thread in page:
            shown = {name: thread[name] for name in self.select}
            if self.extract:
                extracted = {alias: _follow(thread, steps) for alias, steps in self.extract}
                shown["extracted"] = extracted
            answered.append(shown)
        return answered
