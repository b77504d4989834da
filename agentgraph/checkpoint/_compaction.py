"""Compaction: a thread's policy for keeping its conversation within a token budget.

When a turn starts, the conversation it continues (the system prompt, the
history and the new input) is measured; past the budget, the turn's first
step, `compact` (see `_compact_step.py`), replaces the oldest messages by a
summary (`whole`, `keep_last`, `chunked`: the summarize node's strategies) or
drops them (`drop`). What is kept: the system prompt, every
system message (earlier summaries are folded into the new one), the latest
turn, and every tool call with its results. What was done is a `Compacted`
record, kept with the turn's run, and `apply_compaction` rebuilds the
compacted context from the original and the record alone.

A latest turn too large to keep whole never locks the thread: its tool
results are clipped first (each to the same number of characters, the most
that fits), and when that is not enough the turn is summarized (or dropped)
with the rest. Only a budget that the system prompt, the system messages and
the new message (with room for a summary) exceed is refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

import attrs

from .._core._context import AgentContext, History
from .._core._errors_threads import CompactionFailed
from .._util._clip import clip_result
from ..llm._messages import Message, Usage
from ..llm._model import ChatModel, ChatRequest, ChatResponse
from ..nodes._summarize import (
    DEFAULT_INSTRUCTIONS,
    _callers,
    _pieces,
    _transcript_block,
    cut_point,
    summary_message,
)
from ..nodes._tokens import MESSAGE_OVERHEAD, TokenCounter, count_message_tokens, estimate_tokens

__all__ = (
    "Ask",
    "Compacted",
    "Compaction",
    "Plan",
    "apply_compaction",
    "carry_out",
    "compact",
    "is_summary",
    "measure",
    "plan",
)

Strategy = Literal["whole", "keep_last", "chunked", "drop"]
_SUMMARY_HEAD = summary_message("").content


def is_summary(message: Message) -> bool:
    """Whether `message` is a summary an earlier compaction wrote."""
    return message.role == "system" and message.content.startswith(_SUMMARY_HEAD)


def _positive(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{attribute.name} must be a positive integer, not {value!r}")


def _strategy(instance: Any, attribute: Any, value: Any) -> None:
    if value not in ("whole", "keep_last", "chunked", "drop"):
        raise ValueError(f"strategy is 'whole', 'keep_last', 'chunked' or 'drop', not {value!r}")


@attrs.frozen
class Compaction:
    """A thread's compaction policy: `runner.run(..., thread_id=..., compaction=policy)`.

    A turn past the budget starts with a `compact` step whose summary request
    is a model call of the run (events, usage and its limits, retries).

    Args:
        budget: the most tokens a turn may start from (system prompt, history
            and the new input, as `count` counts them).
        model: writes the summary; not needed by the `drop` strategy.
        strategy: `whole` (summarize everything before the latest turn that
            must go), `keep_last` (also keep the last `keep_last` messages),
            `chunked` (summarize in pieces of `chunk_tokens`) or `drop`
            (no summary: the oldest messages are left out).
        keep_last: messages kept verbatim by `keep_last`.
        chunk_tokens: the size of a piece for `chunked` (default: half the budget).
        summary_tokens: tokens set aside for the summary, and its output
            budget (default: a quarter of the budget).
        count: the token counter (characters/4 by default).
        instructions: the system prompt of the summary request.
    """

    budget: int = attrs.field(validator=_positive)
    model: ChatModel | None = None
    strategy: Strategy = attrs.field(default="whole", validator=_strategy)
    keep_last: int = attrs.field(default=6, validator=_positive)
    chunk_tokens: int | None = attrs.field(default=None, validator=_positive)
    summary_tokens: int | None = attrs.field(default=None, validator=_positive)
    count: TokenCounter = estimate_tokens
    instructions: str = DEFAULT_INSTRUCTIONS

    def __attrs_post_init__(self) -> None:
        if self.strategy != "drop" and self.model is None:
            raise ValueError(f"the {self.strategy!r} strategy needs a model to write the summary")

    @property
    def reserve(self) -> int:
        """Tokens set aside for the summary."""
        if self.strategy == "drop":
            return 0
        return self.summary_tokens or max(1, self.budget // 4)


@attrs.frozen
class Compacted:
    """What a compaction did: enough to redo it from the original context alone.

    Attributes:
        cut: how many leading messages of the history were replaced.
        kept: the positions (below `cut`) of the system messages kept verbatim.
        summary: the summary's text; None when the messages were dropped.
        strategy: the policy's strategy.
        before: tokens before, as the policy counts them.
        after: tokens after.
        clip: the characters each tool result after the cut was clipped to
            (see `clip_result`); None when none was.
    """

    cut: int
    kept: tuple[int, ...]
    summary: str | None
    strategy: str
    before: int
    after: int
    clip: int | None = None

    def as_data(self) -> dict[str, Any]:
        return attrs.asdict(self)


def measure(ctx: AgentContext[Any], count: TokenCounter = estimate_tokens) -> int:
    """Tokens of the system prompt, the history and a text input (the turn's new message)."""
    total = count_message_tokens(ctx.history, count)
    if ctx.system_prompt:
        total += count(ctx.system_prompt) + MESSAGE_OVERHEAD
    if isinstance(ctx.input, str) and ctx.input:
        total += count(ctx.input) + MESSAGE_OVERHEAD
    return total


def apply_compaction(ctx: AgentContext[Any], done: Compacted) -> AgentContext[Any]:
    """`ctx` compacted as `done` says (the summary message built as the policy built it)."""
    history = ctx.history
    kept = [history[i] for i in done.kept]
    summary = () if done.summary is None else (summary_message(done.summary),)
    rest = _clipped(history[done.cut :], done.clip)
    return ctx.evolve(history=History((*kept, *summary, *rest)))


def _clipped(messages: Sequence[Message], clip: int | None) -> tuple[Message, ...]:
    """`messages` with every tool result's text clipped to `clip` characters."""
    if clip is None:
        return tuple(messages)
    return tuple(
        attrs.evolve(m, content=clip_result(m.content, clip)) if m.role == "tool" else m
        for m in messages
    )


def _cuts(history: Sequence[Message], last: int) -> list[int]:
    """Every cut up to `last` that keeps each tool call with all of its results."""
    callers = _callers(history)
    earliest = len(history)  # the earliest caller of a result at or after each position
    lowest = [earliest] * (len(history) + 1)
    for i in range(len(history) - 1, -1, -1):
        caller = callers.get(i)
        lowest[i] = min(lowest[i + 1], caller if caller is not None else earliest)
    return [
        c
        for c in range(1, last + 1)
        if (c == len(history) or history[c].role != "tool") and lowest[c] >= c
    ]


def _plan(ctx: AgentContext[Any], policy: Compaction) -> tuple[int, tuple[int, ...], int]:
    """The cut that keeps the most messages and leaves room for the summary, with the
    system messages it keeps and the tokens of what is kept; the cut is 0 when none fits."""
    history = ctx.history
    last = cut_point(history, keep_last=policy.keep_last if policy.strategy == "keep_last" else 0)
    sizes = [count_message_tokens((m,), policy.count) for m in history]
    fixed = measure(ctx.evolve(history=History()), policy.count)
    if policy.strategy != "drop":
        fixed += count_message_tokens((summary_message(""),), policy.count) + policy.reserve
    suffix = sum(sizes)
    kept: list[int] = []
    kept_size = 0
    cuts = set(_cuts(history, last))
    best: tuple[int, tuple[int, ...], int] = (0, (), fixed + suffix)
    for c in range(1, last + 1):
        message = history[c - 1]
        suffix -= sizes[c - 1]
        if message.role == "system" and not is_summary(message):
            kept.append(c - 1)
            kept_size += sizes[c - 1]
        if c in cuts:
            best = (c, tuple(kept), fixed + kept_size + suffix)
            if best[2] <= policy.budget:
                return best
    return 0, (), best[2]


@attrs.frozen
class Plan:
    """What a compaction will do before its summary is written: the cut, the system
    messages it keeps, the tokens of what is kept (with room for the summary), and
    the tokens before."""

    cut: int
    kept: tuple[int, ...]
    needed: int
    before: int
    clip: int | None = None

    def as_data(self) -> dict[str, Any]:
        return attrs.asdict(self)


def plan(ctx: AgentContext[Any], policy: Compaction, thread_id: str) -> Plan | None:
    """What compacting `ctx` under `policy` will do; None when it already fits.

    Raises:
        CompactionFailed: what must be kept does not fit; `.context` is `ctx`.
    """
    before = measure(ctx, policy.count)
    if before <= policy.budget:
        return None
    cut, kept, needed = _plan(ctx, policy)
    if cut > 0:
        return Plan(cut, kept, needed, before)
    clipped = _clip_latest(ctx, policy, before)
    if clipped is not None:
        return clipped
    return _whole(ctx, policy, before, thread_id)


def _fixed(ctx: AgentContext[Any], policy: Compaction, summary: bool) -> int:
    """Tokens of the system prompt and the new message, with room for a summary."""
    fixed = measure(ctx.evolve(history=History()), policy.count)
    if summary and policy.strategy != "drop":
        fixed += count_message_tokens((summary_message(""),), policy.count) + policy.reserve
    return fixed


def _clip_latest(ctx: AgentContext[Any], policy: Compaction, before: int) -> Plan | None:
    """The latest turn kept with its tool results clipped to the most characters that fit
    (and what comes before it summarized), or None when no clip is enough."""
    history = ctx.history
    last = cut_point(history, keep_last=policy.keep_last if policy.strategy == "keep_last" else 0)
    cut = max(_cuts(history, last), default=0)
    longest = max((len(m.content) for m in history[cut:] if m.role == "tool"), default=None)
    if longest is None:
        return None
    kept = tuple(
        i for i in range(cut) if history[i].role == "system" and not is_summary(history[i])
    )
    base = _fixed(ctx, policy, summary=cut > 0)
    base += count_message_tokens([history[i] for i in kept], policy.count)

    def needed(clip: int) -> int:
        return base + count_message_tokens(_clipped(history[cut:], clip), policy.count)

    if needed(0) > policy.budget:
        return None
    low, high = 0, longest  # the longest clip that fits, by bisection
    while low < high:
        middle = (low + high + 1) // 2
        if needed(middle) <= policy.budget:
            low = middle
        else:
            high = middle - 1
    return Plan(cut, kept, needed(low), before, clip=low)


def _whole(ctx: AgentContext[Any], policy: Compaction, before: int, thread_id: str) -> Plan:
    """The whole history summarized (or dropped), but for its system messages.

    Raises:
        CompactionFailed: even so, what is left passes the budget.
    """
    history = ctx.history
    kept = tuple(i for i, m in enumerate(history) if m.role == "system" and not is_summary(m))
    needed = _fixed(ctx, policy, summary=True)
    needed += count_message_tokens([history[i] for i in kept], policy.count)
    if needed > policy.budget or not history:
        raise CompactionFailed(
            thread_id,
            f"what must be kept (the system prompt, system messages and the new message"
            f"{', and room for the summary' if policy.reserve else ''}) takes {needed} tokens",
            budget=policy.budget,
            needed=needed,
            context=ctx,
        )
    return Plan(len(history), kept, needed, before)


Ask = Callable[[ChatRequest], Awaitable[ChatResponse]]
"""Sends a summary request: the policy's model itself, or a run's `call_model` with it."""


async def carry_out(
    ctx: AgentContext[Any],
    policy: Compaction,
    thread_id: str,
    planned: Plan,
    ask: Ask | None = None,
) -> tuple[AgentContext[Any], Compacted, Usage]:
    """`ctx` compacted as `planned`, what was done, and what the summary cost.

    Raises:
        CompactionFailed: the summary came out longer than the room left for
            it; `.context` is `ctx`, untouched.
    """
    summary: str | None = None
    usage = Usage()
    if policy.strategy != "drop" and planned.cut > 0:
        assert policy.model is not None
        send = ask or policy.model.request
        summary, usage = await _summarize(ctx.history[: planned.cut], policy, send)
    done = Compacted(
        planned.cut, planned.kept, summary, policy.strategy, planned.before, 0, planned.clip
    )
    out = apply_compaction(ctx, done).add_usage(usage)
    after = measure(out, policy.count)
    if after > policy.budget:
        raise CompactionFailed(
            thread_id,
            f"the summary came out at {after - planned.needed + policy.reserve} tokens, over "
            f"the {policy.reserve} set aside for it (raise summary_tokens or the budget)",
            budget=policy.budget,
            needed=after,
            context=ctx,
        )
    return out, attrs.evolve(done, after=after), usage


async def compact(
    ctx: AgentContext[Any], policy: Compaction, thread_id: str
) -> tuple[AgentContext[Any], Compacted | None]:
    """`ctx` within `policy.budget`, and what was done (None when it already fits),
    the summary written by the policy's model outside any run.

    Raises:
        CompactionFailed: what must be kept does not fit, or the summary came out
            longer than the room left for it; `.context` is `ctx`, untouched.
    """
    planned = plan(ctx, policy, thread_id)
    if planned is None:
        return ctx, None
    out, done, _ = await carry_out(ctx, policy, thread_id, planned)
    return out, done


async def _summarize(
    messages: Sequence[Message], policy: Compaction, ask: Ask
) -> tuple[str, Usage]:
    """The summary of `messages`, asked of the policy's model piece by piece."""
    blocks = [_transcript_block(m) for m in messages]
    if policy.strategy == "chunked":
        budget = policy.chunk_tokens or max(1, policy.budget // 2)
        pieces = _pieces(blocks, budget, policy.count)
    else:
        pieces = ["\n\n".join(blocks)]
    summary, usage = "", Usage()
    for piece in pieces:
        text = (
            f"Summary of the conversation so far:\n{summary}\n\nThe conversation goes on:\n{piece}"
            if summary
            else f"The conversation:\n{piece}"
        )
        request = ChatRequest(
            (Message.system(policy.instructions), Message.user(text)),
            max_output=policy.reserve,
        )
        response = await ask(request)
        usage += response.usage
        summary = response.message.content.strip()
    return summary, usage
