"""The step tree of one run, rebuilt from its records.

`TraceBuilder` takes records one by one (from a file, or live from a sink) and
`build()` returns a frozen `Trace`: the run's steps nested, each with
its retries, failure, model calls, tool calls and handoffs, and the routes the run took.
A step hangs under the step its record names as `parent` (older records: by path).
Times are seconds since the run started. The values it builds live in `_trace`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ._trace import ModelCall, RetryRecord, Route, Step, ToolRecord, Trace

__all__ = ("TraceBuilder",)


@attrs.define
class _Open:
    """A step while its records arrive."""

    step: Step
    children: list[_Open] = attrs.field(factory=list)
    retries: list[RetryRecord] = attrs.field(factory=list)
    model_calls: list[ModelCall] = attrs.field(factory=list)
    tool_calls: list[ToolRecord] = attrs.field(factory=list)
    outputs: list[Mapping[str, Any]] = attrs.field(factory=list)
    guards: list[Mapping[str, Any]] = attrs.field(factory=list)
    handoffs: list[Mapping[str, Any]] = attrs.field(factory=list)

    def freeze(self) -> Step:
        return attrs.evolve(
            self.step,
            retries=tuple(self.retries),
            model_calls=tuple(self.model_calls),
            tool_calls=tuple(self.tool_calls),
            outputs=tuple(self.outputs),
            guards=tuple(self.guards),
            handoffs=tuple(self.handoffs),
            children=tuple(child.freeze() for child in self.children),
        )


class TraceBuilder:
    """Rebuilds the step tree of one run from its records, in the order they were written.

    Records of kinds it does not know are kept in `Trace.records` and otherwise
    ignored, so older readers accept newer files.
    """

    def __init__(self) -> None:
        self.records: list[Mapping[str, Any]] = []
        self._roots: list[_Open] = []
        self._steps: dict[int, _Open] = {}
        self._running: list[_Open] = []
        self._routes: list[Route] = []
        self._head: dict[str, Any] = {"run": "", "graph": "", "status": "running"}

    def add(self, record: Mapping[str, Any]) -> None:
        """Take one record; raises `KeyError`/`TypeError`/`ValueError` on a malformed one."""
        self.records.append(record)
        kind = record["event"]
        if not self._head["run"]:
            self._head["run"] = str(record.get("run", ""))
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(record)

    def build(self) -> Trace:
        """The tree as it stands: steps that have not finished are `running`."""
        head = self._head
        return Trace(
            run=head["run"],
            graph=head["graph"],
            status=head["status"],
            started_at=head.get("started_at"),
            duration=head.get("duration"),
            steps=tuple(root.freeze() for root in self._roots),
            routes=tuple(self._routes),
            input=head.get("input"),
            output=head.get("output"),
            error=head.get("error"),
            usage=head.get("usage") or {},
            step_count=head.get("steps") or len(self._steps),
            records=tuple(self.records),
        )

    # -- one handler per record kind ------------------------------------------------
    def _on_run_started(self, r: Mapping[str, Any]) -> None:
        self._head.update(
            graph=str(r["graph"]),
            started_at=float(r["time"]) - float(r["elapsed"]),
            input=(r.get("context") or {}).get("input"),
        )

    def _on_node_started(self, r: Mapping[str, Any]) -> None:
        path = _path(r["path"])
        step = Step(
            index=int(r["index"]),
            local_index=int(r.get("local_index", 0)),
            depth=int(r.get("depth", len(path) - 2)),
            path=path,
            name=str(r.get("node", path[-1] if path else "?")),
            kind=str(r.get("kind", "node")),
            start=float(r["elapsed"]),
            status="running",
            input=r.get("input"),
        )
        opened = _Open(step)
        parent = self._parent(r, path)
        (parent.children if parent is not None else self._roots).append(opened)
        self._steps[step.index] = opened
        self._running.append(opened)

    def _on_node_finished(self, r: Mapping[str, Any]) -> None:
        opened = self._steps.get(int(r["index"]))
        if opened is None:
            return
        opened.step = attrs.evolve(
            opened.step,
            status="ok",
            duration=float(r["duration"]),
            attempts=int(r.get("attempts", 1)),
            output=r.get("output"),
            messages=tuple(r.get("messages") or ()),
        )
        self._close(opened)

    def _on_node_failed(self, r: Mapping[str, Any]) -> None:
        opened = self._steps.get(int(r["index"]))
        if opened is None:
            return
        opened.step = attrs.evolve(
            opened.step,
            status="failed",
            duration=max(float(r["elapsed"]) - opened.step.start, 0.0),
            attempts=int(r.get("attempts", 1)),
            error=r.get("error"),
        )
        self._close(opened)

    def _on_retry_scheduled(self, r: Mapping[str, Any]) -> None:
        opened = self._find(_path(r["path"]), r.get("index"))
        if opened is not None:
            opened.retries.append(
                RetryRecord(int(r["attempt"]), float(r["wait"]), r["error"], float(r["elapsed"]))
            )

    def _on_route_chosen(self, r: Mapping[str, Any]) -> None:
        self._routes.append(
            Route(
                int(r["index"]),
                _path(r["path"]),
                str(r["source"]),
                str(r["target"]),
                int(r["transition"]),
                bool(r["dynamic"]),
            )
        )

    def _on_model_requested(self, r: Mapping[str, Any]) -> None:
        opened = self._find(_path(r["path"]), r.get("index"))
        if opened is not None:
            call = ModelCall(str(r["model"]), float(r["elapsed"]), r.get("request") or {})
            opened.model_calls.append(call)

    def _on_model_responded(self, r: Mapping[str, Any]) -> None:
        opened = self._find(_path(r["path"]), r.get("index"))
        if opened is None:
            return
        latency = float(r["latency"])
        for i in range(len(opened.model_calls) - 1, -1, -1):
            call = opened.model_calls[i]
            if call.response is None and call.model == r["model"]:
                opened.model_calls[i] = attrs.evolve(
                    call, response=r.get("response") or {}, latency=latency
                )
                return
        start = float(r["elapsed"]) - latency
        opened.model_calls.append(
            ModelCall(str(r["model"]), start, {}, r.get("response") or {}, latency)
        )

    def _on_tool_finished(self, r: Mapping[str, Any]) -> None:
        opened = self._find(_path(r["path"]), r.get("index"))
        if opened is None:
            return
        call = r.get("call") or {}
        duration = float(r["duration"])
        opened.tool_calls.append(
            ToolRecord(
                id=str(call.get("id", "")),
                name=str(call.get("name", "?")),
                arguments=call.get("arguments") or {},
                result=str(r.get("result", "")),
                is_error=bool(r.get("is_error")),
                start=float(r["elapsed"]) - duration,
                duration=duration,
            )
        )

    def _on_guard_decided(self, r: Mapping[str, Any]) -> None:
        opened = self._find(_path(r["path"]), r.get("index"))
        if opened is not None:
            opened.guards.append(r)

    def _on_handed_off(self, r: Mapping[str, Any]) -> None:
        opened = self._find(_path(r["path"]), r.get("index"))
        if opened is not None:
            opened.handoffs.append(r)

    def _on_structured_output(self, r: Mapping[str, Any]) -> None:
        opened = self._find(_path(r["path"]), r.get("index"))
        if opened is not None:
            opened.outputs.append(r)

    def _on_run_finished(self, r: Mapping[str, Any]) -> None:
        ok = bool(r["ok"])
        self._head.update(
            status="ok" if ok else "failed",
            duration=float(r["elapsed"]),
            output=r.get("output"),
            usage=r.get("usage") or {},
            error=r.get("error"),
            steps=int(r.get("steps", 0)),
        )
        for opened in self._running:
            opened.step = attrs.evolve(opened.step, status="interrupted")
        self._running.clear()

    # -- lookup -------------------------------------------------------------------------
    def _close(self, opened: _Open) -> None:
        if opened in self._running:
            self._running.remove(opened)

    def _parent(self, r: Mapping[str, Any], path: tuple[str, ...]) -> _Open | None:
        """The step a starting step runs inside: by its `parent` index, else by path."""
        index = r.get("parent")
        if isinstance(index, int) and not isinstance(index, bool):
            if index == 0:
                return None
            # branches of a combinator share a path, so the index is what tells them apart
            parent = self._steps.get(index)
            if parent is not None:
                return parent
        return self._find(path[:-1], None)

    def _find(self, path: tuple[str, ...], index: Any) -> _Open | None:
        """The running step at `path` (the one numbered `index` if there are several)."""
        found: _Open | None = None
        for opened in reversed(self._running):
            if opened.step.path == path:
                if index is None or opened.step.index == index:
                    return opened
                found = found or opened
        if found is None and isinstance(index, int):
            candidate = self._steps.get(index)
            if candidate is not None and candidate.step.path == path:
                return candidate
        return found


def _path(value: Any) -> tuple[str, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise TypeError(f"a path is a list of names, not {value!r}")
    return tuple(str(part) for part in value)
