"""`run_batch`'s arguments, checked before Ray starts: each bad one is a `UsageError` naming it.

What is sent to the actors (the store factory, the runner, the actors'
resources) is pickled here as Ray will pickle it, so a factory that closes over
a lock or an open connection is refused by name rather than surfacing as Ray's
serialization report from inside a worker pool.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._core._errors import UsageError
from .._core._runner import GraphRunner
from ._limits import RateLimit

__all__ = ("check_arguments",)


def check_arguments(
    dumps: Callable[[Any], bytes],
    *,
    graph: Any,
    store: Any,
    batch_id: Any,
    keys: Any,
    runner: Any,
    concurrency: Any,
    actors: Any,
    rate_limits: Any,
    lease_wait: Any,
    address: Any,
    progress: Any,
    ray_remote_args: Any,
) -> None:
    """Raise `UsageError` for the first bad argument; `dumps` is the pickler Ray sends with."""
    if not isinstance(graph, str):
        raise UsageError(
            f"graph is a reference 'package.module:attribute' that every worker imports, "
            f"not {type(graph).__name__}"
        )
    _count("concurrency", concurrency)
    _count("actors", actors)
    _optional_text("batch_id", batch_id)
    _optional_text("address", address)
    if not isinstance(progress, bool):
        raise UsageError(f"progress is True or False, not {type(progress).__name__}")
    if isinstance(lease_wait, bool) or not isinstance(lease_wait, int | float):
        raise UsageError(f"lease_wait is a number of seconds, not {type(lease_wait).__name__}")
    if not math.isfinite(lease_wait) or lease_wait < 0:
        raise UsageError(f"lease_wait is a number of seconds, 0 or more, not {lease_wait}")
    if not (keys is None or callable(keys) or _sequence(keys)):
        raise UsageError(
            f"keys is a sequence of one key per input, or a function of the input, "
            f"not {type(keys).__name__}"
        )
    if runner is not None and not isinstance(runner, GraphRunner):
        raise UsageError(f"runner is a GraphRunner, not {type(runner).__name__}")
    _rate_limits(rate_limits)
    if ray_remote_args is not None and (
        not isinstance(ray_remote_args, Mapping)
        or not all(isinstance(name, str) for name in ray_remote_args)
    ):
        raise UsageError(
            "ray_remote_args is a mapping of Ray's actor options by name (num_cpus, resources, "
            f"...), not {type(ray_remote_args).__name__}"
        )
    _store(store, batch_id)
    for name, value in (("store", store), ("runner", runner), ("ray_remote_args", ray_remote_args)):
        _picklable(dumps, name, value)


def _sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{name} is a whole number, at least 1, not {value!r}")


def _optional_text(name: str, value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise UsageError(f"{name} is a non-empty string or None, not {value!r}")


def _rate_limits(rate_limits: Any) -> None:
    if rate_limits is None:
        return
    if not isinstance(rate_limits, Mapping):
        raise UsageError(
            "rate_limits is a mapping from a model or provider name to its RateLimit, "
            f"not {type(rate_limits).__name__}"
        )
    for name, limit in rate_limits.items():
        if not isinstance(name, str) or not isinstance(limit, RateLimit):
            raise UsageError(
                f"rate_limits maps a model or provider name to a RateLimit, not "
                f"{type(name).__name__} to {type(limit).__name__}"
            )


def _store(store: Any, batch_id: Any) -> None:
    if store is None:
        return
    if not callable(store):
        raise UsageError(
            f"store is a zero-argument callable that opens the store in each actor (such as "
            f"functools.partial(SQLiteStore, path)), not {type(store).__name__}"
        )
    if batch_id is None:
        raise UsageError(
            "a batch with a store needs a batch_id: the batch id and each row's key fix the "
            "row's run id, which is how a second run of the batch finds the rows done before"
        )


def _picklable(dumps: Callable[[Any], bytes], name: str, value: Any) -> None:
    """Pickle `value` as Ray will, to send it to the actors."""
    if value is None:
        return
    try:
        dumps(value)
    except Exception as error:
        raise UsageError(
            f"{name} cannot be sent to Ray's workers: pickling it fails with "
            f"{type(error).__name__}: {error} (a function defined at module level, or "
            "functools.partial of one over plain values, can be sent)"
        ) from error
