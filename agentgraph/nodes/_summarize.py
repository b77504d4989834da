"""The `summarize` node: older history replaced by one summary as the context nears the window.

```python
shrink = summarize(model, context_window=128_000)
with GraphBuilder[str, str]("chat") as g:
    g.start.edge_to(prepare)
    prepare.edge_to(lambda ctx: shrink if shrink.needs_summary(ctx) else think,
                    targets=(shrink, think))
    shrink.edge_to(think)
```
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import attrs
import orjson

from .._core._context import AgentContext, History, Settings
from .._core._errors import OutputError
from .._core._events import Summarized
from .._core._node import Node
from ..llm._messages import Message, Usage
from ..llm._model import ChatModel, ChatRequest
from ._chat import _merge_settings, as_model
from ._tokens import (
    TokenCounter,
    count_context_tokens,
    estimate_tokens,
)

if TYPE_CHECKING:
    from .._core._runner import Runtime

__all__ = (
    "DEFAULT_INSTRUCTIONS",
    "Strategy",
    "Summarize",
    "cut_point",
    "needs_summary",
    "summarize",
    "summary_message",
)

T = TypeVar("T")

Strategy = Literal["whole", "keep_last", "chunked"]
"""`whole`: everything before the latest turn in one request; `keep_last`: also keep the
last N messages verbatim; `chunked`: like `whole`, in pieces that each fit the window."""

DEFAULT_INSTRUCTIONS = (
    "Summarize the conversation you are given so that the summary can replace it. Keep "
    "every fact, decision, name, number, tool result and open question that later turns "
    "may need; leave out greetings and repetition. Write in the conversation's language. "
    "Reply with the summary only."
)


def summary_message(summary: str) -> Message:
    """The default message that stands in for the summarized history: a system message."""
    return Message.system(f"Summary of the earlier conversation:\n{summary}")


def needs_summary(
    ctx: AgentContext[Any],
    *,
    context_window: int,
    threshold: float = 0.8,
    count: TokenCounter = estimate_tokens,
) -> bool:
    """Whether the system prompt plus history of `ctx` pass `threshold` of `context_window`."""
    return count_context_tokens(ctx, count) > threshold * context_window


def _latest_turn(history: Sequence[Message]) -> int:
    """Where the latest turn starts: the last user message, else the last message."""
    for i in range(len(history) - 1, -1, -1):
        if history[i].role == "user":
            return i
    return max(len(history) - 1, 0)


def _callers(history: Sequence[Message]) -> dict[int, int]:
    """For each tool result, the index of the assistant message whose call it answers."""
    issued: dict[str, int] = {}
    callers: dict[int, int] = {}
    for i, message in enumerate(history):
        if message.role == "assistant":
            for call in message.tool_calls:
                issued[call.id] = i  # ids may repeat across turns: the latest call wins
        elif message.role == "tool" and message.tool_call_id in issued:
            callers[i] = issued[message.tool_call_id]
    return callers


def cut_point(history: Sequence[Message], *, keep_last: int = 0) -> int:
    """How many leading messages of `history` a summary may replace.

    The kept part holds the latest turn (from the last user message on), at
    least the last `keep_last` messages, and every tool call group whole: the
    cut moves earlier until no tool result is kept without the assistant
    message that called it, and no kept part starts with a tool result.
    """
    cut = _latest_turn(history)
    if keep_last > 0:
        cut = min(cut, max(len(history) - keep_last, 0))
    callers = _callers(history)
    while True:
        moved = cut
        for i in range(cut, len(history)):
            caller = callers.get(i)
            if caller is not None and caller < moved:
                moved = caller
        while moved > 0 and history[moved].role == "tool":
            moved -= 1  # an orphan result stays with what came before it
        if moved == cut:
            return cut
        cut = moved


def _transcript_block(message: Message) -> str:
    if message.role == "tool":
        flag = " (error)" if message.is_error else ""
        return f"tool {message.name or message.tool_call_id or ''}{flag}: {message.content}"
    lines = [f"{message.role}: {message.content}"] if message.content else []
    for call in message.tool_calls:
        arguments = orjson.dumps(dict(call.arguments), default=str).decode()
        lines.append(f"{message.role} called {call.name}({arguments})")
    return "\n".join(lines) or f"{message.role}: "


def _pieces(blocks: list[str], budget: int, count: TokenCounter) -> list[str]:
    """The transcript in pieces of at most about `budget` tokens, split between messages."""
    pieces: list[str] = []
    current: list[str] = []
    used = 0
    for block in blocks:
        size = count(block)
        if size > budget:  # one message larger than a piece: cut it by characters
            if current:
                pieces.append("\n\n".join(current))
                current, used = [], 0
            step = max(1, len(block) * budget // size)
            pieces.extend(block[i : i + step] for i in range(0, len(block), step))
            continue
        if current and used + size > budget:
            pieces.append("\n\n".join(current))
            current, used = [], 0
        current.append(block)
        used += size
    if current:
        pieces.append("\n\n".join(current))
    return pieces


def _check_positive(instance: Any, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be a positive integer, not {value!r}")


def _check_threshold(instance: Any, attribute: Any, value: float) -> None:
    if not 0 < value <= 1:
        raise ValueError(f"threshold is a fraction of the window in (0, 1], not {value!r}")


def _check_strategy(instance: Any, attribute: Any, value: str) -> None:
    if value not in ("whole", "keep_last", "chunked"):
        raise ValueError(f"strategy is 'whole', 'keep_last' or 'chunked', not {value!r}")


@attrs.frozen(eq=False, slots=True, repr=False)
class Summarize(Node[T, T]):
    """Replaces older history with one summary once the context passes the threshold.

    Under the threshold it returns the context unchanged without calling the
    model. Otherwise it keeps the system prompt, the latest turn (and, with
    `keep_last`, the last N messages) and every tool call group whole, and
    asks the model, with no tools, to summarize the rest. If the call fails the
    error propagates (a provider error stays retryable) and the history is
    untouched. The input passes through; the usage is added to `ctx.usage`.
    """

    model: ChatModel
    context_window: int = attrs.field(validator=_check_positive)
    threshold: float = attrs.field(default=0.8, validator=_check_threshold)
    strategy: Strategy = attrs.field(default="whole", validator=_check_strategy)
    keep_last: int = attrs.field(default=6, validator=_check_positive)
    chunk_tokens: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(_check_positive)
    )
    count: TokenCounter = estimate_tokens
    instructions: str = DEFAULT_INSTRUCTIONS
    settings: Settings | None = None
    message: Callable[[str], Message] = summary_message

    def needs_summary(self, ctx: AgentContext[Any]) -> bool:
        """Whether `ctx` passes this node's threshold: a predicate for a dynamic edge."""
        return needs_summary(
            ctx, context_window=self.context_window, threshold=self.threshold, count=self.count
        )

    async def run(self, ctx: AgentContext[T], rt: Runtime) -> AgentContext[T]:
        before = count_context_tokens(ctx, self.count)
        if before <= self.threshold * self.context_window:
            return ctx
        history = ctx.history
        cut = cut_point(history, keep_last=self.keep_last if self.strategy == "keep_last" else 0)
        if cut == 0:
            return ctx  # nothing precedes the latest turn: there is nothing to replace
        blocks = [_transcript_block(m) for m in history[:cut]]
        if self.strategy == "chunked":
            budget = self.chunk_tokens or max(1, self.context_window // 2)
            pieces = _pieces(blocks, budget, self.count)
        else:
            pieces = ["\n\n".join(blocks)]
        summary, usage = await self._summarize(ctx, pieces, rt)
        kept = history[cut:]
        out = ctx.evolve(history=History((self.message(summary), *kept))).add_usage(usage)
        after = count_context_tokens(out, self.count)
        await rt.emit(
            Summarized(rt.step, rt.path, self.strategy, cut, len(kept), before, after, len(pieces))
        )
        return out

    async def _summarize(
        self, ctx: AgentContext[Any], pieces: list[str], rt: Runtime
    ) -> tuple[str, Usage]:
        settings = _merge_settings(ctx.settings, self.settings)
        summary = ""
        usage = Usage()
        for piece in pieces:
            text = (
                f"Summary of the conversation so far:\n{summary}\n\n"
                f"The conversation goes on:\n{piece}"
                if summary
                else f"The conversation:\n{piece}"
            )
            request = ChatRequest(
                (Message.system(self.instructions), Message.user(text)),
                temperature=settings.temperature,
                max_output=settings.max_output,
                think=settings.think,
                model=settings.model,
            )
            response = await rt.call_model(self.model, request)
            usage += response.usage
            summary = response.message.content.strip()
            if not summary:
                raise OutputError(
                    "the model answered the summary request with no text; the history "
                    "was left as it was",
                    attempts=(response.message.content,),
                )
        return summary, usage


def summarize(
    model: ChatModel | str,
    *,
    context_window: int,
    threshold: float = 0.8,
    strategy: Strategy = "whole",
    keep_last: int = 6,
    chunk_tokens: int | None = None,
    count: TokenCounter = estimate_tokens,
    instructions: str = DEFAULT_INSTRUCTIONS,
    settings: Settings | None = None,
    message: Callable[[str], Message] = summary_message,
    name: str = "summarize",
) -> Summarize[Any]:
    """A node that summarizes older history when the context nears the model's window.

    Args:
        model: the model that writes the summary (the request carries no tools), or
            a `"provider:model"` string (see `model_from_string`).
        context_window: the model's context window, in tokens.
        threshold: the fraction of the window the system prompt plus history
            must pass before anything happens.
        strategy: `whole`, `keep_last` (keep the last `keep_last` messages
            verbatim too) or `chunked` (summarize in pieces of `chunk_tokens`,
            default half the window, carrying the summary from piece to piece).
        count: the token counter: characters/4 by default, or `tiktoken_counter()`.
        instructions: the system prompt of the summary request.
        settings: overrides the context's settings for the summary request.
        message: builds the message that replaces the summarized history.
    """
    return Summarize(
        as_model(model, f"summarize {name!r}"),
        context_window,
        threshold,
        strategy,
        keep_last,
        chunk_tokens,
        count,
        instructions,
        settings,
        message,
        name=name,
    )
