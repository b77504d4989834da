"""`run_batch`: one graph over many inputs on a Ray cluster, with Ray Data and a pool of actors."""

from __future__ import annotations

import hashlib
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs
import orjson

from .._core._context import AgentContext
from .._core._errors import UsageError
from .._core._runner import GraphRunner, new_run_id
from ..checkpoint._codec import full_context
from ..llm._messages import Usage
from ._checks import check_arguments
from ._limits import Buckets, RateLimit, SharedRateLimits
from ._local import connect, local_only, ray_data_quietly
from ._progress import Progress
from ._worker import BatchWorker, StoreFactory, import_graph

__all__ = ("BatchRow", "run_batch")

Status = Literal["finished", "failed", "interrupted"]
Origin = Literal["new", "resumed", "stored"]


@attrs.frozen
class BatchRow:
    """The outcome of one input of a batch.

    Attributes:
        index: the input's position in the batch.
        key: the input's key (its index as text unless keys were given).
        run_id: the run's id, fixed by the batch id and the key.
        status: `"finished"`, `"failed"` or `"interrupted"` (a node asked a question).
        origin: `"new"` (run here from the start), `"resumed"` (continued after its
            last committed step) or `"stored"` (finished before; read back from the store);
            `"new"` for a row that did not finish.
        output: the final context's `input`, as plain JSON data (None unless finished).
        error_type: the error's class name (None when finished).
        error: the error's message, secrets masked (None when finished).
        usage: the run's model usage (up to its last good context when it failed).
        steps: the steps the run took (the failing step's index when it failed).
        seconds: how long the row took in its actor.
    """

    index: int
    key: str
    run_id: str
    status: Status
    origin: Origin
    output: Any
    error_type: str | None
    error: str | None
    usage: Usage
    steps: int
    seconds: float


def run_batch(
    graph: str,
    inputs: Iterable[Any],
    *,
    store: StoreFactory | None = None,
    batch_id: str | None = None,
    keys: Sequence[str] | Callable[[Any], str] | None = None,
    runner: GraphRunner | None = None,
    concurrency: int = 32,
    actors: int = 1,
    rate_limits: Mapping[str, RateLimit] | None = None,
    lease_wait: float = 120.0,
    address: str | None = None,
    progress: bool = True,
    ray_remote_args: Mapping[str, Any] | None = None,
) -> list[BatchRow]:
    """Run the graph at `graph` on every input, over Ray Data with a pool of actors.

    ```python
    rows = run_batch("evals.agents:solver", questions, actors=2)
    ```
    Each actor imports the graph itself (`"module:attribute"`, importable on
    every machine) and runs up to `concurrency` runs at once on one event
    loop. Every input gets one `BatchRow`, in input order; a failing row
    never fails the batch. Blocks until every row is done, showing a progress
    bar unless `progress=False`.

    With a `store` (a picklable zero-argument callable each actor calls to
    open its own store, such as `functools.partial(SQLiteStore, path)`) and a
    `batch_id`, the batch can be run again after a crash of the driver or of
    any worker: finished rows are read back, interrupted ones resumed from
    their last step, and a row whose lease a lost runner still holds waits up
    to `lease_wait` seconds for it to lapse (then fails with `RunBusy`).

    Args:
        graph: where the graph is, `"package.module:attribute"`.
        inputs: the inputs: `AgentContext`s, or values each run starts from.
        store: opens the checkpoint store every actor shares.
        batch_id: names the batch; with the keys it fixes each row's run id.
        keys: one unique key per input, or a function of the input; by default
            the input's index.
        runner: the runner policy (retries, step cap, timeout, usage limits).
        concurrency: runs at once in each actor.
        actors: actors in the pool.
        rate_limits: limits shared by every actor, by model or provider name.
        lease_wait: seconds a row waits for another runner's lease to lapse.
        address: an existing Ray cluster to connect to; by default Ray starts
            on this machine (no dashboard, no usage stats).
        progress: show a progress bar (terminal or notebook).
        ray_remote_args: resources for each actor (`num_cpus`, `resources`, ...).

    Raises:
        UsageError: any bad argument, named, before Ray starts: a bad reference, a
            store without a batch id or one that cannot be pickled for the
            actors, keys that repeat, a count below 1.
        ContextEncodingError: an input that is not data (see `AgentContext`).
    """
    if address is None and "ray" not in sys.modules:
        local_only()
    import ray
    import ray.cloudpickle
    import ray.data

    # Every argument is checked before Ray starts (`connect`), each refusal naming it.
    check_arguments(
        ray.cloudpickle.dumps,
        graph=graph,
        store=store,
        batch_id=batch_id,
        keys=keys,
        runner=runner,
        concurrency=concurrency,
        actors=actors,
        rate_limits=rate_limits,
        lease_wait=lease_wait,
        address=address,
        progress=progress,
        ray_remote_args=ray_remote_args,
    )
    import_graph(graph)  # a bad reference fails here, before any worker starts
    batch = batch_id or new_run_id()
    rows = _rows(list(inputs), batch, keys)
    connect(ray, address)
    base = runner or GraphRunner()
    buckets: Any = None
    if rate_limits:
        buckets = (
            ray.remote(Buckets)
            .options(name=f"agentgraph-rate-limits-{batch}", num_cpus=0)
            .remote(dict(rate_limits))
        )
        base = base.evolve(model_gate=SharedRateLimits(frozenset(rate_limits), buckets))
    try:
        with ray_data_quietly():
            return _execute(
                ray,
                rows,
                graph,
                base,
                store,
                concurrency,
                actors,
                lease_wait,
                progress,
                ray_remote_args,
            )
    finally:
        if buckets is not None:
            ray.kill(buckets)


def _execute(
    ray: Any,
    rows: list[dict[str, Any]],
    graph: str,
    runner: GraphRunner,
    store: StoreFactory | None,
    concurrency: int,
    actors: int,
    lease_wait: float,
    progress: bool,
    ray_remote_args: Mapping[str, Any] | None,
) -> list[BatchRow]:
    if not rows:
        return []
    actors = min(actors, len(rows))  # an actor without a block of its own would idle
    blocks = min(len(rows), max(actors, math.ceil(len(rows) / concurrency)))  # every actor busy
    dataset = ray.data.from_items(rows, override_num_blocks=blocks)
    dataset.context.enable_progress_bars = False
    dataset.context.print_on_execution_start = False
    results = dataset.map_batches(
        BatchWorker,
        fn_constructor_kwargs={
            "graph": graph,
            "runner": runner,
            "store": store,
            "concurrency": concurrency,
            "lease_wait": lease_wait,
        },
        batch_size=concurrency,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(
            size=actors, max_concurrent_calls_per_actor=2, enable_true_multi_threading=True
        ),
        **dict(ray_remote_args or {}),
    )
    found: dict[int, BatchRow] = {}
    with Progress(len(rows), enabled=progress) as bar:
        for batch in results.iter_batches(batch_size=None, batch_format="pyarrow"):
            done = [_batch_row(r) for r in batch.to_pylist()]
            for row in done:
                found[row.index] = row  # a row Ray ran twice is the same run, read back
            bar.advance(done)
    missing = [r["key"] for r in rows if r["index"] not in found]
    if missing:
        raise RuntimeError(f"Ray returned no result for {len(missing)} rows: {missing[:5]}")
    return [found[i] for i in range(len(rows))]


def _rows(
    inputs: list[Any], batch_id: str, keys: Sequence[str] | Callable[[Any], str] | None
) -> list[dict[str, Any]]:
    if keys is None:
        names = [str(i) for i in range(len(inputs))]
    elif callable(keys):
        names = [str(keys(value)) for value in inputs]
    else:
        names = [str(k) for k in keys]
        if len(names) != len(inputs):
            raise UsageError(f"{len(names)} keys for {len(inputs)} inputs: give one per input")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise UsageError(f"the key {name!r} is given to two inputs: keys must be unique")
        seen.add(name)
    rows = []
    for index, (value, key) in enumerate(zip(inputs, names, strict=True)):
        ctx = value if isinstance(value, AgentContext) else AgentContext(value)
        rows.append(
            {
                "index": index,
                "key": key,
                "run_id": run_id_for(batch_id, key),
                "input": full_context(ctx),
            }
        )
    return rows


def run_id_for(batch_id: str, key: str) -> str:
    """The run id of the row `key` of batch `batch_id`: the same every time the batch runs."""
    digest = hashlib.sha256(f"{batch_id}\0{key}".encode()).hexdigest()[:24]
    return f"{batch_id}-{digest}"


def _batch_row(row: dict[str, Any]) -> BatchRow:
    output = row["output"]
    return BatchRow(
        index=row["index"],
        key=row["key"],
        run_id=row["run_id"],
        status=row["status"],
        origin=row["origin"],
        output=None if output is None else orjson.loads(output),
        error_type=row["error_type"],
        error=row["error"],
        usage=Usage(
            input_tokens=row["input_tokens"],
            output_tokens=row["output_tokens"],
            requests=row["requests"],
        ),
        steps=row["steps"],
        seconds=row["seconds"],
    )
