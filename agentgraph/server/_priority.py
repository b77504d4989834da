"""A run's priority: its own, else its thread's, which a `langgraph_sdk.Priority` may assign.

A run is created with a `priority` from -5 (claimed first) to 5 (claimed
last), in its body or, for clients whose `runs.create` sends no such field
(the LangGraph SDKs), as a query parameter. A run without one takes its
thread's settings, else 0. A thread's settings come from the server's
priority function (`ServerSettings.priority`: a `langgraph_sdk.Priority`
with an `@priority.assign` function, or that function), called at the first
run on a thread with no settings, as the SDK describes; the first settings
stored are kept. Runs a cron queues take their thread's settings too.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import attrs

from ._api import Refused

__all__ = ("PRIORITIES", "PriorityAssigner", "checked_priority")

PRIORITIES = range(-5, 6)
"""The priorities a run may have: -5 is claimed first, 5 last."""
DEFAULT_GROUP = "default"
MAX_GROUP = 256


def checked_priority(body: Mapping[str, Any], query: Mapping[str, str]) -> int | None:
    """The run's `priority` (its body's, else its query's), None when not given; 422 for
    anything but a whole number from -5 to 5, or for two that differ."""
    given = body.get("priority")
    asked = query.get("priority")
    if asked is not None:
        try:
            number = int(asked)
        except ValueError:
            raise Refused(422, f"priority is a whole number from -5 to 5, not {asked!r}") from None
        if given is not None and given != number:
            raise Refused(422, f"priority is {given!r} in the body and {asked!r} in the query")
        given = number
    if given is None:
        return None
    if isinstance(given, bool) or not isinstance(given, int) or given not in PRIORITIES:
        raise Refused(422, f"priority is a whole number from -5 to 5, not {given!r}")
    return given


@attrs.frozen
class _Caller:
    """The caller as a priority function sees it (`langgraph_sdk.auth.types.BaseUser`)."""

    identity: str

    @property
    def is_authenticated(self) -> bool:
        return bool(self.identity)

    @property
    def display_name(self) -> str:
        return self.identity

    @property
    def permissions(self) -> tuple[str, ...]:
        return ()

    def __getitem__(self, key: str) -> Any:
        if key == "identity":
            return self.identity
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key == "identity"

    def __iter__(self) -> Iterator[str]:
        return iter(("identity",))


class PriorityAssigner:
    """Calls a priority function (`langgraph_sdk.Priority`, or its assign function) and
    checks what it returns."""

    def __init__(self, priority: object) -> None:
        # A Priority keeps its function in `_assign_handler`, its only attribute.
        handler = getattr(priority, "_assign_handler", priority)
        if not inspect.iscoroutinefunction(handler):
            raise TypeError(
                "the priority is a langgraph_sdk.Priority with an @priority.assign function, "
                f"or an async function of a PriorityContext, not {priority!r}"
            )
        from langgraph_sdk.priority.types import PriorityContext

        self._handler: Callable[[Any], Awaitable[Any]] = handler
        self._context = PriorityContext

    async def assign(
        self,
        *,
        identity: str,
        thread_id: str | None,
        thread_metadata: dict[str, Any],
        assistant: Any,
        run_metadata: dict[str, Any],
    ) -> tuple[int, str]:
        """A thread's priority and fairness group, as the function decides them; a
        500 naming the function when it fails or answers out of range."""
        context = self._context(
            user=_Caller(identity),
            permissions=(),
            thread_id=thread_id,
            thread_metadata=thread_metadata,
            assistant_id=assistant.assistant_id,
            graph_id=assistant.graph_id,
            assistant_metadata=assistant.metadata,
            run_metadata=run_metadata,
            cron_id=None,
        )
        name = getattr(self._handler, "__qualname__", repr(self._handler))
        try:
            settings = await self._handler(context)
        except Exception as exc:
            raise Refused(500, f"the priority function {name} failed: {exc!r}") from exc
        settings = settings or {}
        priority = settings.get("priority")
        priority = 0 if priority is None else priority
        group = settings.get("fairness_group") or DEFAULT_GROUP
        if (
            isinstance(priority, bool)
            or not isinstance(priority, int)
            or priority not in PRIORITIES
        ):
            raise Refused(500, f"the priority function {name} gave priority {priority!r}")
        if not isinstance(group, str) or len(group) > MAX_GROUP:
            raise Refused(500, f"the priority function {name} gave a fairness group {group!r:.300}")
        return priority, group
