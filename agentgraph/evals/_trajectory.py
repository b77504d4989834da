"""Evaluators of the tool calls and model requests a run recorded.

The trajectory is read from the run's events: every `ToolFinished` is a tool
call (one whose result is an error only with `include_failed=True`), in the
order the model asked for them; every `ModelRequested` is a model request.
`Trajectory`, `ToolArguments`, `MaxToolCalls` and `MaxModelRequests` score as
pydantic-evals' `TrajectoryMatch`, `ArgumentCorrectness`, `MaxToolCalls` and
`MaxModelRequests` do on the `execute_tool` and `chat` spans of the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

from .._core._events import Event, ModelRequested, ModelResponded, ToolFinished
from ..llm._messages import ToolCall
from ._score import Outcome, Score

__all__ = (
    "ArgumentMatch",
    "Call",
    "MaxModelRequests",
    "MaxToolCalls",
    "ToolArguments",
    "Trajectory",
    "model_requests",
    "tool_calls",
)

ArgumentMatch = Literal["exact", "subset"] | Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
"""How arguments compare: `exact` (equal), `subset` (every expected key with an equal
value; other keys allowed), or a function `(actual, expected) -> bool`."""


def tool_calls(events: Iterable[Event], *, include_failed: bool = False) -> tuple[ToolCall, ...]:
    """The tool calls a run made, in the order the model asked for them.

    A call whose result was an error (the tool raised, its arguments were
    invalid, it was refused) counts only with `include_failed`.
    """
    return tuple(call for call, failed in _all_calls(events) if include_failed or not failed)


def _all_calls(events: Iterable[Event]) -> list[tuple[ToolCall, bool]]:
    """Every tool call in the model's order, and whether its result was an error."""
    asked: dict[str, int] = {}
    found: list[tuple[int, int, int, ToolCall, bool]] = []
    for seq, event in enumerate(events):
        kind = type(event)
        if kind is ModelResponded:
            asked = {c.id: i for i, c in enumerate(event.response.message.tool_calls)}  # type: ignore[union-attr]
        elif kind is ToolFinished:
            call, failed = event.call, event.result.is_error  # type: ignore[union-attr]
            # Calls of one response finish in any order; the model's order is the trajectory.
            found.append((event.index, asked.get(call.id, len(asked)), seq, call, failed))  # type: ignore[union-attr]
    found.sort(key=_position)
    return [(item[3], item[4]) for item in found]


def _position(item: tuple[int, int, int, ToolCall, bool]) -> tuple[int, int, int]:
    return item[0], item[1], item[2]


def _calls(outcome: Outcome, include_failed: bool) -> tuple[ToolCall, ...]:
    every: list[tuple[ToolCall, bool]] = outcome.memo(
        "tool_calls", lambda: _all_calls(outcome.events)
    )
    if include_failed:
        return tuple(call for call, _ in every)
    return tuple(call for call, failed in every if not failed)


def model_requests(events: Iterable[Event]) -> int:
    """How many model requests a run sent."""
    return sum(1 for event in events if isinstance(event, ModelRequested))


def arguments_match(
    actual: Mapping[str, Any], expected: Mapping[str, Any], mode: ArgumentMatch
) -> list[str]:
    """What differs between `actual` and `expected` arguments under `mode` (empty: they match)."""
    if callable(mode):
        return [] if mode(actual, expected) else ["the argument check returned False"]
    problems = [
        f"missing key {key!r}"
        if key not in actual
        else f"key {key!r}: expected {want!r}, got {actual[key]!r}"
        for key, want in expected.items()
        if key not in actual or actual[key] != want
    ]
    if mode == "exact":
        problems += [
            f"unexpected key {k!r} with value {v!r}" for k, v in actual.items() if k not in expected
        ]
    return problems


@attrs.frozen
class Call:
    """An expected tool call: its name and, optionally, its arguments."""

    name: str
    arguments: Mapping[str, Any] | None = None


def _lcs(actual: Sequence[Any], expected: Sequence[Any], same: Any) -> int:
    previous = [0] * (len(expected) + 1)
    for a in actual:
        current = [0]
        for j, e in enumerate(expected, 1):
            current.append(previous[j - 1] + 1 if same(a, e) else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def _overlap(actual: Sequence[ToolCall], expected: Sequence[Call], same: Any) -> int:
    """The most expected calls that distinct actual calls can match (bipartite matching)."""
    owner: dict[int, int] = {}

    def place(j: int, seen: set[int]) -> bool:
        for i, call in enumerate(actual):
            if i in seen or not same(call, expected[j]):
                continue
            seen.add(i)
            if i not in owner or place(owner[i], seen):
                owner[i] = j
                return True
        return False

    return sum(place(j, set()) for j in range(len(expected)))


def _f1(hits: int, actual: int, expected: int) -> tuple[float, str]:
    precision = hits / actual if actual else 0.0
    recall = hits / expected if expected else 0.0
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    text = f"precision={hits}/{actual}={precision:.3f}, recall={hits}/{expected}={recall:.3f}"
    return f1, f"{text}, F1={f1:.3f}"


@attrs.frozen
class Trajectory:
    """The run's tool calls against `expected` ones (names, or `Call`s with arguments).

    `order="exact"` gives a bool: the same calls in the same order.
    `"in_order"` gives the F1 of the longest common subsequence, `"any_order"`
    the F1 of the best matching ignoring order (extra and missing calls both
    lower it); both are 1.0 when neither side has a call. A `Call` with
    arguments matches a call of that name whose arguments match under
    `arguments`. `threshold` makes an F1 score pass at or above it.
    """

    expected: Sequence[str | Call] = attrs.field(converter=tuple)
    order: Literal["exact", "in_order", "any_order"] = attrs.field(default="in_order", kw_only=True)
    arguments: ArgumentMatch = attrs.field(default="subset", kw_only=True)
    include_failed: bool = attrs.field(default=False, kw_only=True)
    threshold: float | None = attrs.field(default=None, kw_only=True)
    name: str = attrs.field(default="trajectory", kw_only=True)

    _wanted: tuple[Call, ...] = attrs.field(init=False, eq=False, repr=False)
    _names: tuple[str, ...] | None = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.order not in ("exact", "in_order", "any_order"):
            raise ValueError(f"order is 'exact', 'in_order' or 'any_order', not {self.order!r}")
        wanted = tuple(c if isinstance(c, Call) else Call(c) for c in self.expected)
        object.__setattr__(self, "_wanted", wanted)
        # Names alone compare as plain strings, the common case and the cheap one.
        names = (
            None if any(c.arguments is not None for c in wanted) else tuple(c.name for c in wanted)
        )
        object.__setattr__(self, "_names", names)

    def _same(self, call: ToolCall, want: Call) -> bool:
        if call.name != want.name:
            return False
        return want.arguments is None or not arguments_match(
            call.arguments, want.arguments, self.arguments
        )

    def evaluate(self, outcome: Outcome) -> Score:
        actual = _calls(outcome, self.include_failed)
        expected = self._wanted
        names = [c.name for c in actual]
        shown = f"(expected: {[c.name for c in expected]!r}, actual: {names!r})"
        if self.order == "exact":
            if self._names is not None:
                ok = tuple(names) == self._names
            else:
                ok = len(actual) == len(expected) and all(map(self._same, actual, expected))
            return Score.of(self.name, ok, f"{'matches' if ok else 'differs'} {shown}")
        if not actual and not expected:
            return Score.of(self.name, 1.0, "no calls expected or made", threshold=self.threshold)
        if self._names is not None and self.order == "any_order":
            pool, hits = list(self._names), 0
            for name in names:  # the multiset intersection; trajectories are short
                if name in pool:
                    pool.remove(name)
                    hits += 1
        elif self._names is not None:
            hits = _lcs(names, self._names, str.__eq__)
        elif self.order == "any_order":
            hits = _overlap(actual, expected, self._same)
        else:
            hits = _lcs(actual, expected, self._same)
        f1, why = _f1(hits, len(actual), len(expected))
        return Score.of(self.name, f1, f"{why} {shown}", threshold=self.threshold)


@attrs.frozen
class ToolArguments:
    """One call of `tool` received `expected` arguments (`occurrence`: first, last, or an index)."""

    tool: str
    expected: Mapping[str, Any]
    mode: ArgumentMatch = attrs.field(default="subset", kw_only=True)
    occurrence: Literal["first", "last"] | int = attrs.field(default="first", kw_only=True)
    include_failed: bool = attrs.field(default=False, kw_only=True)
    name: str = attrs.field(default="tool_arguments", kw_only=True)

    def evaluate(self, outcome: Outcome) -> Score:
        calls = [c for c in _calls(outcome, self.include_failed) if c.name == self.tool]
        if not calls:
            return Score.of(self.name, False, f"no call of tool {self.tool!r} was recorded")
        at = {"first": 0, "last": len(calls) - 1}.get(str(self.occurrence), self.occurrence)
        if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at < len(calls):
            missing = f"tool {self.tool!r} was called {len(calls)} time(s); no occurrence {at!r}"
            return Score.of(self.name, False, missing)
        problems = arguments_match(calls[at].arguments, self.expected, self.mode)
        why = f"tool {self.tool!r} arguments: {'; '.join(problems)}" if problems else None
        return Score.of(self.name, not problems, why)


@attrs.frozen
class MaxToolCalls:
    """The run made at most `limit` tool calls (failed ones count unless `include_failed=False`)."""

    limit: int
    include_failed: bool = attrs.field(default=True, kw_only=True)
    name: str = attrs.field(default="max_tool_calls", kw_only=True)

    def evaluate(self, outcome: Outcome) -> Score:
        made = len(_calls(outcome, self.include_failed))
        return Score.of(self.name, made <= self.limit, f"{made} tool call(s), limit {self.limit}")


@attrs.frozen
class MaxModelRequests:
    """The run sent at most `limit` model requests."""

    limit: int
    name: str = attrs.field(default="max_model_requests", kw_only=True)

    def evaluate(self, outcome: Outcome) -> Score:
        sent: int = outcome.memo("model_requests", lambda: model_requests(outcome.events))
        why = f"{sent} model request(s), limit {self.limit}"
        return Score.of(self.name, sent <= self.limit, why)
