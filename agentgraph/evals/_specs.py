"""Evaluators written as data in dataset files: `- EqualsExpected`, `- Contains: '4'`.

A spec is a name alone (no arguments), `{Name: value}` (one positional
argument) or `{Name: {key: value, ...}}` (keyword arguments), as in
pydantic-evals. Names are looked up in a fixed table of built-in evaluators:
agentgraph's own class names, and pydantic-evals' names mapped onto them.
A name in neither table is refused by name; data never picks other code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._core._errors import DatasetError, UsageError
from ..llm._model import ChatModel
from ._checks import (
    Contains,
    Equals,
    EqualsExpected,
    IsInstance,
    MaxCost,
    MaxDuration,
    MaxSteps,
    MaxTokens,
)
from ._judge import Judge
from ._score import EvaluatorLike
from ._trajectory import Call, MaxModelRequests, MaxToolCalls, ToolArguments, Trajectory

__all__ = ("evaluator_from_spec", "evaluator_to_spec", "split_spec")

_OWN: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        Contains,
        Equals,
        EqualsExpected,
        IsInstance,
        MaxCost,
        MaxDuration,
        MaxModelRequests,
        MaxSteps,
        MaxTokens,
        MaxToolCalls,
        ToolArguments,
        Trajectory,
    )
}

# pydantic-evals name -> (agentgraph class, its argument names -> ours, in positional order).
_PYDANTIC: dict[str, tuple[type[Any], dict[str, str]]] = {
    "Equals": (Equals, {"value": "value", "evaluation_name": "name"}),
    "EqualsExpected": (EqualsExpected, {"evaluation_name": "name"}),
    "Contains": (
        Contains,
        {
            "value": "value",
            "case_sensitive": "case_sensitive",
            "as_strings": "as_strings",
            "evaluation_name": "name",
        },
    ),
    "IsInstance": (IsInstance, {"type_name": "type_name", "evaluation_name": "name"}),
    "MaxDuration": (MaxDuration, {"seconds": "seconds"}),
    "TrajectoryMatch": (
        Trajectory,
        {
            "expected_trajectory": "expected",
            "order": "order",
            "include_failed": "include_failed",
            "evaluation_name": "name",
        },
    ),
    "ArgumentCorrectness": (
        ToolArguments,
        {
            "tool_name": "tool",
            "expected_arguments": "expected",
            "match_mode": "mode",
            "occurrence": "occurrence",
            "include_failed": "include_failed",
            "evaluation_name": "name",
        },
    ),
    "MaxToolCalls": (
        MaxToolCalls,
        {"max_calls": "limit", "include_failed": "include_failed", "evaluation_name": "name"},
    ),
    "MaxModelRequests": (MaxModelRequests, {"max_requests": "limit", "evaluation_name": "name"}),
}

_JUDGE = {"rubric": "rubric", "include_input": "include_input"}
_JUDGE_IGNORED = frozenset({"model", "model_settings", "score", "assertion"})


def split_spec(
    spec: Any, where: str, line: int | None = None
) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """A spec's name, positional arguments and keyword arguments."""
    if isinstance(spec, str):
        return spec, (), {}
    if isinstance(spec, Mapping) and len(spec) == 1:
        name, value = next(iter(spec.items()))
        if isinstance(name, str):
            if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
                return name, (), dict(value)
            return name, (value,), {}
    raise DatasetError(
        where, f"an evaluator spec is a name or {{name: arguments}}, not {spec!r}", line=line
    )


def evaluator_from_spec(
    spec: Any,
    where: str,
    *,
    line: int | None = None,
    dialect: str = "agentgraph",
    judge_model: ChatModel | None = None,
) -> EvaluatorLike:
    """The evaluator a spec names, built from its arguments.

    Raises:
        DatasetError: the name is no known evaluator, or the arguments do not fit it.
    """
    name, args, kwargs = split_spec(spec, where, line)
    if dialect == "pydantic-evals":
        cls, args, kwargs = _pydantic(name, args, kwargs, where, line, judge_model)
    elif name in _OWN:
        cls = _OWN[name]
    else:
        known = ", ".join(sorted(_OWN))
        raise DatasetError(where, f"unknown evaluator {name!r} (known: {known})", line=line)
    if cls is Judge:
        kwargs["model"] = judge_model
    try:
        if cls is Trajectory:
            kwargs, args = _calls(args, kwargs), ()
        return _build(cls, args, kwargs)
    except (TypeError, ValueError) as exc:
        raise DatasetError(where, f"evaluator {name!r}: {exc}", line=line) from exc


def _build(
    cls: Callable[..., EvaluatorLike], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> EvaluatorLike:
    return cls(*args, **kwargs)


def _pydantic(
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    where: str,
    line: int | None,
    judge_model: ChatModel | None,
) -> tuple[type[Any], tuple[Any, ...], dict[str, Any]]:
    if name == "LLMJudge":
        if judge_model is None:
            raise DatasetError(
                where, "evaluator 'LLMJudge' needs a judge model: pass judge_model=", line=line
            )
        table = {**_JUDGE, "include_expected_output": "include_expected"}
        kwargs = {k: v for k, v in kwargs.items() if k not in _JUDGE_IGNORED}
        return Judge, (), _renamed(name, table, args, kwargs, where, line)
    if name not in _PYDANTIC:
        known = ", ".join(sorted([*_PYDANTIC, "LLMJudge"]))
        raise DatasetError(
            where, f"unknown or unsupported evaluator {name!r} (supported: {known})", line=line
        )
    cls, table = _PYDANTIC[name]
    return cls, (), _renamed(name, table, args, kwargs, where, line)


def _renamed(
    name: str,
    table: dict[str, str],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    where: str,
    line: int | None,
) -> dict[str, Any]:
    if args:
        kwargs = {next(iter(table)): args[0], **kwargs}
    unknown = sorted(set(kwargs) - set(table))
    if unknown:
        raise DatasetError(where, f"evaluator {name!r} takes no argument {unknown[0]!r}", line=line)
    return {table[k]: v for k, v in kwargs.items()}


def _calls(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    expected = args[0] if args else kwargs.pop("expected", ())
    if not isinstance(expected, list | tuple):
        raise TypeError(f"a trajectory is a list of calls, not {expected!r}")
    return {"expected": [_call(item) for item in expected], **kwargs}


def _call(item: Any) -> Any:
    if not isinstance(item, Mapping):
        return item
    if "name" not in item:
        raise TypeError(f"a call of a trajectory needs a 'name': {dict(item)!r}")
    return Call(str(item["name"]), item.get("arguments"))


def evaluator_to_spec(evaluator: Any) -> Any:
    """The spec of a built-in evaluator: its class name and the arguments that differ.

    Raises:
        UsageError: the evaluator is not one a dataset file can name.
    """
    cls = type(evaluator)
    if _OWN.get(cls.__name__) is not cls:
        raise UsageError(
            f"{cls.__name__} cannot be written into a dataset file; pass it to evaluate() "
            f"instead (files can name: {', '.join(sorted(_OWN))})"
        )
    arguments: dict[str, Any] = {}
    for field in attrs.fields(cls):
        if not field.init:
            continue
        value = getattr(evaluator, field.name)
        if field.default is not attrs.NOTHING and value == field.default:
            continue
        if callable(value):
            raise UsageError(f"{cls.__name__}.{field.name} is a function; it cannot be saved")
        if field.name == "expected" and cls is Trajectory:
            value = [_call_spec(c) for c in value]
        arguments[field.name] = value
    return {cls.__name__: arguments} if arguments else cls.__name__


def _call_spec(call: str | Call) -> Any:
    if isinstance(call, str) or call.arguments is None:
        return call if isinstance(call, str) else call.name
    return {"name": call.name, "arguments": dict(call.arguments)}
