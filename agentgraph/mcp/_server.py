"""`GraphServer`: graphs served as the tools of an MCP server (stdio or streamable HTTP).

Each graph is one tool. Its input schema comes from the graph's input type
(`GraphBuilder[In, Out]`), wrapped as `{"input": ...}` when that type is not
an object; its result is structured content matching an `outputSchema` from
the output type, wrapped as `{"result": ...}` likewise, with the same JSON as
text for clients that read text only. Everything a result carries is masked.

A question the graph asks (`rt.interrupt`, tool approvals) becomes an
elicitation to a client that declared the capability: a request to the client
in the middle of the call (protocol versions up to 2025-11-25), or an
`InputRequiredResult` that the client answers by calling again (2026-07-28).
A client without the capability gets an error result naming the question and
the run id, and the run waits in the server's store to be answered later.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import mcp.types
import orjson
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import is_version_at_least
from starlette.applications import Starlette

from .._core._context import AgentContext
from .._core._errors import AgentGraphError, Interrupted
from .._core._graph import Graph
from .._core._json import map_scalars, to_data
from .._core._runner import GraphRunner, new_run_id
from .._util._redact import masked
from ..structured._schema import TOOL_NAME, json_schema, validate
from ._ask import NO_ANSWER, Asked, Seal, answer_of, question_of

__all__ = ("GraphServer",)

T = TypeVar("T")

_INPUT_REQUIRED = "2026-07-28"  # the first version that asks through InputRequiredResult
_ANSWER_KEY = "answer"


class _Served:
    """One graph as a tool: its MCP description, and its input and output as JSON."""

    def __init__(self, name: str, graph: Graph[Any, Any], description: str) -> None:
        self.name = name
        self.graph = graph
        in_schema, self.wrap_in = _object_schema(graph.input_type, "input")
        out_schema, self.wrap_out = _object_schema(graph.output_type, "result")
        self.tool = mcp.types.Tool(
            name=name,
            description=description,
            input_schema=in_schema,
            output_schema=out_schema,
        )

    def parse(self, arguments: Mapping[str, Any]) -> Any:
        """The graph's input from a call's arguments; `ValueError` saying what is wrong."""
        raw: Any = arguments
        if self.wrap_in:
            extra = sorted(set(arguments) - {"input"})
            if "input" not in arguments or extra:
                what = f"unknown arguments {extra}" if extra else "the argument 'input' is missing"
                raise ValueError(f"{what}: this tool takes one argument, 'input'")
            raw = arguments["input"]
        if _untyped(self.graph.input_type):
            return raw
        try:  # strictly: the tool's input schema says additionalProperties: false
            return validate(self.graph.input_type, raw, strict=True)
        except AgentGraphError as exc:
            raise ValueError(str(exc)) from exc

    def result(self, value: Any) -> mcp.types.CallToolResult:
        data = map_scalars(to_data(value), _masked)
        structured = {"result": data} if self.wrap_out else data
        text = data if isinstance(data, str) else orjson.dumps(structured).decode()
        return mcp.types.CallToolResult(
            content=[mcp.types.TextContent(type="text", text=text)],
            structured_content=structured,
        )


class GraphServer:
    """Graphs as the tools of one MCP server.

    ```python
    server = GraphServer([weather_graph, report_graph], store=SQLiteStore("runs.db"))
    await server.run_stdio()                 # or: uvicorn.run(server.http_app())
    ```

    Args:
        graphs: the graphs to serve, each as the tool named after the graph,
            or a mapping of tool name to graph.
        name: the server's name, as clients show it.
        runner: runs the graphs (its sinks see every run); a plain one by default.
        store: where runs are recorded, so that a graph's question can be
            answered; a `MemoryStore` (runs answerable while the process lives)
            unless given.
        descriptions: the description of each tool, by tool name.
    """

    def __init__(
        self,
        graphs: Sequence[Graph[Any, Any]] | Mapping[str, Graph[Any, Any]],
        *,
        name: str = "agentgraph",
        runner: GraphRunner | None = None,
        store: Any = None,
        descriptions: Mapping[str, str] | None = None,
    ) -> None:
        named = dict(graphs) if isinstance(graphs, Mapping) else {g.name: g for g in graphs}
        if not isinstance(graphs, Mapping) and len(named) != len(graphs):
            raise ValueError("two graphs share a name: pass a mapping of tool names to graphs")
        if not named:
            raise ValueError("GraphServer needs at least one graph")
        descriptions = dict(descriptions or {})
        unknown = sorted(set(descriptions) - set(named))
        if unknown:
            raise ValueError(f"descriptions name tools this server does not have: {unknown}")
        self.tools: dict[str, _Served] = {}
        for tool, graph in named.items():
            if not isinstance(graph, Graph):
                raise TypeError(f"tool {tool!r}: expected a Graph, got {type(graph).__name__}")
            if not TOOL_NAME.fullmatch(tool):
                raise ValueError(f"tool name {tool!r} must be 1-64 letters, digits, '_' or '-'")
            text = descriptions.get(tool) or f"Runs the agentgraph graph {tool!r}."
            self.tools[tool] = _Served(tool, graph, text)
        if store is None:
            from ..checkpoint import MemoryStore

            store = MemoryStore()
        self.store = store
        self.runner = runner if runner is not None else GraphRunner()
        self._seal = Seal()
        self.server: Server[Any] = Server(
            name, on_list_tools=self._list_tools, on_call_tool=self._call_tool
        )

    # -- transports ------------------------------------------------------------------------
    async def run_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout until it disconnects."""
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, *, path: str = "/mcp", host: str = "127.0.0.1") -> Starlette:
        """An ASGI app serving streamable HTTP at `path` (run it with uvicorn).

        `host` is where it will listen: on a loopback address, requests naming
        any other host or origin are refused (DNS rebinding protection).
        """
        return self.server.streamable_http_app(streamable_http_path=path, host=host)

    # -- handlers --------------------------------------------------------------------------
    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: mcp.types.PaginatedRequestParams | None
    ) -> mcp.types.ListToolsResult:
        return mcp.types.ListToolsResult(tools=[s.tool for s in self.tools.values()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: mcp.types.CallToolRequestParams
    ) -> mcp.types.CallToolResult | mcp.types.InputRequiredResult:
        served = self.tools.get(params.name)
        if served is None:
            names = ", ".join(repr(n) for n in self.tools)
            raise MCPError(
                mcp.types.INVALID_PARAMS,
                masked(f"no tool named {params.name[:80]!r} here; the tools are: {names}"),
            )
        if params.request_state is not None:
            return await self._answered(ctx, served, params)
        try:
            value = served.parse(params.arguments or {})
        except ValueError as exc:
            return _error(f"invalid arguments for tool {served.name!r}: {exc}")
        run_id = new_run_id()
        begin = AgentContext(value)
        return await self._drive(
            ctx,
            served,
            lambda: self.runner.run(served.graph, begin, store=self.store, run_id=run_id),
        )

    async def _answered(
        self,
        ctx: ServerRequestContext[Any],
        served: _Served,
        params: mcp.types.CallToolRequestParams,
    ) -> mcp.types.CallToolResult | mcp.types.InputRequiredResult:
        """A call that carries the answer to a question this server asked (2026-07-28)."""
        opened = self._seal.open(params.request_state or "")
        if opened is None or opened[0] != served.name:
            raise MCPError(
                mcp.types.INVALID_PARAMS,
                "request_state was not made by this server for this tool; call the tool anew",
            )
        _, run_id, kind = opened
        reply = (params.input_responses or {}).get(_ANSWER_KEY)
        if not isinstance(reply, mcp.types.ElicitResult):
            return _waiting(run_id, "the call carries no answer to the question")
        answer, why = answer_of(kind, reply.action, reply.content)
        if answer is NO_ANSWER:
            return _waiting(run_id, why)
        return await self._drive(ctx, served, self._resumer(served, run_id, answer))

    def _resumer(
        self, served: _Served, run_id: str, answer: Any
    ) -> Callable[[], Awaitable[AgentContext[Any]]]:
        return lambda: self.runner.resume(served.graph, run_id, self.store, answer=answer)

    async def _drive(
        self,
        ctx: ServerRequestContext[Any],
        served: _Served,
        attempt: Callable[[], Awaitable[AgentContext[Any]]],
    ) -> mcp.types.CallToolResult | mcp.types.InputRequiredResult:
        """Run (or resume) the graph, asking the client each question it stops at."""
        while True:
            try:
                out = await attempt()
            except Interrupted as stop:
                asked = question_of(stop.question, stop.run_id)
                if not _can_elicit(ctx):
                    return _unasked(served.name, stop.run_id, asked)
                if is_version_at_least(ctx.protocol_version, _INPUT_REQUIRED):
                    return _input_required(
                        asked, self._seal.state(served.name, stop.run_id, asked.kind)
                    )
                try:
                    reply = await ctx.session.elicit_form(
                        asked.message, dict(asked.schema), related_request_id=ctx.request_id
                    )
                except Exception as exc:
                    # The client refused the request, broke, timed out or went away: it
                    # cannot answer now, as one without the capability cannot.
                    why = f"the client did not answer the question ({type(exc).__name__}: {exc})"
                    return _waiting(stop.run_id, why)
                answer, why = answer_of(asked.kind, reply.action, reply.content)
                if answer is NO_ANSWER:
                    return _waiting(stop.run_id, why)
                attempt = self._resumer(served, stop.run_id, answer)
            except Exception as exc:  # the run failed: the client reads why, never a traceback
                return _error(f"the graph {served.name!r} failed: {type(exc).__name__}: {exc}")
            else:
                return served.result(out.input)


def _can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


def _input_required(asked: Asked, state: str) -> mcp.types.InputRequiredResult:
    form = mcp.types.ElicitRequestFormParams(
        message=asked.message, requested_schema=dict(asked.schema)
    )
    return mcp.types.InputRequiredResult(
        input_requests={_ANSWER_KEY: mcp.types.ElicitRequest(params=form)}, request_state=state
    )


def _unasked(tool: str, run_id: str, asked: Asked) -> mcp.types.CallToolResult:
    """The fallback for a client that cannot be asked: the question, and the run that waits."""
    text = (
        f"the graph {tool!r} asks: {asked.message} -- this client did not declare the "
        f"elicitation capability, so it cannot answer here; run {run_id!r} waits in the "
        "server's store for the answer (GraphRunner.resume(graph, run_id, store, answer=...))"
    )
    meta = {"agentgraph/run_id": run_id, "agentgraph/question": asked.message}
    return _error(text, meta)


def _waiting(run_id: str, why: str) -> mcp.types.CallToolResult:
    meta = {"agentgraph/run_id": run_id}
    return _error(f"{why}; run {run_id!r} waits in the server's store for the answer", meta)


def _error(text: str, meta: Mapping[str, Any] | None = None) -> mcp.types.CallToolResult:
    return mcp.types.CallToolResult(
        content=[mcp.types.TextContent(type="text", text=masked(text))],
        is_error=True,
        _meta=None if meta is None else {k: masked(v) for k, v in meta.items()},
    )


def _untyped(tp: Any) -> bool:
    return tp is Any or isinstance(tp, TypeVar)


def _object_schema(tp: Any, key: str) -> tuple[dict[str, Any], bool]:
    """`tp`'s JSON Schema as an object, and whether the value had to be wrapped under `key`."""
    schema: dict[str, Any] = {} if _untyped(tp) else json_schema(tp)
    if schema.get("type") == "object":
        return schema, False
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {key: schema},
        "required": [key],
        "additionalProperties": False,
    }
    if defs is not None:
        wrapped["$defs"] = defs
    return wrapped, True


def _masked(value: Any) -> Any:
    return masked(value) if isinstance(value, str) else value
