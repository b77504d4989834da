"""Reading Google ADK eval sets (`.evalset.json`) into agentgraph datasets.

The format (google-adk's `evaluation/eval_set.py` and `eval_case.py`): an
object with `eval_set_id`, optional `name` and `description`, and
`eval_cases`. A case has `eval_id` and either a `conversation` (invocations,
each with `user_content`, `final_response` and `intermediate_data.tool_uses`)
or a `conversation_scenario` (a simulated user). Case fields are accepted in
snake_case or camelCase, as ADK's models accept them (aliases to camelCase,
population by name); the eval set's own fields are snake_case, as in ADK.

A case of one invocation becomes a `Case`: the user's text is the input, the
final response's text is `expected`, and the tool uses are a `Trajectory`
evaluator of that case (exact names, in order, with their arguments as a
subset). A conversation of several invocations needs threads, and a scenario
needs a user simulator: both are refused with `UnsupportedCase`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from .._core._errors import DatasetError, UnsupportedCase
from ._dataset import Case, Dataset
from ._specs import _build
from ._trajectory import Call, Trajectory

__all__ = ("read_adk_evalset",)


def _field(data: Mapping[str, Any], name: str) -> Any:
    """`name` (snake_case) or its camelCase alias, as ADK's models read it."""
    if name in data:
        return data[name]
    head, *rest = name.split("_")
    return data.get(head + "".join(part.title() for part in rest))


def _text(content: Any, source: str, case: str, what: str) -> str | None:
    """The text parts of a genai `Content`, joined; None when there is no content."""
    if content is None:
        return None
    if not isinstance(content, Mapping) or not isinstance(content.get("parts", []), list):
        raise DatasetError(source, f"case {case!r}: {what} is a Content with a parts list")
    texts = []
    for part in content.get("parts") or []:
        if not isinstance(part, Mapping):
            raise DatasetError(source, f"case {case!r}: a part of {what} is an object")
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif any(
            k not in ("text", "thought", "thoughtSignature", "thought_signature") for k in part
        ):
            kinds = ", ".join(sorted(part))
            raise UnsupportedCase(
                source, case, "content", f"{what} holds a part other than text ({kinds})"
            )
    return "".join(texts)


def _calls(intermediate: Any, source: str, case: str) -> list[str | Call]:
    if intermediate is None:
        return []
    if not isinstance(intermediate, Mapping):
        raise DatasetError(source, f"case {case!r}: intermediate_data is an object")
    if _field(intermediate, "invocation_events") is not None:
        raise UnsupportedCase(
            source,
            case,
            "invocation_events",
            "intermediate data as invocation events is not read; give tool_uses",
        )
    calls: list[str | Call] = []
    for use in _field(intermediate, "tool_uses") or []:
        if not isinstance(use, Mapping) or not isinstance(use.get("name"), str):
            raise DatasetError(source, f"case {case!r}: a tool use is an object with a name")
        args = use.get("args")
        if args is not None and not isinstance(args, Mapping):
            raise DatasetError(
                source, f"case {case!r}: tool {use['name']!r} has args that are not an object"
            )
        calls.append(Call(use["name"], dict(args) if args is not None else None))
    return calls


def _case(item: Any, source: str, number: int) -> Case:
    if not isinstance(item, Mapping):
        raise DatasetError(source, f"eval case {number} is an object, not {type(item).__name__}")
    name = _field(item, "eval_id")
    if not isinstance(name, str) or not name:
        raise DatasetError(source, f"eval case {number} has no eval_id")
    conversation = _field(item, "conversation")
    scenario = _field(item, "conversation_scenario")
    if (conversation is None) == (scenario is None):
        raise DatasetError(
            source, f"case {name!r}: give exactly one of conversation and conversation_scenario"
        )
    if scenario is not None:
        raise UnsupportedCase(
            source,
            name,
            "conversation_scenario",
            "a conversation scenario needs a simulated user, which agentgraph does not provide",
        )
    if not isinstance(conversation, list) or not conversation:
        raise DatasetError(
            source, f"case {name!r}: conversation is a non-empty list of invocations"
        )
    if len(conversation) > 1:
        raise UnsupportedCase(
            source,
            name,
            "multi-turn",
            f"a conversation of {len(conversation)} invocations needs a thread carried from "
            "turn to turn; only single-turn cases are read",
        )
    turn = conversation[0]
    if not isinstance(turn, Mapping):
        raise DatasetError(source, f"case {name!r}: an invocation is an object")
    question = _text(_field(turn, "user_content"), source, name, "user_content")
    if question is None:
        raise DatasetError(source, f"case {name!r}: the invocation has no user_content")
    expected = _text(_field(turn, "final_response"), source, name, "final_response")
    calls = _calls(_field(turn, "intermediate_data"), source, name)
    state = _field(item, "session_input")
    metadata: dict[str, Any] = {"eval_id": name}
    if isinstance(state, Mapping) and _field(state, "state"):
        metadata["session_state"] = dict(_field(state, "state"))
    # Built through `_build`: attrs' tuple converter hides the field's type from mypy.
    evaluators = [_build(Trajectory, (calls,), {"order": "exact", "arguments": "subset"})]
    return Case(name, question, expected, metadata, evaluators)


def read_adk_evalset(path: str | os.PathLike[str]) -> Dataset:
    """The dataset a Google ADK `.evalset.json` file holds (single-turn cases).

    Each case's expected tool calls become a `Trajectory` evaluator of its own
    (`order="exact"`, arguments matched as a subset); its final response is
    the case's `expected` (score it with `EqualsExpected`, `Contains` or a
    `Judge`). A session's initial state goes into the case's metadata.

    Raises:
        UnsupportedCase: a multi-turn conversation, a conversation scenario, a
            content part other than text, or invocation events; naming the case.
        DatasetError: the file cannot be read or is not an eval set.
    """
    source = str(path)
    try:
        data = orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise DatasetError(source, exc.strerror or str(exc)) from exc
    except orjson.JSONDecodeError as exc:
        raise DatasetError(source, f"not JSON: {exc.msg}", line=exc.lineno) from exc
    if not isinstance(data, Mapping) or not isinstance(data.get("eval_set_id"), str):
        raise DatasetError(source, "an eval set is an object with an eval_set_id")
    cases = data.get("eval_cases")
    if not isinstance(cases, list):
        raise DatasetError(source, "an eval set has an eval_cases list")
    read = [_case(item, source, i + 1) for i, item in enumerate(cases)]
    try:
        return Dataset(read, name=str(data.get("name") or data["eval_set_id"]))
    except (TypeError, ValueError) as exc:
        raise DatasetError(source, str(exc)) from exc
