"""`GraphBuilder` (the only mutable object) and the immutable `Graph` it builds."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import Token
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import attrs

from ._context import AgentContext
from ._errors import DeadEnd, GraphDefinitionError, NodeFailed, RoutingError
from ._node import ACTIVE_BUILDER, FunctionNode, Node

if TYPE_CHECKING:
    from ._failure import ErrorTransition, Failure
    from ._retry import RetryPolicy
    from ._runner import Runtime
    from ._usage import UsageLimits
    from ._versions import Migration

__all__ = ("Graph", "GraphBuilder", "Transition")

In = TypeVar("In")
Out = TypeVar("Out")
T = TypeVar("T")


@attrs.frozen(eq=False, slots=True, repr=False)
class _Sentinel(Node[T, T]):
    """`start` and `finish`: markers, never executed and never counted as steps."""

    async def run(self, ctx: AgentContext[T], rt: Runtime) -> AgentContext[T]:
        return ctx

    def __repr__(self) -> str:
        return f"<{self.name}>"


@attrs.frozen(eq=False)
class Transition:
    """One outgoing edge: a fixed `target`, or a `router` with optional declared `targets`."""

    target: Node[Any, Any] | None
    router: Callable[[AgentContext[Any]], Any] | None = None
    targets: tuple[Node[Any, Any], ...] | None = None
    is_async: bool = False

    @property
    def label(self) -> str:
        if self.router is None:
            return ""
        return getattr(self.router, "__name__", "router").replace("<lambda>", "router")


class GraphBuilder(Generic[In, Out]):
    """Collects nodes and transitions inside a `with` block, then `build()`s a `Graph`.

    ```python
    with GraphBuilder[int, int]("double") as g:
        g.start.edge_to(double).edge_to(g.finish)
    graph = g.build()
    ```

    `retry` is the policy for the graph's nodes that set none of their own
    (and for the nodes of subgraphs inside it that set none either), in place
    of the runner's. `types` are classes the graph's steps put into contexts
    beyond those its nodes declare (`Node.data_types`), so that a resumed or
    replayed run may decode them. `usage_limits` bound what the model calls
    inside the graph may spend, each time it runs.

    `version` orders the versions of a graph whose runs outlive a deploy (see
    `GraphVersions`); `patches` are names a node may branch on with
    `rt.patched(name)`; `migrations` upgrade a stored context to each version
    (keyed by the version they upgrade to), and `renamed` maps the names nodes
    had in earlier versions to their names now, so a run resumed on this
    version from an older one finds its place. Renames chain: keep every one
    since the first version (`{"review": "approve", "approve": "check"}`), so a
    run of any older version finds its node.
    """

    def __init__(
        self,
        name: str,
        *,
        retry: RetryPolicy | None = None,
        types: Sequence[type[Any]] = (),
        usage_limits: UsageLimits | None = None,
        version: int | None = None,
        patches: Iterable[str] = (),
        migrations: Mapping[int, Migration] | None = None,
        renamed: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.patches = frozenset(patches)
        self.migrations = dict(migrations or {})
        self.renamed = dict(renamed or {})
        if version is not None or self.migrations or self.renamed:
            from ._versions import check_versioning

            check_versioning(name, version, self.migrations, self.renamed)
        self.retry = retry
        self.types = tuple(types)
        self.usage_limits = usage_limits
        self.start: Node[In, In] = _Sentinel(name="start")
        self.finish: Node[Out, Out] = _Sentinel(name="finish")
        self._edges: dict[Node[Any, Any], list[Transition]] = {}
        self._errors: dict[Node[Any, Any], list[ErrorTransition]] = {}
        self._order: dict[Node[Any, Any], None] = {}
        self._copies: list[tuple[Node[Any, Any], Node[Any, Any], str]] = []
        self._token: Token[Any] | None = None

    def __enter__(self) -> GraphBuilder[In, Out]:
        self._token = ACTIVE_BUILDER.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            ACTIVE_BUILDER.reset(self._token)
            self._token = None

    def add_edge(
        self,
        source: Node[Any, Any],
        target: Node[Any, Any] | None,
        router: Callable[..., Any] | None,
        targets: Sequence[Node[Any, Any]] | None,
    ) -> None:
        """Record a transition; `Node.edge_to` calls this."""
        if source is self.finish:
            raise GraphDefinitionError(self.name, "finish cannot have outgoing edges")
        if target is self.start or (targets is not None and self.start in targets):
            raise GraphDefinitionError(self.name, "no edge may lead back into start")
        for member in (source, target, *(targets or ())):
            if member is not None:
                self._order.setdefault(member)
        is_async = router is not None and (
            inspect.iscoroutinefunction(router)
            or inspect.iscoroutinefunction(getattr(router, "__call__", None))  # noqa: B004
        )
        transition = Transition(
            target, router, None if targets is None else tuple(targets), is_async
        )
        self._edges.setdefault(source, []).append(transition)

    def add_error(
        self,
        source: Node[Any, Any],
        handler: Node[Any, Any],
        when: Callable[[Failure, BaseException], bool] | None,
    ) -> None:
        """Record an error transition; `Node.on_error` calls this."""
        if source is self.start or source is self.finish:
            raise GraphDefinitionError(
                self.name, f"{source.name} never fails, so it has no on_error"
            )
        if handler is self.start:
            raise GraphDefinitionError(self.name, "no edge may lead back into start")
        self._order.setdefault(source)
        self._order.setdefault(handler)
        # Loaded by a graph's first error transition, so that importing the package stays cheap.
        from ._failure import ErrorTransition

        transition = ErrorTransition(handler) if when is None else ErrorTransition(handler, when)
        self._errors.setdefault(source, []).append(transition)

    def add_copy(self, original: Node[Any, Any], copy: Node[Any, Any], how: str) -> None:
        """Note a settings copy made in the block (`with_retry`, ...), for `build()`'s checks."""
        self._copies.append((original, copy, how))

    def build(self) -> Graph[In, Out]:
        """Validate and return an immutable `Graph`; raise `GraphDefinitionError` if unsound."""
        edges = {node: tuple(ts) for node, ts in self._edges.items()}
        errors = {node: tuple(ts) for node, ts in self._errors.items()}
        self._order.setdefault(self.start)
        self._order.setdefault(self.finish)
        # Loaded on first build, so that importing the package stays cheap.
        from ._checks import Copy, validate

        copies = [Copy(*copy) for copy in self._copies]
        validate(self.name, self.start, self.finish, edges, tuple(self._order), errors, copies)
        nodes = tuple(n for n in self._order if n is not self.start and n is not self.finish)
        # `GraphBuilder[In, Out](...)` leaves its alias on the instance: the graph's types.
        io = typing.get_args(getattr(self, "__orig_class__", None)) or (Any, Any)
        return Graph(
            name=self.name,
            # A graph holding a step that must not repeat must not be rerun as a whole.
            retry_safe=all(n.retry_safe for n in nodes),
            start=self.start,
            finish=self.finish,
            nodes=nodes,
            transitions=MappingProxyType(edges),
            members=frozenset(self._order),
            errors=MappingProxyType(errors),
            node_retry=self.retry,
            types=self.types,
            usage_limits=self.usage_limits,
            input_type=io[0],
            output_type=io[1],
            version=self.version,
            patches=self.patches,
            migrations=MappingProxyType(dict(sorted(self.migrations.items()))),
            renamed=MappingProxyType(dict(self.renamed)),
        )


_SHOWN = 200
"""Characters of a wrong value a routing error shows."""


def _not_a_node(transition: Transition, chosen: object) -> str:
    """What a router returned instead of a node, and the likely fix."""
    name = transition.label or "the router"
    if isinstance(chosen, AgentContext):
        return (
            f"{name} returned an AgentContext, not a node: if {name} is a step, decorate it "
            "with @node (edge_to took the plain function for a router)"
        )
    try:
        shown = repr(chosen)
    except Exception as exc:  # a repr that fails still makes a clear error
        shown = f"<{type(chosen).__name__} whose repr raised {type(exc).__name__}>"
    if len(shown) > _SHOWN:
        shown = shown[: _SHOWN - 1] + "…"
    return f"{name} returned {shown} ({type(chosen).__name__}), not a node or None"


@attrs.frozen(eq=False, slots=True, repr=False)
class Graph(Node[In, Out]):
    """An immutable graph. It is a `Node[In, Out]`, so it nests inside other graphs.

    Running it as a node runs its nodes in the same run: same step counter,
    step cap, callbacks and cancellation, one level deeper in the node path.
    """

    composite: ClassVar[bool] = True

    start: Node[In, In]
    finish: Node[Out, Out]
    nodes: tuple[Node[Any, Any], ...]
    transitions: Mapping[Node[Any, Any], tuple[Transition, ...]]
    members: frozenset[Node[Any, Any]]
    errors: Mapping[Node[Any, Any], tuple[ErrorTransition, ...]] = MappingProxyType({})
    """Error transitions by node (see `Node.on_error`)."""
    node_retry: RetryPolicy | None = None
    """The retry policy of nodes inside that set none (see `GraphBuilder`)."""
    types: tuple[type[Any], ...] = ()
    """Classes declared with `GraphBuilder(types=...)`."""
    usage_limits: UsageLimits | None = None
    """What the model calls inside may spend each time the graph runs (see `UsageLimits`)."""
    input_type: Any = Any
    """The `In` of `GraphBuilder[In, Out]` (`Any` when the builder was not subscripted):
    what serving a graph (as an MCP tool, say) describes its input as."""
    output_type: Any = Any
    """The `Out` of `GraphBuilder[In, Out]`, likewise."""
    agent: bool = False
    """True for a graph that is an agent (see `as_agent`): traces call its runs `invoke_agent`."""
    version: int | None = None
    """The graph's version (`GraphBuilder(version=...)`), recorded with every run it starts."""
    patches: frozenset[str] = frozenset()
    """Names `rt.patched` may ask about (`GraphBuilder(patches=...)`)."""
    migrations: Mapping[int, Migration] = MappingProxyType({})
    """Context migrations by the version they upgrade to (`GraphBuilder(migrations=...)`)."""
    renamed: Mapping[str, str] = MappingProxyType({})
    """Node names of earlier versions, mapped to their names in this one (followed on)."""

    _first: dict[Node[Any, Any], tuple[Node[Any, Any], int]] = attrs.field(init=False, repr=False)
    """The route of each node whose first transition is a plain edge (routing's fast path):
    its target, and 0 (the transition's position), as `route` would return them."""
    _direct: dict[Node[Any, Any], tuple[Callable[..., Any], tuple[str, ...]]] = attrs.field(
        init=False, repr=False
    )
    """Each `async` `@node` function the step loop may call itself (no timeout, no
    runtime wanted): the function, and its step's path when this graph is a run's root.
    Plain dicts, read by every step, never changed."""

    def __attrs_post_init__(self) -> None:
        first = {
            n: (ts[0].target, 0) for n, ts in self.transitions.items() if ts[0].target is not None
        }
        object.__setattr__(self, "_first", first)
        direct = {
            n: (n.fn, (self.name, n.name))
            for n in self.nodes
            if type(n) is FunctionNode and n.is_async and n.timeout is None and not n.wants_runtime
        }
        object.__setattr__(self, "_direct", direct)

    @property
    def fingerprint(self) -> str:
        """A digest of the graph's structure: its nodes' names, input and output types and
        edges, subgraphs included. It does not see code: a changed node body needs a new
        `version`."""
        from ._versions import fingerprint

        return fingerprint(self)

    def as_agent(self) -> Graph[In, Out]:
        """This graph marked as an agent: its runs are agent invocations in traces
        (OpenTelemetry `invoke_agent` spans with `gen_ai.agent.name`), not workflows."""
        return attrs.evolve(self, agent=True)

    def data_types(self) -> tuple[type[Any], ...]:
        """The declared classes and those of every node inside, subgraphs included."""
        found = list(self.types)
        for member in self.members:
            found.extend(member.data_types())
        return tuple(dict.fromkeys(found))

    async def run(self, ctx: AgentContext[In], rt: Runtime) -> AgentContext[Out]:
        return await rt.run_graph(self, ctx)

    def route(
        self,
        node: Node[Any, Any],
        ctx: AgentContext[Any],
        step: int,
        path: tuple[str, ...],
        start: int = 0,
    ) -> tuple[Node[Any, Any], int] | _Pending:
        """The first transition out of `node` that fires and its position, or a routing error.

        Plain-function routers are called without a coroutine; one that returns
        an awaitable (an `async def` router, say) leaves a `_Pending` whose
        `settle()` gives the route. `path` is the graph's own path (errors name
        `node` below it); `start` is the position of the first transition to try.
        """
        transitions = self.transitions.get(node, ())
        for position in range(start, len(transitions)):
            t = transitions[position]
            if t.target is not None:
                return t.target, position
            assert t.router is not None
            try:
                chosen = t.router(ctx)
            except Exception as exc:
                raise _router_failed(t, exc, ctx, step, (*path, node.name)) from exc
            try:  # inline `_holds`: a router's answer is checked at every dynamic step
                held = chosen in self.members
            except Exception:  # unhashable, or a hash that raises: certainly not a node
                held = False
            if held and (t.targets is None or chosen in t.targets):
                return chosen, position  # the common case: a node of this graph, as declared
            if t.is_async or (not held and inspect.isawaitable(chosen)):
                return _Pending(self, node, ctx, step, path, position, chosen)
            if chosen is not None:
                return self._accepted(t, chosen, ctx, step, (*path, node.name)), position
        raise DeadEnd(context=ctx, step=step, path=(*path, node.name))

    def _accepted(
        self,
        t: Transition,
        chosen: object,
        ctx: AgentContext[Any],
        step: int,
        where: tuple[str, ...],
    ) -> Node[Any, Any]:
        """`chosen` if it is a node `t` may lead to, else the `RoutingError` that says why."""
        if self._holds(chosen) and (t.targets is None or chosen in t.targets):
            return chosen  # type: ignore[return-value]  # the common case: a node of this graph, as declared
        if not isinstance(chosen, Node):
            raise RoutingError(_not_a_node(t, chosen), context=ctx, step=step, path=where)
        if t.targets is not None and not any(chosen is x for x in t.targets):
            declared = ", ".join(x.name for x in t.targets)
            raise RoutingError(
                f"router returned {chosen!r}, which is not among its declared targets ({declared})",
                context=ctx,
                step=step,
                path=where,
            )
        if chosen not in self.members:
            raise RoutingError(
                f"router returned {chosen!r}, which is not a node of graph {self.name!r}",
                context=ctx,
                step=step,
                path=where,
            )
        return chosen

    def _holds(self, chosen: object) -> bool:
        """True when `chosen` is a node of this graph (anything else, hashable or not: False)."""
        try:
            return chosen in self.members
        except Exception:  # unhashable, or a hash that raises: certainly not a node
            return False

    def error_route(
        self, node: Node[Any, Any], failed: NodeFailed
    ) -> tuple[Node[Any, Any], int, Failure] | None:
        """The error transition out of `node` that takes `failed`, its position and the record."""
        transitions = self.errors.get(node)
        if not transitions:
            return None
        from ._failure import Failure, root_error, routes_error  # loaded by add_error already

        if not routes_error(failed):
            return None
        failure = Failure.of(failed)
        cause = root_error(failed)
        for position, t in enumerate(transitions):
            if t.when(failure, cause):
                return t.target, position, failure
        return None

    def to_mermaid(self, *, direction: str = "TD") -> str:
        """Draw the graph, subgraphs included, as a Mermaid flowchart."""
        from ._mermaid import graph_to_mermaid  # loaded with the first drawing

        return graph_to_mermaid(self, direction=direction)

    def __repr__(self) -> str:
        return f"<Graph {self.name!r}: {len(self.nodes)} nodes>"


def _router_failed(
    t: Transition, exc: Exception, ctx: AgentContext[Any], step: int, where: tuple[str, ...]
) -> RoutingError:
    reason = f"{t.label or 'the router'} raised {type(exc).__name__}: {exc}"
    if len(reason) > _SHOWN:
        reason = reason[: _SHOWN - 1] + "…"
    return RoutingError(reason, context=ctx, step=step, path=where)


class _Pending:
    """A route waiting on an awaitable a router returned; `resolve` finishes it.

    A plain class, not an attrs one: never compared or shown, and an attrs class
    costs `import agentgraph` the compiling of its methods.
    """

    __slots__ = ("_chosen", "_ctx", "_graph", "_node", "_path", "_position", "_step")

    def __init__(
        self,
        graph: Graph[Any, Any],
        node: Node[Any, Any],
        ctx: AgentContext[Any],
        step: int,
        path: tuple[str, ...],
        position: int,
        chosen: Any,
    ) -> None:
        self._graph, self._node, self._ctx, self._step = graph, node, ctx, step
        self._path, self._position, self._chosen = path, position, chosen

    async def settle(self) -> tuple[Node[Any, Any], int]:
        """The route, once every awaitable on the way is in."""
        routed = await self.resolve()
        while not isinstance(routed, tuple):
            routed = await routed.resolve()
        return routed

    async def resolve(self) -> tuple[Node[Any, Any], int] | _Pending:
        """The route once the router's answer is in (or the next pending one)."""
        owner, node, ctx, step, path = self._graph, self._node, self._ctx, self._step, self._path
        t = owner.transitions[node][self._position]
        where = (*path, node.name)
        try:
            chosen = await self._chosen
        except Exception as exc:
            raise _router_failed(t, exc, ctx, step, where) from exc
        if chosen is None:  # this transition does not fire: try the ones after it
            return owner.route(node, ctx, step, path, self._position + 1)
        return owner._accepted(t, chosen, ctx, step, where), self._position
