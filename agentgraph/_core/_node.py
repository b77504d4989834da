"""`Node[In, Out]`: a frozen step of a graph, and the `@node` decorator."""

from __future__ import annotations

import abc
import inspect
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NoReturn, Protocol, TypeVar, overload

import attrs

from ._context import AgentContext
from ._errors import EdgeOutsideBuilder, UsageError

if TYPE_CHECKING:
    from ._failure import Failure
    from ._retry import RetryPolicy
    from ._runner import Runtime

__all__ = ("FunctionNode", "Node", "Router", "node")

In = TypeVar("In", contravariant=True)
Out = TypeVar("Out", covariant=True)
A = TypeVar("A")
B = TypeVar("B")
X = TypeVar("X")

Router = Callable[[AgentContext[A]], "Node[A, Any] | Awaitable[Node[A, Any] | None] | None"]
"""A dynamic edge: given the node's output context, the next node, or None to pass."""


class _EdgeSink(Protocol):
    def add_edge(
        self,
        source: Node[Any, Any],
        target: Node[Any, Any] | None,
        router: Callable[..., Any] | None,
        targets: Sequence[Node[Any, Any]] | None,
    ) -> None: ...

    def add_error(
        self,
        source: Node[Any, Any],
        handler: Node[Any, Any],
        when: Callable[[Failure, BaseException], bool] | None,
    ) -> None: ...

    def add_copy(self, original: Node[Any, Any], copy: Node[Any, Any], how: str) -> None: ...


# The builder whose `with` block is open in this context (contextvars keep
# concurrent tasks and threads apart).
ACTIVE_BUILDER: ContextVar[_EdgeSink | None] = ContextVar("agentgraph_builder", default=None)


@attrs.frozen(eq=False, slots=True)
class Node(Generic[In, Out], abc.ABC):
    """A step of a graph: one coroutine from `AgentContext[In]` to `AgentContext[Out]`.

    Nodes are frozen and compared by identity: two nodes with the same name are
    different nodes, and one node object may sit in several graphs. Subclass
    with `@attrs.frozen(eq=False)` and implement `run`, or decorate a function
    with `@node`.
    """

    composite: ClassVar[bool] = False
    """True for graphs and combinators: they retry only under a policy of their own,
    since their children already retried and nested defaults would multiply attempts."""

    name: str = attrs.field(
        kw_only=True, default=attrs.Factory(lambda self: _no_name(self), takes_self=True)
    )
    retry: RetryPolicy | None = attrs.field(default=None, kw_only=True)
    timeout: float | None = attrs.field(default=None, kw_only=True)
    retry_safe: bool = attrs.field(default=True, kw_only=True)

    @abc.abstractmethod
    async def run(self, ctx: AgentContext[In], rt: Runtime) -> AgentContext[Out]:
        """Do the node's work. `rt` is the run this step belongs to."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _check_run(cls)

    def data_types(self) -> tuple[type[Any], ...]:
        """Classes this node puts into contexts, which a resumed run may decode.

        `resume` and `replay` allow the classes every node of the graph names
        here (and the classes their fields hold); override it in a node that
        stores a class of its own.
        """
        return ()

    # -- copy-on-write settings -------------------------------------------------
    def with_retry(self, policy: RetryPolicy | None = None, /, **options: Any) -> Node[In, Out]:
        """Return a copy retried under `policy` (or a `RetryPolicy(**options)`).

        The copy is a different node: set options before wiring edges.
        """
        from ._retry import RetryPolicy

        copy = attrs.evolve(self, retry=policy if policy is not None else RetryPolicy(**options))
        return self._copied(copy, "with_retry")

    def with_timeout(self, seconds: float | None) -> Node[In, Out]:
        """Return a copy whose every attempt is limited to `seconds`."""
        return self._copied(attrs.evolve(self, timeout=seconds), "with_timeout")

    def with_name(self, name: str) -> Node[In, Out]:
        """Return a copy named `name`."""
        return attrs.evolve(self, name=name)

    def unsafe_to_retry(self) -> Node[In, Out]:
        """Return a copy that is never retried (for steps with side effects)."""
        return self._copied(attrs.evolve(self, retry_safe=False), "unsafe_to_retry")

    def _copied(self, copy: Node[In, Out], how: str) -> Node[In, Out]:
        # Inside a builder block, the builder keeps the copy so that `build()` can
        # say when the copy, a new node, was never wired or the original was.
        builder = ACTIVE_BUILDER.get()
        if builder is not None:
            builder.add_copy(self, copy, how)
        return copy

    # -- wiring -------------------------------------------------------------------
    @overload
    def edge_to(self: Node[Any, A], target: Node[A, X], /) -> Node[A, X]: ...
    @overload
    def edge_to(
        self: Node[Any, A],
        router: Callable[[AgentContext[A]], Node[A, Any] | None],
        /,
        *,
        targets: Sequence[Node[A, Any]] | None = None,
    ) -> None: ...
    @overload
    def edge_to(
        self: Node[Any, A],
        router: Callable[[AgentContext[A]], Awaitable[Node[A, Any] | None]],
        /,
        *,
        targets: Sequence[Node[A, Any]] | None = None,
    ) -> None: ...
    def edge_to(
        self,
        target: Node[Any, Any] | Callable[..., Any],
        /,
        *,
        targets: Sequence[Node[Any, Any]] | None = None,
    ) -> Any:
        """Add a transition from this node, tried in the order transitions are added.

        A static edge names the next node and returns it, so chains read left to
        right. A dynamic edge is a router `ctx -> Node | None` (sync or async);
        `targets` declares the nodes it may return, for validation and drawing.
        """
        builder = ACTIVE_BUILDER.get()
        if builder is None:
            raise EdgeOutsideBuilder(self.name)
        if isinstance(target, Node):
            if targets is not None:
                raise TypeError("targets= is for routers; a static edge has one target")
            builder.add_edge(self, target, None, None)
            return target
        if not callable(target):
            raise UsageError(f"edge_to takes a Node or a router, not {type(target).__name__}")
        _check_router(target)
        builder.add_edge(self, None, target, None if targets is None else tuple(targets))
        return _AfterRouter(self.name, target)

    def on_error(
        self,
        handler: Node[Failure, X],
        /,
        *,
        when: Callable[[Failure, BaseException], bool] | None = None,
    ) -> Node[Failure, X]:
        """Route this node's failures to `handler` instead of ending the run; returns `handler`.

        The transition fires when a step of this node failed for good (its
        retries exhausted) and `when(failure, error)` agrees (always, when not
        given); `handler`'s input is then the `Failure` record, the rest of the
        context being the failed step's input. Cancellation, timeouts of the
        run, step limits and interrupts are never routed. Several error
        transitions are tried in the order added.

        ```python
        llm.on_error(shorten, when=lambda failure, error: failure.error == "BadRequestError")
        shorten.edge_to(llm)
        ```
        """
        builder = ACTIVE_BUILDER.get()
        if builder is None:
            raise EdgeOutsideBuilder(self.name)
        if not isinstance(handler, Node):
            raise TypeError(f"on_error takes a Node, not {type(handler).__name__}")
        builder.add_error(self, handler, when)
        return handler

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def _check_router(router: Callable[..., Any]) -> None:
    """Refuse a step function passed where a router goes: it would be called to route."""
    try:
        params = [
            p
            for p in inspect.signature(router).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
    except (TypeError, ValueError):  # no signature to read (a builtin): trust it
        return
    name = getattr(router, "__name__", "the function")
    if len(params) == 2:
        raise UsageError(
            f"edge_to got {name}, a function of (ctx, runtime): that is a step, not a router. "
            f"Decorate it with @node to make it a node"
        )
    if _returns_context(router):
        raise UsageError(
            f"edge_to got {name}, a plain function that returns an AgentContext: that is a "
            "step, not a router (a router returns the next node). Decorate it with @node"
        )


def _returns_context(fn: Callable[..., Any]) -> bool:
    """True when `fn` is annotated to return an `AgentContext` (or an awaitable of one)."""
    try:
        annotation = inspect.signature(fn).return_annotation
    except (TypeError, ValueError):
        return False
    if isinstance(annotation, str):  # postponed annotations: read the text
        text = annotation.replace(" ", "")
        for wrapper in ("Awaitable[", "Coroutine[Any,Any,"):
            text = text.removeprefix(wrapper)
        return text.startswith(("AgentContext", "agentgraph.AgentContext"))
    origin = getattr(annotation, "__origin__", annotation)
    return isinstance(origin, type) and issubclass(origin, AgentContext)


class _AfterRouter:
    """What `edge_to(router)` returns: there is no node after a router to chain from."""

    __slots__ = ("_router", "_source")

    def __init__(self, source: str, router: Callable[..., Any]) -> None:
        self._source = source
        self._router = router

    def edge_to(self, *args: Any, **kwargs: Any) -> NoReturn:
        name = getattr(self._router, "__name__", "the router")
        raise UsageError(
            f"{self._source}.edge_to({name}) took {name} as a router (a function of ctx "
            "returning the next node), so there is no node to chain the next edge from. "
            f"If {name} is a step, decorate it with @node; if it is a router, start the next "
            "edge from one of its targets"
        )

    def __repr__(self) -> str:
        return f"<router edge from {self._source!r}>"


def _no_name(node: Node[Any, Any]) -> str:
    cls = type(node).__name__
    raise UsageError(
        f"{cls}(...) needs a name: pass name=, e.g. {cls}(..., name={cls.lower()!r}); "
        "the name is the node's place in traces and checkpoints"
    )


def _check_run(cls: type[Any]) -> None:
    """Refuse, as the class is made, a `run` that cannot take `(ctx, rt)`."""
    run = cls.__dict__.get("run")
    if run is None or getattr(run, "__isabstractmethod__", False):
        return
    try:
        params = list(inspect.signature(run).parameters.values())
    except (TypeError, ValueError):
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in params) or len(positional) >= 3:
        return
    raise UsageError(
        f"{cls.__name__}.run must take (self, ctx, rt), not {len(positional)} positional "
        "parameters: write `async def run(self, ctx, rt)`; rt is the run's Runtime (leave "
        "it unused if the node does not need it)"
    )


@attrs.frozen(eq=False, slots=True, repr=False)
class FunctionNode(Node[In, Out]):
    """A node made from a function by `@node`."""

    fn: Callable[..., Any]
    is_async: bool = attrs.field(kw_only=True)
    wants_runtime: bool = attrs.field(kw_only=True)

    async def run(self, ctx: AgentContext[In], rt: Runtime) -> AgentContext[Out]:
        result = self.fn(ctx, rt) if self.wants_runtime else self.fn(ctx)
        if self.is_async:
            result = await result
        if not isinstance(result, AgentContext):
            raise self.not_a_context(result)
        return result

    def not_a_context(self, result: object) -> TypeError:
        """The error for a function that returned something other than a context."""
        return TypeError(
            f"node {self.name!r} returned {type(result).__name__}; a node returns an "
            "AgentContext (use ctx.with_input(value) to pass a value on)"
        )


def _make(fn: Callable[..., Any], name: str | None) -> FunctionNode[Any, Any]:
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(params) not in (1, 2):
        raise TypeError(
            f"@node function {fn.__qualname__} must take (ctx) or (ctx, runtime), "
            f"not {len(params)} positional parameters"
        )
    return FunctionNode(
        fn,
        name=name or fn.__name__,
        is_async=inspect.iscoroutinefunction(fn),
        wants_runtime=len(params) == 2,
    )


A_in = TypeVar("A_in")
B_out = TypeVar("B_out")


class _Decorator(Protocol):
    @overload
    def __call__(
        self, fn: Callable[[AgentContext[A_in]], Awaitable[AgentContext[B_out]]], /
    ) -> Node[A_in, B_out]: ...
    @overload
    def __call__(
        self, fn: Callable[[AgentContext[A_in], Runtime], Awaitable[AgentContext[B_out]]], /
    ) -> Node[A_in, B_out]: ...
    @overload
    def __call__(
        self, fn: Callable[[AgentContext[A_in]], AgentContext[B_out]], /
    ) -> Node[A_in, B_out]: ...
    @overload
    def __call__(
        self, fn: Callable[[AgentContext[A_in], Runtime], AgentContext[B_out]], /
    ) -> Node[A_in, B_out]: ...


@overload
def node(
    fn: Callable[[AgentContext[A_in]], Awaitable[AgentContext[B_out]]], /
) -> Node[A_in, B_out]: ...
@overload
def node(
    fn: Callable[[AgentContext[A_in], Runtime], Awaitable[AgentContext[B_out]]], /
) -> Node[A_in, B_out]: ...
@overload
def node(fn: Callable[[AgentContext[A_in]], AgentContext[B_out]], /) -> Node[A_in, B_out]: ...
@overload
def node(
    fn: Callable[[AgentContext[A_in], Runtime], AgentContext[B_out]], /
) -> Node[A_in, B_out]: ...
@overload
def node(*, name: str) -> _Decorator: ...
def node(fn: Callable[..., Any] | None = None, /, *, name: str | None = None) -> Any:
    """Make a node from a function of `(ctx)` or `(ctx, runtime)`, sync or async.

    The function returns the next `AgentContext`. Sync functions run inline on
    the event loop, so keep them quick (use `anyio.to_thread` for blocking work).

    ```python
    @node
    async def double(ctx: AgentContext[int]) -> AgentContext[int]:
        return ctx.with_input(ctx.input * 2)
    ```
    """
    if fn is None:
        return lambda f: _make(f, name)
    return _make(fn, name)
