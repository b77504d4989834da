"""Deterministic evaluators of the output and of what the run spent.

Each is one small frozen class with a `name` (the scores' name, overridable)
and an `evaluate(outcome)` that returns `Score`s. `Equals`, `EqualsExpected`,
`Contains` and `IsInstance` score as pydantic-evals' evaluators of the same
names do.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import attrs

from .._core._errors import OutputError
from .._util._limits import MAX_DEPTH
from ..structured._schema import validate
from ._score import Outcome, Score

__all__ = (
    "Contains",
    "Equals",
    "EqualsExpected",
    "IsInstance",
    "MaxCost",
    "MaxDuration",
    "MaxSteps",
    "MaxTokens",
    "ValidatesAs",
)


def _short(value: Any, limit: int = 100) -> str:
    text = repr(value)
    if len(text) > limit:
        text = text[: limit // 2] + "..." + text[-limit // 2 :]
    return text


@attrs.frozen
class Equals:
    """The output equals `value`."""

    value: Any
    name: str = attrs.field(default="equals", kw_only=True)

    def evaluate(self, outcome: Outcome) -> Score:
        ok = outcome.output == self.value
        why = None if ok else f"output {_short(outcome.output)} != {_short(self.value)}"
        return Score.of(self.name, ok, why)


@attrs.frozen
class EqualsExpected:
    """The output equals the case's `expected`; no score when the case expects nothing."""

    name: str = attrs.field(default="equals_expected", kw_only=True)

    def evaluate(self, outcome: Outcome) -> tuple[Score, ...]:
        expected = outcome.case.expected
        if expected is None:
            return ()
        ok = outcome.output == expected
        why = None if ok else f"output {_short(outcome.output)} != expected {_short(expected)}"
        return (Score.of(self.name, ok, why),)


def _as_dict(value: Any) -> dict[Any, Any] | None:
    """A mapping as it is, a record as a dict of its fields; None for anything else."""
    if isinstance(value, dict):
        return value
    if _record(value):
        data: dict[Any, Any] = _python(value, 0)
        return data
    return None


def _record(value: Any) -> bool:
    if isinstance(value, type):
        return False
    if attrs.has(type(value)) or dataclasses.is_dataclass(value):
        return True
    pydantic = sys.modules.get("pydantic")  # no output is a pydantic model unless it is loaded
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


def _python(value: Any, depth: int) -> Any:
    """`value` with every record in it made a dict of its fields, other values kept as they are.

    As pydantic dumps a model in Python mode (what pydantic-evals compares):
    tuples, dates and enums stay themselves, never their JSON forms.
    """
    if depth > MAX_DEPTH:
        raise ValueError(f"the output nests deeper than {MAX_DEPTH} levels")
    deeper = depth + 1
    if isinstance(value, dict):
        return {k: _python(v, deeper) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_python(v, deeper) for v in value)
    if not _record(value):
        return value
    if attrs.has(type(value)):
        names = [field.name for field in attrs.fields(type(value))]
    elif dataclasses.is_dataclass(value):
        names = [field.name for field in dataclasses.fields(value)]
    else:
        return _python(value.model_dump(), deeper)
    return {name: _python(getattr(value, name), deeper) for name in names}


@attrs.frozen
class Contains:
    """The output contains `value`.

    Text contains a substring (`case_sensitive` applies to text only; with
    `as_strings`, both sides are compared as text); a mapping or a record
    (dataclass, pydantic model, attrs class) contains every key and value of
    a mapping `value`, or `value` as a key; anything else contains it as `in`
    says. A record's fields are compared as Python values (a tuple, a date,
    an enum member as themselves), records inside it as dicts of their
    fields, as pydantic-evals compares them.
    """

    value: Any
    case_sensitive: bool = attrs.field(default=True, kw_only=True)
    as_strings: bool = attrs.field(default=False, kw_only=True)
    name: str = attrs.field(default="contains", kw_only=True)

    def evaluate(self, outcome: Outcome) -> Score:
        output = outcome.output
        if self.as_strings or (isinstance(self.value, str) and isinstance(output, str)):
            text, part = str(output), str(self.value)
            if not self.case_sensitive:
                text, part = text.lower(), part.lower()
            why = None if part in text else f"{_short(text)} does not contain {_short(part)}"
            return Score.of(self.name, why is None, why)
        try:
            why = self._problem(output)
        except (TypeError, ValueError) as exc:
            why = f"containment check failed: {exc}"
        return Score.of(self.name, why is None, why)

    def _problem(self, output: Any) -> str | None:
        record = _as_dict(output)
        if record is None:
            return None if self.value in output else f"{_short(output)} does not contain it"
        if not isinstance(self.value, dict):
            return None if self.value in record else f"{_short(record)} has no such key"
        for key, want in self.value.items():
            if key not in record:
                return f"output has no key {_short(key, 30)}"
            if record[key] != want:
                return f"key {_short(key, 30)}: {_short(record[key])} != {_short(want)}"
        return None


@attrs.frozen
class IsInstance:
    """The output's class, or one of its bases, is named `type_name` (name or qualified name)."""

    type_name: str
    name: str = attrs.field(default="is_instance", kw_only=True)

    def evaluate(self, outcome: Outcome) -> Score:
        kind = type(outcome.output)
        for cls in kind.__mro__:
            if self.type_name in (cls.__name__, cls.__qualname__):
                return Score.of(self.name, True)
        return Score.of(self.name, False, f"output is of type {kind.__qualname__}")


@attrs.frozen
class ValidatesAs:
    """The output is a valid `tp` (any type `agentgraph.structured.validate` takes).

    An instance of a class `tp` passes as it is; other output (plain data)
    must validate, with coercions unless `strict`.
    """

    tp: Any
    strict: bool = attrs.field(default=False, kw_only=True)
    name: str = attrs.field(default="validates_as", kw_only=True)

    def evaluate(self, outcome: Outcome) -> Score:
        output = outcome.output
        if isinstance(self.tp, type) and isinstance(output, self.tp):
            return Score.of(self.name, True)
        try:
            validate(self.tp, output, strict=self.strict)
        except OutputError as exc:
            return Score.of(self.name, False, "; ".join(exc.errors) or str(exc))
        return Score.of(self.name, True)


@attrs.frozen
class MaxSteps:
    """The run took at most `limit` steps."""

    limit: int
    name: str = attrs.field(default="max_steps", kw_only=True)

    def evaluate(self, outcome: Outcome) -> Score:
        steps = outcome.steps
        return Score.of(self.name, steps <= self.limit, f"{steps} steps, limit {self.limit}")


@attrs.frozen
class MaxTokens:
    """The agent's model calls used at most `limit` tokens (input plus output)."""

    limit: int
    name: str = attrs.field(default="max_tokens", kw_only=True)

    def evaluate(self, outcome: Outcome) -> Score:
        used = outcome.usage.total_tokens
        return Score.of(self.name, used <= self.limit, f"{used} tokens, limit {self.limit}")


@attrs.frozen
class MaxCost:
    """The agent's model calls cost at most `limit` (needs `evaluate(..., prices=...)`)."""

    limit: float
    name: str = attrs.field(default="max_cost", kw_only=True)

    def evaluate(self, outcome: Outcome) -> Score:
        if outcome.cost is None:
            return Score.failed(
                self.name, "the run's cost is unknown: pass prices= for every model it called"
            )
        cost = outcome.cost
        return Score.of(self.name, cost <= self.limit, f"cost {cost:.6g}, limit {self.limit:g}")


@attrs.frozen
class MaxDuration:
    """The run took at most `seconds`."""

    seconds: float
    name: str = attrs.field(default="max_duration", kw_only=True)

    def evaluate(self, outcome: Outcome) -> Score:
        took = outcome.duration
        ok = took <= self.seconds
        return Score.of(self.name, ok, f"{took:.3f} s, limit {self.seconds:g} s")
