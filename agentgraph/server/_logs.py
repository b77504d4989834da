"""The server's log lines: stdlib `logging`, the ids of the run in each record's `extra`.

Every line about a run carries `run_id`, `thread_id`, `assistant_id` and
`graph_id` as attributes of its record, so a handler can filter on them; the
`JsonLines` formatter writes each record as one JSON object with them as keys
(`agentgraph server --log-format json`).
"""

from __future__ import annotations

import datetime
import logging
import sys
from typing import Any, TextIO

import orjson

from ._queue import QueuedRun

__all__ = ("LOG", "JsonLines", "configure_logging", "run_extra")

LOG = logging.getLogger("agentgraph.server")
"""The logger of the server's API and workers."""

_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
"""A record's own attributes: every other one came in `extra`."""


def run_extra(run: QueuedRun, **more: Any) -> dict[str, Any]:
    """The `extra` of a log line about `run`."""
    return {
        "run_id": run.run_id,
        "thread_id": run.thread_id,
        "assistant_id": run.assistant_id,
        "graph_id": run.graph_id,
        **more,
    }


class JsonLines(logging.Formatter):
    """Formats a record as one JSON object: time, level, logger, message, its `extra`
    fields, and the traceback of an exception (`exc_info`)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, tz=datetime.UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


class _Text(logging.Formatter):
    """`time level logger message key=value …`: the record's `extra` after its message."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = [
            f"{key}={value}"
            for key, value in record.__dict__.items()
            if key not in _STANDARD and not key.startswith("_")
        ]
        return f"{text} {' '.join(fields)}" if fields else text


def configure_logging(
    kind: str = "text", *, level: int = logging.INFO, stream: TextIO | None = None
) -> logging.Handler:
    """Send the server's log lines to `stream` (stderr) as `kind`: `"text"` or `"json"`
    (one JSON object a line). The handler added to the `agentgraph.server` logger."""
    handler = logging.StreamHandler(stream or sys.stderr)
    if kind == "json":
        handler.setFormatter(JsonLines())
    else:
        handler.setFormatter(_Text("%(asctime)s %(levelname)s %(name)s %(message)s"))
    LOG.addHandler(handler)
    LOG.setLevel(level)
    return handler
