"""The bound on what one tool result hands the model, and the note that says what was cut."""

from __future__ import annotations

__all__ = ("MAX_RESULT_CHARS", "check_max_result_chars", "clip_result")

MAX_RESULT_CHARS = 100_000
"""The default bound on a tool result the model reads, in characters (about 25,000 tokens)."""

_MIN = 100


def check_max_result_chars(owner: str, value: int | None) -> int | None:
    """`value` when it is None (no bound) or a whole number of at least 100 characters."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or value < _MIN
    ):
        raise ValueError(f"{owner}: max_result_chars must be None or an int of at least {_MIN}")
    return value


def clip_result(text: str, limit: int | None) -> str:
    """`text` when it fits in `limit` characters; else its start and end, and a note between.

    The start carries most results' substance and the end their conclusion
    (a log's last lines, a trace's error), so three quarters of the budget go
    to the start and one to the end. The note says how much was cut, so the
    model knows the result is incomplete and can ask for less.
    """
    if limit is None or len(text) <= limit:
        return text
    tail = limit // 4
    head = limit - tail
    cut = len(text) - limit
    note = (
        f"\n\n[… {cut:,} of this result's {len(text):,} characters were cut here: a tool result "
        f"is limited to {limit:,}. Ask for a smaller part if you need what is missing. …]\n\n"
    )
    return text[:head] + note + (text[-tail:] if tail else "")
