"""The built-in guards: a tool policy, secret masking, an output length limit, an LLM judge."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import attrs
import orjson

from .._core._errors import JudgeError
from .._core._json import to_data
from .._util._redact import Redactor
from ..llm._messages import Message, ToolCall, Usage
from ..llm._model import ChatModel, ChatRequest
from ._guard import ALLOW, Decision, Guard, Stage
from ._text import TextGuard

__all__ = ("JudgeGuard", "MaskSecrets", "MaxLength", "ToolPolicy", "text_of")


def _names(value: Iterable[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise TypeError("give tool names as a list, not one string")
    return tuple(value)


def _denied(value: Iterable[str]) -> tuple[str, ...]:
    return _names(value) or ()


def _rules(value: Mapping[str, str]) -> tuple[tuple[str, str, re.Pattern[str]], ...]:
    """`{"tool.argument": pattern}` as (tool glob, argument, compiled pattern)."""
    rules = []
    for key, pattern in value.items():
        tool, dot, argument = key.rpartition(".")
        if not dot or not argument:
            raise ValueError(f"argument rules are keyed 'tool.argument' ('*.url'), not {key!r}")
        rules.append((tool, argument, re.compile(pattern)))
    return tuple(rules)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(to_data(value)).decode()


def _argument(call: ToolCall, tool: str, glob: str, argument: str) -> str | None:
    """The argument's value as text, when a rule on `glob.argument` applies to the call."""
    if not fnmatch.fnmatchcase(tool, glob) or argument not in call.arguments:
        return None
    return _shown(call.arguments[argument])


@attrs.frozen
class ToolPolicy(Guard):
    """Allow- and deny-lists of tools and of argument values, checked before a tool runs.

    Args:
        allow: tool names (glob patterns: `"read_*"`) that may run; None: any
            tool not denied.
        deny: tool names (globs) that never run, whatever `allow` says.
        allow_arguments: `{"tool.argument": regex}`: the argument's value must
            match the pattern whole (`"send_money.recipient": r"ACME-\\d+"`); the
            tool part may be a glob (`"*.url"`). Values that are not text are
            matched as their JSON.
        deny_arguments: `{"tool.argument": regex}`: a value in which the
            pattern is found blocks the call.

    Approvals (`tool_use(approve=...)`) stay what they are: a person's
    answer, decided in code; this policy is decided in code too, never by a model.
    """

    allow: tuple[str, ...] | None = attrs.field(default=None, converter=_names)
    deny: tuple[str, ...] = attrs.field(default=(), converter=_denied)
    allow_arguments: tuple[tuple[str, str, re.Pattern[str]], ...] = attrs.field(
        factory=dict, converter=_rules
    )
    deny_arguments: tuple[tuple[str, str, re.Pattern[str]], ...] = attrs.field(
        factory=dict, converter=_rules
    )
    label: str = attrs.field(default="tool_policy", kw_only=True)

    stages = frozenset(("tool",))
    deterministic = True

    @property
    def name(self) -> str:
        return self.label

    async def check(self, stage: Stage, value: Any) -> Decision:
        if not isinstance(value, ToolCall):
            return ALLOW
        tool = value.name
        for denied in self.deny:
            if fnmatch.fnmatchcase(tool, denied):
                return Decision.block(f"tool {tool!r} is denied", rule=f"deny {denied}")
        if self.allow is not None and not any(fnmatch.fnmatchcase(tool, p) for p in self.allow):
            return Decision.block(f"tool {tool!r} is not in the allow-list", rule="allow")
        for glob, argument, pattern in self.allow_arguments:
            shown = _argument(value, tool, glob, argument)
            if shown is not None and pattern.fullmatch(shown) is None:
                return Decision.block(
                    f"argument {argument!r} of {tool!r} is not an allowed value",
                    rule=f"allow {glob}.{argument}",
                )
        for glob, argument, pattern in self.deny_arguments:
            shown = _argument(value, tool, glob, argument)
            if shown is not None and pattern.search(shown) is not None:
                return Decision.block(
                    f"argument {argument!r} of {tool!r} matches a denied pattern",
                    rule=f"deny {glob}.{argument}",
                )
        return ALLOW


@attrs.frozen
class MaskSecrets(TextGuard):
    """Masks secrets (keys, tokens, the values of secret-named environment variables and
    any `secrets` given) with the redactor traces and errors use."""

    secrets: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    label: str = attrs.field(default="mask_secrets", kw_only=True)
    _redactor: Redactor = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_redactor", Redactor(secrets=self.secrets))

    @property
    def name(self) -> str:
        return self.label

    def mask(self, text: str) -> str:
        return self._redactor.mask(text)


def text_of(value: Any) -> str:
    """The text a guard judges: an answer's content, a request's last user message,
    a tool call as `name(arguments)`."""
    if isinstance(value, str):
        return value
    if isinstance(value, Message):
        return value.content
    if isinstance(value, ChatRequest):
        users = [m for m in value.messages if m.role == "user"]
        return users[-1].content if users else ""
    if isinstance(value, ToolCall):
        return f"{value.name}({_shown(dict(value.arguments))})"
    return _shown(value)


@attrs.frozen
class MaxLength(Guard):
    """An answer longer than `max_chars` characters is blocked, or cut when `cut=True`."""

    max_chars: int
    cut: bool = attrs.field(default=False, kw_only=True)
    label: str = attrs.field(default="max_length", kw_only=True)

    stages = frozenset(("output",))
    deterministic = True

    def __attrs_post_init__(self) -> None:
        if self.max_chars < 1:
            raise ValueError(f"max_chars must be at least 1, not {self.max_chars}")

    @property
    def name(self) -> str:
        return self.label

    @property
    def rewrites(self) -> bool:  # type: ignore[override]
        return self.cut

    async def check(self, stage: Stage, value: Any) -> Decision:
        text = text_of(value)
        if len(text) <= self.max_chars:
            return ALLOW
        found: dict[str, Any] = {"chars": len(text), "max_chars": self.max_chars}
        if not self.cut:
            return Decision.block(f"{len(text)} characters, more than {self.max_chars}", **found)
        short = text[: self.max_chars]
        cut: Any = short if isinstance(value, str) else attrs.evolve(value, content=short)
        if not isinstance(value, str | Message):
            return Decision.block(f"{len(text)} characters, more than {self.max_chars}", **found)
        return Decision.rewrite(cut, f"cut to {self.max_chars} characters", **found)


class _Verdict(Protocol):
    @property
    def reason(self) -> str: ...

    @property
    def score(self) -> float: ...

    @property
    def passed(self) -> bool: ...


class _Judgement(Protocol):
    @property
    def verdict(self) -> _Verdict: ...

    @property
    def usage(self) -> Usage: ...


class Judging(Protocol):
    """What `JudgeGuard` asks of its judge: `agentgraph.evals.Judge` is one (evaluations
    sit above guards, so the judge is handed in, never imported)."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> ChatModel: ...

    @property
    def threshold(self) -> float | None: ...

    async def judge(self, output: Any) -> _Judgement:
        """The verdict on `output` and what the judge spent on it."""
        ...


@attrs.frozen
class JudgeGuard(Guard):
    """An LLM judge as a guard: blocks what fails the judge's rubric.

    The judge is `agentgraph.evals.Judge` (one implementation for evaluations
    and guards); it is shown the text of the subject (`text_of`) as the output
    to grade, and its structured verdict (reason, score, passed) and its own
    usage go in the decision's detail, so the record and the trace keep it and a
    replay does not ask the judge's model again. It never rewrites, so as an
    input guard it runs beside the model call and cancels it on a failing verdict.
    A judge that gives no verdict (a `JudgeError`) blocks.

    What the judge spends is the decision's `usage`: it counts in the run's
    usage and its `UsageLimits` (priced as the judge's model), so a limit
    caps the judge too.
    """

    judge: Judging
    on: frozenset[str] = attrs.field(
        default=frozenset(("input", "output")), converter=frozenset, kw_only=True
    )
    label: str = attrs.field(default="", kw_only=True)

    @property
    def name(self) -> str:
        return self.label or self.judge.name

    @property
    def stages(self) -> frozenset[str]:  # type: ignore[override]
        return self.on

    @property
    def model_name(self) -> str | None:
        return self.judge.model.name

    async def check(self, stage: Stage, value: Any) -> Decision:
        try:
            done = await self.judge.judge(text_of(value))
        except JudgeError as error:  # no verdict: a block, and what the judge spent on it
            why = f"the judge gave no verdict: {error}"
            return Decision.block(why, usage=error.usage, error=True)
        verdict = done.verdict
        passed = (
            verdict.passed
            if self.judge.threshold is None
            else (verdict.score >= self.judge.threshold)
        )
        detail = {
            "score": verdict.score,
            "passed": passed,
            "reason": verdict.reason,
            "usage": to_data(done.usage),
        }
        if passed:
            return Decision("allow", verdict.reason, None, detail, usage=done.usage)
        reason = verdict.reason or "the judge's verdict is a fail"
        return Decision("block", reason, None, detail, usage=done.usage)
