"""`MCPTools`: the tools of one MCP server as agentgraph `Tool`s, with the connection they share."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from types import TracebackType
from typing import Any, Self, TypeVar

import anyio
import mcp
import mcp.types
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer

from .._core._errors import MCPToolError, OutputError, ToolError
from .._util._clip import check_max_result_chars
from ..llm._messages import ToolSpec
from ..structured._compile import shape_of
from ..structured._schema import TOOL_NAME, validate
from ..structured._shapes import Invalid
from ..tools._tool import Tool
from ._calls import RemoteCall, Validator, list_tools, output_validator
from ._connection import Connection
from ._elicit import Answerer, Call, live_answers
from ._labels import label_of
from ._schema import SchemaArguments
from ._transport import HTTPTarget, ServerTarget, Transport

__all__ = ("CALL_TIMEOUT", "MCPTools")

T = TypeVar("T")

CALL_TIMEOUT = 300.0
"""Seconds one MCP tool call may take unless `timeout=` says otherwise: a server
whose answer never comes (or that the SDK drops) cannot hold a run forever."""


class MCPTools:
    """The tools of one MCP server, as `Tool`s any tool-using node can run.

    An async context manager: entering it connects (spawning the command for
    stdio), lists the server's tools and keeps the connection open; leaving it
    closes the connection (and ends the server process). Use it around the
    runs that call its tools, or for the life of the application.

    Only the tools named in `allow` are exposed to the model, whatever else
    the server lists; a name in `allow` that the server does not list is an
    error. Each tool keeps the server's JSON Schema: arguments are validated
    against it before the call, and every failure (bad arguments, an error
    result, a timeout, a lost connection) becomes a tool message the model
    can read, as with `@tool`.

    After the server is lost (it crashed, or restarted), the next call
    reconnects once. A call in flight when the connection is lost is sent
    again on the new connection only if the tool is safe to repeat; tools
    named in `unsafe` are not repeated, and their answer says the call may or
    may not have taken effect.

    Args:
        server: a streamable-HTTP URL, `mcp.StdioServerParameters`, or an
            `mcp` server object to serve in this process (for tests).
        allow: the server's names of the tools the model may call.
        prefix: put before each name the model sees, to keep tools of
            several servers apart (`prefix="files_"` shows `read` as `files_read`).
        timeout: seconds one call may take: `CALL_TIMEOUT` (5 minutes) unless
            given; None leaves it to the tool-use node's `timeout` (by default
            none: a call may then wait for ever).
        connect_timeout: seconds to start, connect and list the tools.
        unsafe: tools with side effects that must not be repeated.
        name: the server's label in errors (defaults to the URL or command).
        mode: how to agree on the protocol version, as the SDK's `mcp.Client`
            takes it: "auto" (ask the server, falling back to the initialize
            handshake) or "legacy" (the handshake only).
        max_result_chars: the most characters of one result the model reads
            (None: the tool-use node's bound, `MAX_RESULT_CHARS` by default).
        elicitation: how the server's questions in the middle of a call are
            answered; the capability is declared only when this says how.
            True: the run stops with `Interrupted` (its question an
            `Elicitation`) and `GraphRunner.resume(..., answer={...})` goes
            on, which needs a checkpoint store and a server speaking
            2026-07-28 (a handshake-era server is refused when connecting).
            An async function: it gets the `Elicitation` and returns the
            form's values (None declines) while the call waits, in every
            protocol version, within the call's `timeout`.
        images: hand the model the images in a result beside its text (PNG,
            JPEG, GIF or WebP; others are described in words). False describes
            every image in words, for a model that cannot read them.
    """

    def __init__(
        self,
        server: ServerTarget,
        *,
        allow: Collection[str],
        prefix: str = "",
        timeout: float | None = CALL_TIMEOUT,
        connect_timeout: float = 30.0,
        unsafe: Collection[str] = (),
        name: str | None = None,
        mode: str = "auto",
        max_result_chars: int | None = None,
        elicitation: bool | Answerer = False,
        images: bool = True,
    ) -> None:
        if isinstance(allow, str) or isinstance(unsafe, str):
            raise TypeError("allow and unsafe take a collection of tool names, not one string")
        if not isinstance(server, str | mcp.StdioServerParameters | Server | MCPServer):
            raise TypeError(
                "server must be a URL, mcp.StdioServerParameters or an mcp server object, "
                f"not {type(server).__name__}"
            )
        if timeout is not None and not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError("timeout must be a positive number of seconds")
        if not (connect_timeout > 0 and math.isfinite(connect_timeout)):
            raise ValueError("connect_timeout must be a positive number of seconds")
        if prefix and not TOOL_NAME.fullmatch(prefix):
            raise ValueError(f"prefix {prefix!r} must be letters, digits, '_' or '-'")
        outside = sorted(set(unsafe) - set(allow))
        if outside:
            raise ValueError(f"unsafe names tools that allow does not: {outside}")
        self.max_result_chars = check_max_result_chars("MCPTools", max_result_chars)
        self.label = name if name is not None else label_of(server)
        self._transport = Transport(server, self.label)
        self.allow = frozenset(allow)
        self.prefix = prefix
        self.timeout = timeout
        self.unsafe = frozenset(unsafe)
        self.connect_timeout = connect_timeout
        self._connection = Connection(self.label, self._open, connect_timeout)
        self._stack: AsyncExitStack | None = None
        self._tools: tuple[Tool[..., Any], ...] = ()
        self._outputs: dict[str, Validator | None] = {}
        self._arguments: dict[str, SchemaArguments] = {}
        self.hidden: tuple[str, ...] = ()
        """Names the server listed that `allow` left out (set when connected)."""
        self.mode = _check_mode(mode)
        if not (isinstance(elicitation, bool) or callable(elicitation)):
            raise TypeError(
                "elicitation takes True, False or an async function answering questions"
            )
        self.images = images
        self.elicitation = elicitation
        """How the server's questions are answered: False (the capability is not
        declared), True (the run's interrupts) or a function."""
        self.in_flight: list[Call] = []
        """The calls waiting for their answer, which a server's question may be for."""

    @classmethod
    def stdio(
        cls,
        command: str,
        *args: str,
        allow: Collection[str],
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        prefix: str = "",
        timeout: float | None = CALL_TIMEOUT,
        connect_timeout: float = 30.0,
        unsafe: Collection[str] = (),
        name: str | None = None,
        mode: str = "auto",
        max_result_chars: int | None = None,
        elicitation: bool | Answerer = False,
        images: bool = True,
    ) -> MCPTools:
        """The tools of a server started as `command *args`, spoken to over stdin and stdout.

        The process gets a small safe environment (`PATH`, `HOME` and the
        like) plus `env`; it is ended when the connection closes.
        """
        params = mcp.StdioServerParameters(
            command=command, args=list(args), env=None if env is None else dict(env), cwd=cwd
        )
        return cls(
            params,
            allow=allow,
            prefix=prefix,
            timeout=timeout,
            connect_timeout=connect_timeout,
            unsafe=unsafe,
            name=name,
            mode=mode,
            max_result_chars=max_result_chars,
            elicitation=elicitation,
            images=images,
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        allow: Collection[str],
        headers: Mapping[str, str] | None = None,
        prefix: str = "",
        timeout: float | None = CALL_TIMEOUT,
        connect_timeout: float = 30.0,
        unsafe: Collection[str] = (),
        name: str | None = None,
        mode: str = "auto",
        max_result_chars: int | None = None,
        elicitation: bool | Answerer = False,
        images: bool = True,
    ) -> MCPTools:
        """The tools of a server at `url` (streamable HTTP), with `headers` on every request."""
        tools = cls(
            url,
            allow=allow,
            prefix=prefix,
            timeout=timeout,
            connect_timeout=connect_timeout,
            unsafe=unsafe,
            name=name,
            mode=mode,
            max_result_chars=max_result_chars,
            elicitation=elicitation,
            images=images,
        )
        if headers:
            tools._transport = Transport(HTTPTarget(url, dict(headers)), tools.label)
        return tools

    # -- the connection --------------------------------------------------------------------
    @property
    def tools(self) -> tuple[Tool[..., Any], ...]:
        """The allowed tools, in the order the server lists them (once connected)."""
        if self._stack is None:
            raise ToolError(f"MCP server {self.label!r}: enter `async with` to connect first")
        return self._tools

    @property
    def over_http(self) -> bool:
        return self._transport.over_http

    def session_refused(self, client: mcp.Client) -> bool:
        """Whether the HTTP server said it no longer knows `client`'s session (it restarted)."""
        return self._transport.session_refused(client)

    @property
    def connections(self) -> int:
        """How many connections were opened: 1, plus one per reconnection."""
        return self._connection.connections

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise ToolError(f"MCP server {self.label!r}: already connected")
        self._connection = Connection(self.label, self._open, self.connect_timeout)
        stack = AsyncExitStack()
        try:
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(self._connection.close)
            client = await self._connection.start(group)
            listed = await list_tools(self.label, client)
            self._outputs = {item.name: output_validator(item.output_schema) for item in listed}
            self._tools, self.hidden = self._make_tools(listed)
        except BaseException:
            # Closed without the error, so that no task group wraps it in a group.
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            # The body's error is not passed in: it propagates as it is, never wrapped
            # in a group by the keeper's task group.
            await stack.aclose()

    def _open(self) -> AbstractAsyncContextManager[mcp.Client]:
        # The capability is declared only when a question can be answered (see `elicitation`).
        answers: Any = None if self.elicitation is False else live_answers(self)
        return self._transport.open(
            mode=self.mode, answers=answers, modern_only=self.elicitation is True
        )

    # -- the tools -------------------------------------------------------------------------
    def _make_tools(
        self, listed: Sequence[mcp.types.Tool]
    ) -> tuple[tuple[Tool[..., Any], ...], tuple[str, ...]]:
        offered = {item.name: item for item in listed}
        missing = sorted(self.allow - set(offered))
        if missing:
            shown = ", ".join(repr(n[:64]) for n in list(offered)[:30]) or "none"
            raise ToolError(
                f"MCP server {self.label!r} does not list the allowed tools {missing}; "
                f"it lists: {shown}"
            )
        names = [item.name for item in listed if item.name in self.allow]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ToolError(f"MCP server {self.label!r} lists the tools {twice} more than once")
        made = tuple(self._make(item) for item in listed if item.name in self.allow)
        hidden = tuple(item.name for item in listed if item.name not in self.allow)
        return made, hidden

    def _make(self, item: mcp.types.Tool) -> Tool[..., Any]:
        exposed = self.prefix + item.name
        if not TOOL_NAME.fullmatch(exposed):
            raise ToolError(
                f"MCP server {self.label!r}: tool name {exposed!r} is not one providers accept "
                "(1-64 letters, digits, '_' or '-')"
            )
        arguments = self._arguments[item.name] = SchemaArguments(exposed, item.input_schema)
        spec = ToolSpec(exposed, item.description or "", item.input_schema)
        call = RemoteCall(
            self,
            item.name,
            item.name not in self.unsafe,
            self._outputs.get(item.name),
            images=self.images,
        )
        return Tool(
            call,
            spec,
            timeout=self.timeout,
            retry_safe=item.name not in self.unsafe,
            is_async=True,
            arguments=arguments,
            max_result_chars=self.max_result_chars,
        )

    async def call(
        self, tool: str, arguments: Mapping[str, Any], *, into: type[T] | None = None
    ) -> Any:
        """Call the server's tool `tool` (its own name) and return its result.

        A tool that declares an `outputSchema` gives its structured content, checked
        against the schema, as data (and, with `into=`, validated into that Python
        type); any other tool the text of its result. The connection rules of the
        tools apply (one reconnection after a loss), and so does `timeout`; the
        text is whole (no `max_result_chars` here).

        Only the tools named in `allow` are called here too: the allowlist,
        and `unsafe` with it, hold for your own code as for the model, and so
        does the check of `arguments` against the tool's input schema.

        Raises:
            MCPToolError: `tool` is not in `allow`, or `arguments` break its
                input schema (in both cases nothing is sent); or the server
                answered with an error, refused the call, or gave a structured
                result that breaks the tool's `outputSchema` (or does not fit
                `into`).
            UnsupportedType: `into` is a type results cannot be checked
                against (nothing is sent).
            MCPConnectionError: the server could not be reached.
            TimeoutError: no answer within `timeout` seconds.
        """
        if self._stack is None:
            raise ToolError(f"MCP server {self.label!r}: enter `async with` to connect first")
        if tool not in self.allow:
            # Never sent: a tool outside `allow` cannot be named in `unsafe`, so a lost
            # connection would send it again whatever it does.
            allowed = ", ".join(repr(n) for n in sorted(self.allow))
            raise MCPToolError(self.label, tool, f"not in allow ({allowed}); the call was not sent")
        checked = self._arguments[tool].check(arguments, False)
        if isinstance(checked, Invalid):
            lines = "\n".join(f"- {problem}" for problem in checked.render())
            raise MCPToolError(
                self.label, tool, f"invalid arguments, so the call was not sent:\n{lines}"
            )
        if into is not None:
            shape_of(into)  # an unsupported type is refused before the call has effects
        output = self._outputs.get(tool)
        with anyio.fail_after(self.timeout):
            remote = RemoteCall(self, tool, tool not in self.unsafe, output, data=True)
            value = await remote(**arguments)
        if into is None:
            return value
        try:
            return validate(into, value)
        except OutputError as exc:
            # A union or a generic alias has no __name__; its repr reads as written.
            shown = into.__name__ if isinstance(into, type) else repr(into)
            raise MCPToolError(self.label, tool, f"the result does not fit {shown}: {exc}") from exc

    def __repr__(self) -> str:
        return f"<MCPTools {self.label!r}>"


def _check_mode(mode: str) -> str:
    if mode not in ("auto", "legacy"):
        raise ValueError(f"mode must be 'auto' or 'legacy', not {mode!r}")
    return mode
