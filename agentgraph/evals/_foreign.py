"""Reading pydantic-evals dataset files (YAML or JSON) into agentgraph datasets.

The format (pydantic-evals' `dataset.py`): a mapping with `name`, `cases`
(each with `name`, `inputs`, `metadata`, `expected_output` and
`evaluators`), dataset-level `evaluators` and `report_evaluators`, and an
optional `$schema` key (YAML files may point at the schema in a
`# yaml-language-server` comment, which is only a comment). Evaluator specs
with a counterpart here map onto it; any other is refused by name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from .._core._errors import AgentGraphError, DatasetError
from .._core._json import NO_TYPES, Types, from_data
from ..llm._model import ChatModel
from ._dataset import Case, Dataset, load_yaml_text
from ._specs import evaluator_from_spec, split_spec

__all__ = ("read_pydantic_evals",)

_DATASET_KEYS = frozenset({"$schema", "name", "cases", "evaluators", "report_evaluators"})
_CASE_KEYS = frozenset({"name", "inputs", "metadata", "expected_output", "evaluators"})


def read_pydantic_evals(
    path: str | os.PathLike[str],
    *,
    types: Types | None = None,
    judge_model: ChatModel | None = None,
) -> Dataset:
    """The dataset a pydantic-evals file holds, with its evaluators mapped to agentgraph's.

    Unnamed cases are named `Case 1`, `Case 2`, ... as pydantic-evals names them
    in its reports. `LLMJudge` specs need `judge_model`.

    Raises:
        DatasetError: naming the file (and the case's line in YAML) of what cannot
            be read, and any evaluator spec that has no counterpart, by name.
    """
    file = Path(path)
    source = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(source, str(exc)) from exc
    lines: list[int] = []
    if file.suffix.lower() in (".yaml", ".yml"):
        data, lines = load_yaml_text(text, source)
    elif file.suffix.lower() == ".json":
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise DatasetError(source, f"not JSON: {exc.msg}", line=exc.lineno) from exc
    else:
        raise DatasetError(source, "a pydantic-evals dataset file ends in .yaml, .yml or .json")
    if not isinstance(data, Mapping) or not isinstance(data.get("cases"), list):
        raise DatasetError(source, "a dataset is a mapping with a `cases` list")
    unknown = sorted(set(data) - _DATASET_KEYS)
    if unknown:
        raise DatasetError(source, f"a dataset has no field {unknown[0]!r}")
    for spec in data.get("report_evaluators") or []:
        name = split_spec(spec, source)[0]
        raise DatasetError(source, f"report evaluator {name!r} is not supported")
    cases = [
        _case(item, source, lines[i] if i < len(lines) else None, i + 1, types, judge_model)
        for i, item in enumerate(data["cases"])
    ]
    evaluators = [
        evaluator_from_spec(s, source, dialect="pydantic-evals", judge_model=judge_model)
        for s in data.get("evaluators") or []
    ]
    try:
        return Dataset(cases, name=str(data.get("name") or file.stem), evaluators=evaluators)
    except (TypeError, ValueError) as exc:
        raise DatasetError(source, str(exc)) from exc


def _case(
    item: Any,
    source: str,
    line: int | None,
    number: int,
    types: Types | None,
    judge_model: ChatModel | None,
) -> Case:
    if not isinstance(item, Mapping):
        raise DatasetError(source, f"a case is a mapping, not {type(item).__name__}", line=line)
    unknown = sorted(set(item) - _CASE_KEYS)
    if unknown:
        raise DatasetError(source, f"a case has no field {unknown[0]!r}", line=line)
    if "inputs" not in item:
        raise DatasetError(source, "a case has no `inputs`", line=line)
    name = item.get("name") or f"Case {number}"
    metadata = item.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise DatasetError(source, f"case {name!r}: metadata is a mapping", line=line)
    try:
        inputs = from_data(item["inputs"], types or NO_TYPES)
        expected = from_data(item.get("expected_output"), types or NO_TYPES)
    except AgentGraphError as exc:
        raise DatasetError(source, f"case {name!r}: {exc}", line=line) from exc
    evaluators = [
        evaluator_from_spec(s, source, line=line, dialect="pydantic-evals", judge_model=judge_model)
        for s in item.get("evaluators") or []
    ]
    return Case(str(name), inputs, expected, metadata, evaluators)
