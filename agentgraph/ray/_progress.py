"""The driver's progress bar: rows done, failed, runs a second, tokens (terminal or notebook)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._batch import BatchRow

__all__ = ("Progress",)


class Progress:
    """Counts finished rows as they arrive; draws them with `tqdm.auto` when enabled.

    The bar is drawn in a notebook or on a terminal; into a pipe or a log file
    its redraws would only be clutter, so there it is left out.
    """

    def __init__(self, total: int, *, enabled: bool) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.tokens = 0
        self._bar: Any = None
        if enabled:
            from tqdm.auto import tqdm

            if _notebook(tqdm) or _terminal():
                self._bar = tqdm(total=total, unit="run", desc="agentgraph batch", smoothing=0.1)

    def advance(self, rows: Sequence[BatchRow]) -> None:
        self.done += len(rows)
        self.failed += sum(1 for r in rows if r.status != "finished")
        self.tokens += sum(r.usage.total_tokens for r in rows)
        if self._bar is not None:
            self._bar.set_postfix(failed=self.failed, tokens=self.tokens, refresh=False)
            self._bar.update(len(rows))

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.close()


def _notebook(bar: type) -> bool:
    return any(kind.__module__ == "tqdm.notebook" for kind in bar.__mro__)


def _terminal() -> bool:
    return sys.stderr is not None and sys.stderr.isatty()
