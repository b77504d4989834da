"""Cases and datasets, saved as JSON lines (one case a line) or YAML (the `evals` extra).

A case's input is a value or a whole `AgentContext`; both are stored in the
tagged JSON form checkpoints use, and decoded only into agentgraph's own
types and the classes in `types` (a graph's `Types`), so a dataset file never
chooses which code runs. Evaluators a file lists are specs (see `_specs`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs
import orjson

from .._core._context import AgentContext
from .._core._errors import AgentGraphError, DatasetError, UsageError
from .._core._json import NO_TYPES, Types, from_data, to_data
from .._util._extras import pip_install
from ._score import EvaluatorLike
from ._specs import evaluator_from_spec, evaluator_to_spec

__all__ = ("Case", "Dataset", "case_from_data", "load_yaml_text", "yaml_case_lines")

_CASE_KEYS = frozenset({"name", "input", "context", "expected", "metadata", "evaluators"})


def _evaluators(items: Iterable[EvaluatorLike]) -> tuple[EvaluatorLike, ...]:
    return tuple(items)


def _cases(items: Iterable[Case]) -> tuple[Case, ...]:
    return tuple(items)


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(value or {}))


@attrs.frozen
class Case:
    """One scenario: a name, an input, what is expected (optional), metadata, evaluators.

    Args:
        name: unique within its dataset; reports are keyed by it.
        input: the run's input: a value, or an `AgentContext` to start from.
        expected: the expected output, for evaluators that compare with it.
        metadata: anything else about the case (plain data).
        evaluators: evaluators for this case only, besides the dataset's.
    """

    name: str
    input: Any
    expected: Any = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)
    evaluators: tuple[EvaluatorLike, ...] = attrs.field(default=(), converter=_evaluators)

    def context(self) -> AgentContext[Any]:
        """The context a run of this case starts from."""
        return self.input if isinstance(self.input, AgentContext) else AgentContext(self.input)

    def to_data(self) -> dict[str, Any]:
        """The case as the JSON data a dataset file holds."""
        data: dict[str, Any] = {"name": self.name}
        if isinstance(self.input, AgentContext):
            data["context"] = orjson.loads(self.input.to_json())
        else:
            data["input"] = to_data(self.input, tagged=True, where="input")
        if self.expected is not None:
            data["expected"] = to_data(self.expected, tagged=True, where="expected")
        if self.metadata:
            data["metadata"] = to_data(dict(self.metadata), where="metadata")
        if self.evaluators:
            data["evaluators"] = [evaluator_to_spec(e) for e in self.evaluators]
        return data


def case_from_data(
    data: Any, source: str, *, line: int | None, number: int, types: Types = NO_TYPES
) -> Case:
    """A case from its JSON data (line `line` of `source`, the `number`th case).

    Raises:
        DatasetError: naming the source and line.
    """
    if not isinstance(data, Mapping):
        raise DatasetError(source, f"a case is an object, not {type(data).__name__}", line=line)
    unknown = sorted(set(data) - _CASE_KEYS)
    if unknown:
        raise DatasetError(source, f"a case has no field {unknown[0]!r}", line=line)
    if ("input" in data) == ("context" in data):
        raise DatasetError(source, "a case has either `input` or `context`", line=line)
    name = data.get("name", f"Case {number}")
    if not isinstance(name, str) or not name:
        raise DatasetError(source, f"a case name is a non-empty string, not {name!r}", line=line)
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise DatasetError(source, "a case's metadata is an object", line=line)
    specs = data.get("evaluators") or []
    if not isinstance(specs, list):
        raise DatasetError(source, "a case's evaluators are a list of specs", line=line)
    try:
        if "context" in data:
            value: Any = AgentContext.from_json(orjson.dumps(data["context"]), types=types)
        else:
            value = from_data(data["input"], types)
        expected = from_data(data.get("expected"), types)
    except (AgentGraphError, orjson.JSONEncodeError) as exc:
        raise DatasetError(source, f"case {name!r}: {exc}", line=line) from exc
    evaluators = [evaluator_from_spec(s, source, line=line) for s in specs]
    return Case(name, value, expected, metadata, evaluators)


@attrs.frozen
class Dataset:
    """Cases to evaluate a graph on, and evaluators for every case.

    ```python
    dataset = Dataset([Case("sum", "What is 2 + 3?", expected="5")], name="arithmetic")
    dataset.save("cases.jsonl")
    same = Dataset.load("cases.jsonl")
    ```
    """

    cases: tuple[Case, ...] = attrs.field(converter=_cases)
    name: str = attrs.field(default="dataset", kw_only=True)
    evaluators: tuple[EvaluatorLike, ...] = attrs.field(
        default=(), converter=_evaluators, kw_only=True
    )

    def __attrs_post_init__(self) -> None:
        seen: set[str] = set()
        for case in self.cases:
            if not isinstance(case, Case):
                raise TypeError(f"a dataset holds Case objects, not {type(case).__name__}")
            if case.name in seen:
                raise ValueError(f"two cases are named {case.name!r}; case names are unique")
            seen.add(case.name)

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, types: Types | None = None) -> Dataset:
        """Read a dataset saved by `save`: `.jsonl` (JSON lines) or `.yaml` / `.yml`.

        Raises:
            DatasetError: naming the file and line of what cannot be read.
        """
        file = Path(path)
        kind = _kind(file)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DatasetError(str(file), str(exc)) from exc
        try:
            if kind == "jsonl":
                return cls(_jsonl_cases(text, str(file), types or NO_TYPES), name=file.stem)
            return _from_yaml(cls, text, str(file), types or NO_TYPES, file.stem)
        except DatasetError:
            raise
        except (TypeError, ValueError) as exc:  # two cases of one name, say
            raise DatasetError(str(file), str(exc)) from exc

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the dataset as `.jsonl` (JSON lines) or `.yaml` / `.yml`, by the suffix."""
        file = Path(path)
        kind = _kind(file)
        cases = [case.to_data() for case in self.cases]
        if kind == "jsonl":
            if self.evaluators:
                raise UsageError(
                    "a JSON-lines file holds cases only; save a dataset with evaluators as YAML"
                )
            file.write_bytes(b"".join(orjson.dumps(c) + b"\n" for c in cases))
            return
        data: dict[str, Any] = {"name": self.name, "cases": cases}
        if self.evaluators:
            data["evaluators"] = [evaluator_to_spec(e) for e in self.evaluators]
        file.write_text(_yaml().safe_dump(data, sort_keys=False, allow_unicode=True))

    @classmethod
    def from_pydantic_evals(
        cls, path: str | os.PathLike[str], *, types: Types | None = None, judge_model: Any = None
    ) -> Dataset:
        """Read a pydantic-evals dataset file (YAML or JSON); see `read_pydantic_evals`."""
        from ._foreign import read_pydantic_evals

        return read_pydantic_evals(path, types=types, judge_model=judge_model)


def _kind(file: Path) -> str:
    suffix = file.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    raise DatasetError(str(file), "a dataset file ends in .jsonl, .yaml or .yml")


def _jsonl_cases(text: str, source: str, types: Types) -> Iterable[Case]:
    cases: list[Case] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise DatasetError(source, f"not JSON: {exc}", line=number) from exc
        cases.append(case_from_data(data, source, line=number, number=len(cases) + 1, types=types))
    return cases


def _yaml() -> Any:
    try:
        import yaml
    except ImportError as exc:
        raise ImportError(f"YAML datasets need PyYAML: {pip_install('evals')}") from exc
    return yaml


def load_yaml_text(text: str, source: str) -> tuple[Any, list[int]]:
    """The YAML document and the line (from 1) where each item of its `cases` starts."""
    yaml = _yaml()
    try:
        data = yaml.safe_load(text)
        lines = yaml_case_lines(yaml.compose(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = None if mark is None else mark.line + 1
        raise DatasetError(source, f"not YAML: {getattr(exc, 'problem', exc)}", line=line) from exc
    return data, lines


def yaml_case_lines(node: Any) -> list[int]:
    """The line of each item of the `cases` sequence of a composed YAML mapping."""
    for key, value in getattr(node, "value", None) or []:
        if getattr(key, "value", None) == "cases" and isinstance(value.value, list):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def _from_yaml(cls: type[Dataset], text: str, source: str, types: Types, stem: str) -> Dataset:
    data, lines = load_yaml_text(text, source)
    if not isinstance(data, Mapping) or not isinstance(data.get("cases"), list):
        raise DatasetError(source, "a YAML dataset is a mapping with a `cases` list")
    unknown = sorted(set(data) - {"name", "cases", "evaluators"})
    if unknown:
        raise DatasetError(source, f"a dataset has no field {unknown[0]!r}")
    cases = [
        case_from_data(item, source, line=_at(lines, i), number=i + 1, types=types)
        for i, item in enumerate(data["cases"])
    ]
    specs: Sequence[Any] = data.get("evaluators") or []
    evaluators = [evaluator_from_spec(s, source) for s in specs]
    return cls(cases, name=str(data.get("name") or stem), evaluators=evaluators)


def _at(lines: list[int], index: int) -> int | None:
    return lines[index] if index < len(lines) else None
