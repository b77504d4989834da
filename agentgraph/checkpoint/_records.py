"""What a checkpoint store keeps: one record per run, one per committed step, and effects.

Contexts and effect values are already encoded (orjson bytes) when a record is
made, so a store only moves bytes and never needs the library's types.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs
import orjson

from .._core._errors import CheckpointError

__all__ = (
    "EFFECT_VALUES",
    "Effect",
    "Record",
    "RunLog",
    "RunRecord",
    "StepRecord",
    "ThreadHead",
    "ThreadLog",
    "checked",
    "damaged",
    "effect_step",
)

_NUMBER = 8
"""Bytes a fixed-width store spends on one number column (SQLite REAL, a Postgres bigint)."""


@attrs.frozen
class RunRecord:
    """The start of a run: the root graph, its shape and the initial context.

    Attributes:
        run_id: the run's identifier.
        graph: the root graph's name.
        structure: JSON of the graph's node names and edges per level, to say
            what changed when a resume does not fit.
        context: the encoded initial context.
        created: wall-clock time (seconds since the epoch) the run started.
        parent: for a fork, the run it was copied from.
        parent_step: for a fork, the step it was copied at.
        thread: the thread the run is a turn of, if any.
        base: the run whose final context the turn started from (the thread's
            head when the run began; None for a thread's first turn).
    """

    run_id: str
    graph: str
    structure: bytes
    context: bytes
    created: float
    parent: str | None = None
    parent_step: int | None = None
    thread: str | None = None
    base: str | None = None

    @property
    def nbytes(self) -> int:
        names = len(self.run_id) + len(self.graph) + len(self.parent or "")
        names += len(self.thread or "") + len(self.base or "")
        return names + len(self.structure) + len(self.context) + 2 * _NUMBER


@attrs.frozen
class StepRecord:
    """A committed step: the output context and where the run goes next.

    A step is committed after it completed and its graph chose the next node,
    so a resume continues at `next` without running a router again.

    Attributes:
        run_id: the run it belongs to.
        seq: commit order within the run, from 1 (the run record is 0).
        step: the run-wide index of the step that produced the context.
        path: the path of the graph the node ran in (the root graph's name first).
        node: the node's name.
        next: the name of the node the graph chose next (`finish` at the end).
        local: the step's index within its graph.
        steps: the run's step counter at commit (nested steps included).
        context: the output context, encoded as a change to the record before it.
        at: wall-clock time of the commit.
        duration: seconds the step took, nested steps included.
    """

    run_id: str
    seq: int
    step: int
    path: tuple[str, ...]
    node: str
    next: str
    local: int
    steps: int
    context: bytes
    at: float
    duration: float

    @property
    def nbytes(self) -> int:
        """Bytes of payload: the context, the names, and six 8-byte numbers."""
        names = sum(len(p) for p in self.path) + len(self.node) + len(self.next)
        return len(self.context) + names + 6 * _NUMBER


@attrs.frozen
class Effect:
    """Something a step did outside the context, kept so a resume or replay need not redo it.

    `kind` is `model` (request and response), `intent` and `result` (a tool
    call before and after it ran), `interrupt` and `answer` (a question to the
    outside and its answer) or `value` (`Runtime.once`). `key` names the step,
    its attempt and the effect's position in it.
    """

    run_id: str
    key: str
    kind: str
    value: bytes

    @property
    def nbytes(self) -> int:
        return len(self.key) + len(self.kind) + len(self.value)


@attrs.frozen
class ThreadHead:
    """A turn of a thread finished: run `run_id` becomes the head of `thread`.

    Only when the head is still `base`, the head the turn started from: a
    turn resumed after a later one finished is kept, but leaves the head alone.
    """

    run_id: str
    thread: str
    base: str | None
    at: float

    @property
    def nbytes(self) -> int:
        return len(self.run_id) + len(self.thread) + len(self.base or "") + _NUMBER


@attrs.frozen
class ThreadLog:
    """What a store holds for one thread: its head and its turns, oldest first.

    Attributes:
        thread: the thread's id.
        head: the run whose final context the thread continues from; None
            until a first turn finished.
        created: wall-clock time of the thread's first turn.
        updated: wall-clock time its head last moved (`created` until then).
        runs: each turn's run id and the run it started from, oldest first.
    """

    thread: str
    head: str | None
    created: float
    updated: float
    runs: tuple[tuple[str, str | None], ...] = ()


Record = RunRecord | StepRecord | Effect | ThreadHead
"""Any record a store receives."""


def effect_step(key: str) -> int:
    """The run-wide step an effect key belongs to (keys start with the step's index)."""
    head = key.split(".", 1)[0].split("/", 1)[0]
    try:
        return int(head)
    except ValueError:
        raise CheckpointError(f"effect key {key!r} does not start with a step index") from None


def _blob_map(value: Mapping[str, bytes]) -> Mapping[str, bytes]:
    return MappingProxyType(dict(value))


@attrs.frozen
class RunLog:
    """Everything a store holds for one run, in commit order.

    `blobs` holds the bytes of images and documents by digest when the log
    travels without its store (a `Recording` file); a store's own `load`
    leaves it empty, the bytes staying in the store.
    """

    run: RunRecord
    steps: tuple[StepRecord, ...] = ()
    effects: tuple[Effect, ...] = ()
    blobs: Mapping[str, bytes] = attrs.field(factory=dict, converter=_blob_map)

    @property
    def nbytes(self) -> int:
        """Payload bytes of every record: what the run costs a store, before its own overhead."""
        return (
            self.run.nbytes
            + sum(r.nbytes for r in self.steps)
            + sum(e.nbytes for e in self.effects)
        )

    def records(self) -> tuple[Record, ...]:
        """The run record, the step records and the effects, ready to write to another store."""
        return (self.run, *self.steps, *self.effects)

    def dumps(self) -> bytes:
        """JSON lines: the run, then each step and effect (contexts stay embedded JSON)."""
        lines = [_line("run", self.run)]
        lines.extend(_line("step", r) for r in self.steps)
        lines.extend(_line("effect", e) for e in self.effects)
        lines.extend(
            orjson.dumps({"record": "blob", "digest": d, "data": base64.b64encode(b).decode()})
            for d, b in self.blobs.items()
        )
        return b"\n".join(lines) + b"\n"

    @staticmethod
    def loads(data: bytes | str) -> RunLog:
        """Read what `dumps` wrote."""
        run: RunRecord | None = None
        steps: list[StepRecord] = []
        effects: list[Effect] = []
        blobs: dict[str, bytes] = {}
        raw = data.encode() if isinstance(data, str) else data
        for number, line in enumerate(raw.splitlines(), 1):
            if not line.strip():
                continue
            try:
                kind, fields = _parse(line)
                if kind == "run":
                    run = RunRecord(**fields)
                elif kind == "step":
                    steps.append(StepRecord(**{**fields, "path": tuple(fields["path"])}))
                elif kind == "blob":
                    blobs[str(fields["digest"])] = base64.b64decode(fields["data"], validate=True)
                else:
                    effects.append(Effect(**fields))
            except (ValueError, TypeError, KeyError, binascii.Error) as exc:
                raise CheckpointError(f"line {number} of a run log is not a record: {exc}") from exc
        if run is None:
            raise CheckpointError("a run log without its run record")
        return RunLog(run, tuple(steps), tuple(effects), blobs)


_BLOBS = ("structure", "context", "value")


def _line(kind: str, record: Record) -> bytes:
    fields: dict[str, Any] = attrs.asdict(record, recurse=False)
    for name in _BLOBS:
        if name in fields:
            fields[name] = orjson.Fragment(fields[name])
    return orjson.dumps({"record": kind, **fields})


def _parse(line: bytes) -> tuple[str, dict[str, Any]]:
    fields = orjson.loads(line)
    kind = fields.pop("record")
    if kind == "blob":
        return kind, fields
    if kind not in ("run", "step", "effect"):
        raise ValueError(f"unknown record kind {kind!r}")
    for name in _BLOBS:
        if name in fields:
            fields[name] = orjson.dumps(fields[name])
    return kind, fields


_NONE = type(None)
_SHAPES: dict[type[Any], dict[str, tuple[type[Any], ...]]] = {
    RunRecord: {
        "run_id": (str,),
        "graph": (str,),
        "structure": (bytes,),
        "context": (bytes,),
        "created": (int, float),
        "parent": (str, _NONE),
        "parent_step": (int, _NONE),
        "thread": (str, _NONE),
        "base": (str, _NONE),
    },
    StepRecord: {
        "run_id": (str,),
        "seq": (int,),
        "step": (int,),
        "path": (tuple,),
        "node": (str,),
        "next": (str,),
        "local": (int,),
        "steps": (int,),
        "context": (bytes,),
        "at": (int, float),
        "duration": (int, float),
    },
    Effect: {"run_id": (str,), "key": (str,), "kind": (str,), "value": (bytes,)},
}
"""The type of every field of every record kind, as a store must give it back."""

EFFECT_VALUES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "model": ("request", "response"),
        "intent": ("call",),
        "result": ("m", "d"),
        "value": ("v",),
        "interrupt": ("v",),
        "answer": ("v",),
        "memory": ("v",),  # agentgraph.memory's reads and writes
        "migrated": ("H",),  # a context upgraded to a newer graph version (a full context)
        "migrated-input": ("H",),  # the input of a composite the run was in, upgraded too
    }
)
"""The keys of the JSON object each kind of effect keeps."""


def damaged(run_id: str, what: str, how: str) -> CheckpointError:
    """The error for a record of `run_id` that a store gave back damaged."""
    return CheckpointError(f"run {run_id!r}: {what} is damaged: {how}")


def checked(log: RunLog) -> RunLog:
    """`log` when every record in it is whole, read before anything is built from it.

    Contexts are checked when they are decoded (`decode_contexts`), blobs against
    their digest when they are fetched (`load_blobs`).

    Raises:
        CheckpointError: a record is damaged; names the run, the record and the damage.
    """
    rid = log.run.run_id
    _fields(log.run, rid, "the run record")
    _object(log.run.structure, rid, "the run record's graph structure")
    for i, record in enumerate(log.steps, 1):
        _fields(record, rid, f"step record {i}")
        if not all(isinstance(part, str) for part in record.path):
            raise damaged(rid, f"step record {i}", f"its path holds {record.path!r}")
    for effect in log.effects:
        what = f"effect {effect.key!r} ({effect.kind!r})"
        _fields(effect, rid, what)
        keys = EFFECT_VALUES.get(effect.kind)
        if keys is None:
            raise damaged(rid, what, f"no effect is of kind {effect.kind!r}")
        missing = [key for key in keys if key not in _object(effect.value, rid, what)]
        if missing:
            raise damaged(rid, what, f"its value lacks {', '.join(missing)}")
    forked_at = log.run.parent_step
    if forked_at is not None and all(r.step != forked_at for r in log.steps):
        how = f"it was forked at step {forked_at}, which none of its step records is"
        raise damaged(rid, "the run record", how)
    return log


def _fields(record: Record, run_id: str, what: str) -> None:
    for name, types in _SHAPES[type(record)].items():
        value = getattr(record, name)
        if not isinstance(value, types) or isinstance(value, bool):
            shown = repr(value) if len(repr(value)) <= 60 else f"{repr(value)[:57]}..."
            raise damaged(run_id, what, f"its {name} is {type(value).__name__} {shown}")


def _object(data: bytes, run_id: str, what: str) -> dict[str, Any]:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise damaged(run_id, what, f"not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise damaged(run_id, what, f"JSON {type(value).__name__}, not an object")
    return value
