"""`@tool`: a typed Python function the model can call."""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Generic,
    ParamSpec,
    Protocol,
    TypeVar,
    get_args,
    get_origin,
    overload,
)

import attrs

from .._core._context import AgentContext
from .._core._errors import ToolError, UnsupportedType
from .._core._json import to_data
from .._util._clip import check_max_result_chars
from ..llm._messages import ToolCall, ToolSpec, Usage
from ..structured._compile import FieldSpec, arguments_shape, shape_of
from ..structured._composites import NO_DEFAULT, ObjectShape
from ..structured._schema import TOOL_NAME, build_schema
from ._docstring import parse_docstring

if TYPE_CHECKING:
    from .._core._runtime import Runtime

__all__ = ("Tool", "ToolResult", "ToolSite", "tool")

P = ParamSpec("P")
R = TypeVar("R")


class ArgumentCheck(Protocol):
    """Validates a call's arguments: the keyword arguments to call with, or an `Invalid`.

    `@tool` compiles one from the function's signature; a tool whose schema
    comes from elsewhere (an MCP server) checks against that schema.
    """

    def check(self, value: Any, strict: bool) -> Any: ...


@attrs.frozen(eq=False)
class ToolSite:
    """Where a tool call runs, for a tool that runs steps of the run itself.

    A parameter annotated `ToolSite` is not shown to the model: it receives
    the runtime of the `tool_use` step making the call, and the call. A tool
    that runs a graph (`agentgraph.teams.agent_tool`) runs it through
    `runtime`, so its steps count, its effects are recorded and its questions
    reach the caller's run. Such a tool runs only inside a run.
    """

    runtime: Runtime
    call: ToolCall


@attrs.frozen
class ToolResult:
    """What a tool returns when its work cost model usage: the value, and that usage.

    The model reads `value` as it reads any result; the `tool_use` node adds
    `usage` to the context's total, so the tokens a tool spent are counted
    with the run's (and recorded with the result, so a resume counts them once).
    """

    value: Any
    usage: Usage | None = None


@attrs.frozen(eq=False, repr=False)
class Tool(Generic[P, R]):
    """A function the model can call, with the spec it is shown, made by `@tool`.

    Calling the tool calls the function. `execute_calls` runs it for the model:
    arguments are validated and coerced first, and every failure becomes a
    tool message the model can read.

    Attributes:
        fn: the function.
        spec: the name, description and JSON Schema of the parameters.
        timeout: seconds one call may take (None: the caller's default).
        retry_safe: False for a tool with side effects that must not be repeated.
        context_param: the parameter that receives the agent context, if any.
        site_param: the parameter that receives the call's `ToolSite`, if any.
        single: the parameter that receives an instance of its attrs class or
            dataclass, when that is the function's only argument: the class's
            fields are then the tool's parameters.
        on_invalid: turns the problems with a call's arguments into the text the
            model reads (the tool's own words); None for the standard message.
        max_result_chars: the most characters of one result the model reads
            (None: the caller's bound, `MAX_RESULT_CHARS` by default).
    """

    fn: Callable[P, R]
    spec: ToolSpec
    timeout: float | None = attrs.field(default=None, kw_only=True)
    retry_safe: bool = attrs.field(default=True, kw_only=True)
    context_param: str | None = attrs.field(default=None, kw_only=True)
    is_async: bool = attrs.field(default=False, kw_only=True)
    arguments: ArgumentCheck = attrs.field(kw_only=True)
    """The validator of the arguments (compiled with the spec)."""
    single: str | None = attrs.field(default=None, kw_only=True)
    on_invalid: Callable[[Sequence[str]], str] | None = attrs.field(default=None, kw_only=True)
    max_result_chars: int | None = attrs.field(default=None, kw_only=True)
    site_param: str | None = attrs.field(default=None, kw_only=True)

    @property
    def name(self) -> str:
        return self.spec.name

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def with_timeout(self, seconds: float | None) -> Tool[P, R]:
        """Return a copy whose calls are limited to `seconds`."""
        return attrs.evolve(self, timeout=_check_timeout(self.name, seconds))

    def with_max_result_chars(self, chars: int | None) -> Tool[P, R]:
        """Return a copy whose results the model reads up to `chars` characters of."""
        bound = check_max_result_chars(f"tool {self.name!r}", chars)
        return attrs.evolve(self, max_result_chars=bound)

    def __repr__(self) -> str:
        return f"<Tool {self.name!r}>"


@overload
def tool(fn: Callable[P, R], /) -> Tool[P, R]: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    retry_safe: bool = True,
    on_invalid: Callable[[Sequence[str]], str] | None = None,
    unpack: bool = False,
    examples: Sequence[tuple[str, Mapping[str, Any]]] = (),
    max_result_chars: int | None = None,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    retry_safe: bool = True,
    on_invalid: Callable[[Sequence[str]], str] | None = None,
    unpack: bool = False,
    examples: Sequence[tuple[str, Mapping[str, Any]]] = (),
    max_result_chars: int | None = None,
) -> Any:
    """Make a tool from a typed function, sync or async.

    The parameters' JSON Schema comes from the type hints; the description from
    the docstring (the text before its first section), and each parameter's
    description from `Annotated[T, Guide("...")]` or the docstring's `Args:`
    section. Parameters with defaults are not required. A parameter annotated
    `AgentContext[...]` is not shown to the model: it receives the context
    passed to `execute_calls(..., context=ctx)`. With `unpack=True`, the
    function's only parameter is an attrs class or a dataclass of the
    arguments: its fields are the tool's parameters and the function receives
    an instance. `on_invalid(problems)` words the answer to a call whose
    arguments do not validate. `examples` are `(request, arguments)` pairs
    shown to providers that take them (GigaChat's `few_shot_examples`).
    `max_result_chars` bounds what the model reads of one result (by default
    the tool node's bound, `MAX_RESULT_CHARS`).

    ```python
    @tool
    async def read_lines(path: str, start: int = 1, count: int = 50) -> str:
        '''Read lines from a text file.

        Args:
            path: the file, relative to the project root.
            start: the first line to read, from 1.
        '''
    ```

    Raises:
        ToolError: for a name providers refuse, `*args`/`**kwargs` or
            positional-only parameters, or a parameter type with no JSON form.
    """

    def make(f: Callable[..., Any]) -> Tool[Any, Any]:
        made = _make(f, name, description, timeout, retry_safe, unpack)
        if examples:
            spec = attrs.evolve(made.spec, examples=tuple(examples))
            made = attrs.evolve(made, spec=spec)
        if max_result_chars is not None:
            made = made.with_max_result_chars(max_result_chars)
        return made if on_invalid is None else attrs.evolve(made, on_invalid=on_invalid)

    return make if fn is None else make(fn)


def _check_timeout(name: str, timeout: float | None) -> float | None:
    if timeout is not None and not (timeout > 0 and math.isfinite(timeout)):
        raise ToolError(f"tool {name!r}: timeout must be a positive number of seconds")
    return timeout


def _is_context(hint: Any) -> bool:
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    return hint is AgentContext or get_origin(hint) is AgentContext


def _is_site(hint: Any) -> bool:
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    return hint is ToolSite


def _is_async(fn: Callable[..., Any]) -> bool:
    # A callable object counts when its class's __call__ is a coroutine function.
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


def _make(
    fn: Callable[..., Any],
    name: str | None,
    description: str | None,
    timeout: float | None,
    retry_safe: bool,
    unpack: bool = False,
) -> Tool[Any, Any]:
    tool_name = name if name is not None else str(getattr(fn, "__name__", ""))
    if not TOOL_NAME.fullmatch(tool_name):
        raise ToolError(f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-'")
    _check_timeout(tool_name, timeout)
    try:
        signature = inspect.signature(fn, eval_str=True)
    except Exception as exc:  # NameError, or anything an annotation raises
        raise ToolError(f"tool {tool_name!r}: cannot resolve its type hints ({exc})") from exc
    summary, documented = parse_docstring(inspect.getdoc(fn))
    fields: list[FieldSpec] = []
    context_param: str | None = None
    site_param: str | None = None
    for param in signature.parameters.values():
        hint = Any if param.annotation is param.empty else param.annotation
        if _is_context(hint):
            context_param = param.name
            continue
        if _is_site(hint):
            site_param = param.name
            continue
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise ToolError(
                f"tool {tool_name!r}: parameter {param.name!r} must be passable by keyword "
                "(no *args, **kwargs or positional-only parameters)"
            )
        fields.append(_field(param, hint, documented.get(param.name)))
    single = _single(tool_name, fields) if unpack else None
    try:
        shape = arguments_shape(tool_name, fields) if single is None else _class_shape(single)
        parameters = build_schema(shape, strict=False)
    except UnsupportedType as exc:
        raise ToolError(f"tool {tool_name!r}: {exc}") from exc
    if single is not None and description is None and not summary:
        summary = shape.description or ""
    spec = ToolSpec(tool_name, summary if description is None else description, parameters)
    return Tool(
        fn,
        spec,
        timeout=timeout,
        retry_safe=retry_safe,
        context_param=context_param,
        site_param=site_param,
        is_async=_is_async(fn),
        arguments=shape,
        single=None if single is None else single.key,
    )


def _single(name: str, fields: list[FieldSpec]) -> FieldSpec:
    """The one parameter `unpack=True` needs: an attrs class or a dataclass."""
    hint = fields[0].hint if len(fields) == 1 else None
    if isinstance(hint, type) and (attrs.has(hint) or dataclasses.is_dataclass(hint)):
        return fields[0]
    raise ToolError(
        f"tool {name!r}: unpack=True needs one parameter annotated with an attrs class or "
        "a dataclass, whose fields become the tool's parameters"
    )


def _class_shape(field: FieldSpec) -> ObjectShape:
    shape = shape_of(field.hint)
    assert isinstance(shape, ObjectShape), "an attrs class or a dataclass compiles to an object"
    return shape


def _field(param: inspect.Parameter, hint: Any, guide: str | None) -> FieldSpec:
    if param.default is param.empty:
        return FieldSpec(param.name, hint, param.name, guide=guide)
    try:
        default = to_data(param.default)
    except TypeError:  # not JSON data: required-ness is all the schema can say
        default = NO_DEFAULT
    return FieldSpec(param.name, hint, param.name, True, default, guide)
