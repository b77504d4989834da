"""What a worker was built with: graphs, models, tools, embedders and functions, by name.

A run's workflow input names its graph, and activity arguments name a model, a
tool, an embedder, a function or a guard: each name is looked up here, among the
objects the worker was given, and nothing is imported because a payload named it.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs
from temporalio.common import RetryPolicy as TemporalRetry

from .._core._errors import UsageError
from .._core._graph import Graph
from .._core._runner import GraphRunner, as_graph
from ..guards._guard import Guard, Guards

if TYPE_CHECKING:
    from ..llm._embed import Embedder
    from ..llm._model import ChatModel
    from ..tools._tool import Tool

__all__ = ("ActivityPolicy", "Registry", "nodes_of", "registry_for")

DEFAULT_HISTORY_EVENTS = 10_000
"""History events after which a run continues as new (Temporal's hard limit is 51,200)."""


@attrs.frozen
class ActivityPolicy:
    """How the workflow runs each effect as an activity.

    Temporal owns the retries of an effect: an activity is tried up to
    `attempts` times (a tool that is not retry-safe exactly once), waiting
    `initial` seconds and then twice as long each time. A provider client
    retries one HTTP exchange inside an attempt (its `ProviderRetry`, bounded
    in count and time); an error it gives up on reaches Temporal as
    non-retryable, so the two layers never multiply their attempts. An
    attempt that outlives `timeout`, or whose worker stops sending heartbeats
    for `heartbeat` seconds (a lost worker), is tried again on another worker.

    Args:
        timeout: seconds one attempt may take (Temporal's start-to-close timeout).
        heartbeat: seconds without a heartbeat after which an attempt counts as
            lost; the activity beats three times per period while it runs.
        attempts: tries per effect, the first included.
        initial: seconds before the first retry.
        max_interval: the longest wait between two tries.
    """

    timeout: float = attrs.field(default=600.0, validator=attrs.validators.gt(0))
    heartbeat: float | None = attrs.field(default=30.0)
    attempts: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    initial: float = attrs.field(default=1.0, validator=attrs.validators.gt(0))
    max_interval: float = attrs.field(default=60.0, validator=attrs.validators.gt(0))

    def options(self, *, retry_safe: bool = True) -> dict[str, Any]:
        """Keyword arguments for `workflow.execute_activity`."""
        retry = TemporalRetry(
            initial_interval=timedelta(seconds=self.initial),
            maximum_interval=timedelta(seconds=self.max_interval),
            maximum_attempts=self.attempts if retry_safe else 1,
        )
        return {
            "start_to_close_timeout": timedelta(seconds=self.timeout),
            "heartbeat_timeout": None
            if self.heartbeat is None
            else timedelta(seconds=self.heartbeat),
            "retry_policy": retry,
        }


def _named(
    kind: str, given: Mapping[str, Any] | Sequence[Any], name: Callable[[Any], str]
) -> dict[str, Any]:
    items = list(given.items()) if isinstance(given, Mapping) else [(name(x), x) for x in given]
    found: dict[str, Any] = {}
    for key, value in items:
        if key in found and found[key] is not value:
            raise UsageError(f"two {kind}s of the worker are both named {key!r}: name them apart")
        found[key] = value
    return found


def _function_name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


@attrs.frozen
class Registry:
    """One worker's graphs and effects, each under the name payloads use."""

    graphs: Mapping[str, Graph[Any, Any]]
    models: Mapping[str, ChatModel]
    tools: Mapping[str, Tool[..., Any]]
    embedders: Mapping[str, Embedder]
    functions: Mapping[str, Callable[..., Any]]
    guards: Mapping[str, Guard]
    runner: GraphRunner
    policies: Mapping[str, ActivityPolicy]
    history_events: int

    def policy(self, kind: str) -> ActivityPolicy:
        """The policy of one kind of effect: "model", "tool", "embed", "once" or "guard"."""
        return self.policies.get(kind) or self.policies["default"]

    @classmethod
    def build(
        cls,
        *,
        graphs: Sequence[Any],
        models: Mapping[str, ChatModel] | Sequence[ChatModel],
        tools: Sequence[Tool[..., Any]],
        embedders: Mapping[str, Embedder] | Sequence[Embedder],
        functions: Sequence[Callable[..., Any]],
        guards: Sequence[Guard] = (),
        runner: GraphRunner,
        policy: ActivityPolicy | Mapping[str, ActivityPolicy] | None,
        history_events: int,
    ) -> Registry:
        if not graphs:
            raise UsageError("a worker needs at least one graph: worker(client, graphs=[...])")
        if history_events < 10:
            raise ValueError(f"history_events must be at least 10, not {history_events}")
        counter = iter(range(len(embedders)))
        built = [as_graph(g) for g in graphs]
        return cls(
            graphs=_named("graph", built, lambda g: g.name),
            models=_named("model", models, lambda m: m.name),
            tools=_named("tool", tools, lambda t: t.name),
            embedders=_named(
                "embedder", embedders, lambda e: f"{type(e).__name__}#{next(counter)}"
            ),
            functions=_named("function", functions, _function_name),
            guards=_named("guard", _asked_elsewhere(runner, built, guards), lambda g: g.name),
            runner=runner,
            policies=_policies(policy),
            history_events=history_events,
        )

    def graph(self, name: str) -> Graph[Any, Any]:
        try:
            return self.graphs[name]
        except KeyError:
            raise UsageError(
                f"no graph named {name!r} on this worker (it runs {', '.join(sorted(self.graphs))})"
            ) from None

    def name_of(self, kind: str, value: Any) -> str:
        """The name `value` is registered under, by identity (a bound method by equality)."""
        table: Mapping[str, Any] = getattr(self, kind)
        for name, registered in table.items():
            if registered is value or (inspect.ismethod(value) and registered == value):
                return name
        shown = getattr(value, "name", None) or _function_name(value)
        raise UsageError(
            f"{kind[:-1]} {shown!r} is not registered with the worker: pass it to "
            f"worker(..., {kind}=[...]) so an activity can find it on any worker"
        )

    def lookup(self, kind: str, name: str) -> Any:
        table: Mapping[str, Any] = getattr(self, kind)
        try:
            return table[name]
        except KeyError:
            raise UsageError(
                f"no {kind[:-1]} named {name!r} is registered with this worker"
            ) from None


EFFECTS = ("model", "tool", "embed", "once", "guard")


def _asked_elsewhere(
    runner: GraphRunner, graphs: Sequence[Graph[Any, Any]], given: Sequence[Guard]
) -> list[Guard]:
    """The guards a run may ask in an activity (those that are not deterministic): the
    runner's, those of `check_output` nodes in the graphs, and the ones `given`."""
    found: list[Guard] = list(given)
    rounds = guards_of(runner.guards)
    if rounds is not None:
        found += [*rounds.input, *rounds.output, *rounds.tools, *rounds.results]
    for node in nodes_of(graphs):
        found += [g for g in getattr(node, "guards", ()) if isinstance(g, Guard)]
    return [g for g in found if not g.deterministic]


def guards_of(guards: Any) -> Guards | None:
    """A runner's guards (`GraphRunner.guards`) as the `Guards` a run on Temporal splits
    between the workflow and its activities."""
    if guards is None or isinstance(guards, Guards):
        return guards
    raise UsageError(
        f"guards on Temporal are an agentgraph.guards.Guards, not {type(guards).__name__}"
    )


def nodes_of(graphs: Iterable[Any]) -> Iterator[Any]:
    """`graphs` and every node in them (a graph's `members`, and theirs), each once."""
    todo: list[Any] = list(graphs)
    seen: set[int] = set()
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        todo.extend(getattr(node, "members", ()))


def _policies(
    policy: ActivityPolicy | Mapping[str, ActivityPolicy] | None,
) -> dict[str, ActivityPolicy]:
    """One policy for every effect, or one per kind of effect over the default."""
    if policy is None or isinstance(policy, ActivityPolicy):
        return {"default": policy or ActivityPolicy()}
    unknown = sorted(set(policy) - set(EFFECTS))
    if unknown:
        raise ValueError(
            f"policies are by kind of effect ({', '.join(EFFECTS)}), not {', '.join(unknown)}"
        )
    for kind, value in policy.items():
        if not isinstance(value, ActivityPolicy):
            raise TypeError(f"the {kind} policy is an ActivityPolicy, not {type(value).__name__}")
    return {"default": ActivityPolicy(), **policy}


_registries: dict[tuple[str, str | None], Registry] = {}
_lock = threading.Lock()


def register(task_queue: str, registry: Registry, *, version: str | None = None) -> None:
    """Make `registry` the one the workflows and activities of `task_queue` use here.

    `version` is the deployment version (`deployment.build_id`) of a worker
    whose runs are pinned to it, None for any other: pinned workers of two
    versions of a graph on one task queue keep their own graphs, while a later
    worker for the same queue and version replaces the earlier one's.
    """
    with _lock:
        _registries[task_queue, version] = registry


REPLAY = "replay-"
"""The task queue Temporal's `Replayer` runs workflows on (followed by its build id)."""


def registry_for(task_queue: str, version: str | None = None) -> Registry:
    """The registry of the worker that runs a workflow task of `task_queue` for `version`.

    A pinned workflow's every task is made by workers of its version, whose
    registry is found by queue and version; an unversioned worker's is found
    by queue alone, whatever build id its tasks report.
    """
    with _lock:
        registry = _registries.get((task_queue, version)) or _registries.get((task_queue, None))
        if registry is None and task_queue.startswith(REPLAY):
            registry = _registries.get((REPLAY, None))
    if registry is None:
        shown = task_queue if version is None else f"{task_queue} (version {version})"
        raise UsageError(f"no agentgraph worker for task queue {shown!r} in this process")
    return registry
