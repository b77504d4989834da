"""What a guard is, what it decides, and where a run's guards are configured.

A guard is shown one thing at one stage and decides about it:

- `"input"`: the `ChatRequest` about to be sent to a model,
- `"output"`: the model's answer (the assistant `Message`), before the node
  that asked gets it; or the input of a `check_output` node (text or a
  `Message`), before it leaves a graph,
- `"tool"`: a `ToolCall` (its name and arguments), before the tool runs,
- `"result"`: a tool's result (the tool `Message`), before it enters the
  history or the run's record.

It allows it, blocks it (the run sees `GuardrailTripped`; a blocked tool call
or result is answered with an error the model reads, unless
`Guards(refuse_tools=False)`) or rewrites it (masking, say) into a value of the
same type.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal

import attrs

from ..llm._messages import Usage

__all__ = (
    "ALLOW",
    "DEFAULT_TIMEOUT",
    "Decision",
    "FunctionGuard",
    "Guard",
    "Guards",
    "Stage",
    "guard",
)

Stage = Literal["input", "output", "tool", "result"]
"""Where a guard looks: a model's input, an answer, a tool call, or a tool's result."""

Action = Literal["allow", "block", "rewrite"]

DEFAULT_TIMEOUT = 30.0
"""Seconds a guard may take to decide before it is ended and counted as a block."""

_STAGES: frozenset[str] = frozenset(("input", "output", "tool", "result"))


def _frozen_detail(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


@attrs.frozen
class Decision:
    """What a guard decided: `Decision.allow()`, `.block(reason)` or `.rewrite(value)`.

    Attributes:
        action: `"allow"`, `"block"` or `"rewrite"`.
        reason: why, in words a person reads in the trace and the error.
        value: the rewritten subject (same type as the one shown), for a rewrite.
        detail: structured findings, plain data (kept in the record and the trace).
        usage: what deciding spent on models (a judge's calls), charged to the
            run's usage and its `UsageLimits` under the guard's `model_name`.
    """

    action: Action
    reason: str = ""
    value: Any = None
    detail: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_detail)
    usage: Usage | None = attrs.field(default=None, kw_only=True)

    @classmethod
    def allow(cls, reason: str = "", *, usage: Usage | None = None, **detail: Any) -> Decision:
        """Let it through unchanged."""
        if not reason and not detail and usage is None:
            return ALLOW
        return cls("allow", reason, None, detail, usage=usage)

    @classmethod
    def block(cls, reason: str, *, usage: Usage | None = None, **detail: Any) -> Decision:
        """Stop it: `reason` says why."""
        return cls("block", reason, None, detail, usage=usage)

    @classmethod
    def rewrite(
        cls, value: Any, reason: str = "", *, usage: Usage | None = None, **detail: Any
    ) -> Decision:
        """Let `value` through in its place (a value of the same type)."""
        return cls("rewrite", reason, value, detail, usage=usage)


ALLOW = Decision("allow")


class Guard(ABC):
    """The base of guards: a name, the stages it looks at, and `check`.

    Subclass it (an attrs class, as the built-in guards are) and implement
    `check`; or wrap a function with `guard(...)`.

    Class attributes:
        stages: the stages the guard applies to when a `Guards` lists it.
        rewrites: True if it may rewrite; a guard that never does may run
            beside the model call it looks at (`Guards(beside=True)`).
        deterministic: True if `check` depends only on what it is shown (no
            I/O, clock or randomness): on Temporal such a guard is asked inside
            the workflow; any other is asked in an activity.
    """

    stages: frozenset[str] = _STAGES
    rewrites: bool = False
    deterministic: bool = False

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def model_name(self) -> str | None:
        """The name of the model the guard asks (a judge's), None if it asks none.

        The run's `UsageLimits` are checked under this name before the guard
        is asked (a cost limit needs its price) and charged with its
        decision's `usage` after.
        """
        return None

    @property
    def timeout(self) -> float | None:
        """Its own limit in seconds; None takes the `Guards` one."""
        return None

    @abstractmethod
    async def check(self, stage: Stage, value: Any) -> Decision:
        """The decision about `value` shown at `stage`."""


Check = Callable[[Any, Any], "Decision | Awaitable[Decision | None] | None"]


@attrs.frozen(eq=False)
class FunctionGuard(Guard):
    """A guard made of a function `fn(stage, value)` returning a `Decision` (None allows)."""

    fn: Check
    label: str
    on: frozenset[str] = _STAGES
    may_rewrite: bool = True
    limit: float | None = None
    pure: bool = False

    @property
    def name(self) -> str:
        return self.label

    @property
    def stages(self) -> frozenset[str]:  # type: ignore[override]
        return self.on

    @property
    def rewrites(self) -> bool:  # type: ignore[override]
        return self.may_rewrite

    @property
    def timeout(self) -> float | None:
        return self.limit

    @property
    def deterministic(self) -> bool:  # type: ignore[override]
        return self.pure

    async def check(self, stage: Stage, value: Any) -> Decision:
        result = self.fn(stage, value)
        if inspect.isawaitable(result):
            result = await result
        return ALLOW if result is None else result


def guard(
    fn: Check | None = None,
    *,
    name: str | None = None,
    stages: Iterable[Stage] = ("input", "output", "tool", "result"),
    rewrites: bool = True,
    timeout: float | None = None,
    deterministic: bool = False,
) -> Any:
    """A guard from a function `fn(stage, value)` (sync or async) returning a `Decision`.

    Returning None allows. Usable as `@guard` or `@guard(name=..., stages=[...])`;
    `rewrites=False` promises it never rewrites, so it may run beside a model call;
    `deterministic=True` that it depends only on what it is shown, so on
    Temporal it is asked inside the workflow rather than in an activity.
    """
    on = frozenset(stages)
    unknown = on - _STAGES
    if unknown or not on:
        raise ValueError(f"stages are among {sorted(_STAGES)}, not {sorted(unknown) or '()'}")

    def wrap(f: Check) -> FunctionGuard:
        label = name or str(getattr(f, "__name__", type(f).__name__))
        return FunctionGuard(f, label, on, rewrites, timeout, deterministic)

    return wrap if fn is None else wrap(fn)


def _guards(value: Iterable[Guard]) -> tuple[Guard, ...]:
    found = tuple(value)
    for item in found:
        if not isinstance(item, Guard):
            raise TypeError(
                f"guards are Guard objects (or functions wrapped with guard()), "
                f"not {type(item).__name__}"
            )
    names = [g.name for g in found]
    if len(set(names)) != len(names):
        raise ValueError(f"guard names must be unique within a stage, got {names}")
    return found


def _positive(instance: Any, attribute: Any, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be positive, not {value!r}")


@attrs.frozen
class Guards:
    """A run's guards, by stage: `GraphRunner(guards=Guards(input=..., tools=...))`.

    Args:
        input: guards shown each `ChatRequest` before it is sent.
        output: guards shown each model answer before its node gets it.
        tools: guards shown each `ToolCall` before its tool runs.
        results: guards shown each tool's result (the tool `Message`) before it
            enters the history and the run's record: `MaskSecrets()` here keeps
            a secret a tool returned out of the checkpoints.
        timeout: seconds a guard may take (`DEFAULT_TIMEOUT`, 30, unless
            given); one that takes longer is ended and counts as a block.
        beside: run input guards that never rewrite beside the model call
            instead of before it; one that blocks cancels the call in flight.
        refuse_tools: answer a blocked tool call (or result) with an error
            result the model reads (the run goes on); False raises
            `GuardrailTripped` instead.
    """

    input: tuple[Guard, ...] = attrs.field(default=(), converter=_guards)
    output: tuple[Guard, ...] = attrs.field(default=(), converter=_guards)
    tools: tuple[Guard, ...] = attrs.field(default=(), converter=_guards)
    results: tuple[Guard, ...] = attrs.field(default=(), converter=_guards, kw_only=True)
    timeout: float = attrs.field(default=DEFAULT_TIMEOUT, validator=_positive, kw_only=True)
    beside: bool = attrs.field(default=True, kw_only=True)
    refuse_tools: bool = attrs.field(default=True, kw_only=True)

    def __attrs_post_init__(self) -> None:
        for stage, found in (
            ("input", self.input),
            ("output", self.output),
            ("tool", self.tools),
            ("result", self.results),
        ):
            for item in found:
                if stage not in item.stages:
                    raise ValueError(f"guard {item.name!r} does not look at the {stage} stage")

    def __bool__(self) -> bool:
        return bool(self.input or self.output or self.tools or self.results)

    def layers(self) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
        """The layers these guards add to a runner's effects (`agentgraph.Layer`): those
        above the usage limits, those beside the call, and those below the journal.

        A runner builds them once; a run without guards has none.
        """
        from ._layers import layers_of  # the layers are built from this module's guards

        return layers_of(self)
