"""Tables kept beside the queue's, made once per queue on first use."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

from ._queue import RunQueue

__all__ = ("ensure_tables",)

_made: weakref.WeakKeyDictionary[RunQueue, set[str]] = weakref.WeakKeyDictionary()
_making = threading.Lock()


def ensure_tables(queue: RunQueue, name: str, statements: Sequence[str]) -> None:
    """Run `statements` (`CREATE … IF NOT EXISTS`) once for `queue`, under the name `name`.

    On PostgreSQL, processes starting at once would race to create the same
    tables (`IF NOT EXISTS` does not stop two at once): an advisory lock named
    after `name` makes them take turns.
    """
    with _making:
        made = _made.setdefault(queue, set())
        if name in made:
            return
        with queue.transaction() as run:
            if queue.postgres:
                run(f"SELECT pg_advisory_xact_lock(hashtext('agentgraph.{name}'))", ())
            for statement in statements:
                if queue.postgres:
                    statement = statement.replace(" REAL", " DOUBLE PRECISION")
                run(statement, ())
        made.add(name)
