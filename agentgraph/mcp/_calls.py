"""Calls to an MCP server's tools: the function behind each `Tool`, and what its answers become.

A call that loses its connection is sent again on a new one once, when that is
safe; every other failure is raised as `MCPToolError` or `MCPConnectionError`,
which the tool executor turns into a message the model reads.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import jsonschema
import jsonschema.exceptions
import jsonschema.protocols
import jsonschema.validators
import mcp
import mcp.types
import orjson
import pydantic
from mcp.shared.exceptions import MCPError

from .._core._errors import MCPConnectionError, MCPToolError
from ..llm._content import Image
from ._elicit import CALLING, Call, ask_in_run

if TYPE_CHECKING:
    from ._toolset import MCPTools

__all__ = ("RemoteCall", "list_tools", "output_validator")

Validator = jsonschema.protocols.Validator

_PAGES = 100  # a server whose listing never ends cannot hang the connection


class RemoteCall:
    """The function behind one MCP tool: sends the call on the toolset's connection."""

    __slots__ = ("data", "images", "output", "remote", "repeatable", "toolset")

    def __init__(
        self,
        toolset: MCPTools,
        remote: str,
        repeatable: bool,
        output: Validator | None = None,
        *,
        data: bool = False,
        images: bool = False,
    ) -> None:
        self.toolset = toolset
        self.remote = remote
        self.repeatable = repeatable
        self.output = output
        """The tool's `outputSchema` as a validator, when it declares one."""
        self.data = data
        """Give a checked structured result as data (else the text a model reads)."""
        self.images = images
        """Give a result's images as `Image`s beside its text (else described in words)."""

    # `self` positional-only: a tool may well have an argument named self.
    async def __call__(self, /, **arguments: Any) -> Any:
        connection = self.toolset._connection
        label = self.toolset.label
        client = await connection.client()
        try:
            result = await self._send(client, arguments)
        except MCPToolError:
            raise
        except Exception as exc:
            expired = _is_expired(exc, self.toolset.over_http) or (
                isinstance(exc, MCPError) and self.toolset.session_refused(client)
            )
            if not (expired or _is_loss(exc)):
                raise _refused(label, self.remote, exc) from exc
            connection.lost(client)
            if not (expired or self.repeatable):
                raise MCPConnectionError(
                    label,
                    f"the connection was lost during the call to {self.remote!r}; it may or may "
                    "not have taken effect and is not safe to repeat, so it was not sent again "
                    "(the next call reconnects)",
                ) from exc
            client = await connection.client()
            try:
                result = await self._send(client, arguments)
            except MCPToolError:
                raise
            except Exception as again:
                if _is_loss(again):
                    connection.lost(client)
                    raise MCPConnectionError(
                        label, f"the connection was lost again calling {self.remote!r}"
                    ) from again
                raise _refused(label, self.remote, again) from again
        data = _answer(label, self.remote, result, self.output)
        if self.data:
            return data
        return _parts_of(result) if self.images else _text_of(result)

    async def _send(
        self, client: mcp.Client, arguments: Mapping[str, Any]
    ) -> mcp.types.CallToolResult:
        """One call, its questions answered as the toolset says (see `agentgraph.mcp._elicit`)."""
        toolset = self.toolset
        if toolset.elicitation is True:
            return await ask_in_run(toolset.label, self.remote, client, arguments)
        call = Call(self.remote)
        token = CALLING.set(call)
        toolset.in_flight.append(call)
        try:
            result = await client.call_tool(self.remote, dict(arguments))
        except Exception as exc:
            call.raise_refused(exc)
            raise
        finally:
            CALLING.reset(token)
            toolset.in_flight.remove(call)
        call.raise_refused(None)
        return result


async def list_tools(label: str, client: mcp.Client) -> list[mcp.types.Tool]:
    listed: list[mcp.types.Tool] = []
    cursor: str | None = None
    try:
        for _ in range(_PAGES):
            page = await client.list_tools(cursor=cursor)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return listed
    except Exception as exc:
        if _is_loss(exc):
            raise MCPConnectionError(label, f"could not connect: {_text(exc)}") from exc
        raise MCPToolError(label, "tools/list", _text(exc)) from exc
    raise MCPToolError(label, "tools/list", f"the listing did not end after {_PAGES} pages")


def _is_expired(exc: Exception, over_http: bool) -> bool:
    """Whether the server no longer knows the HTTP session (it restarted): the call was not run.

    A stateful server answers a request whose session it does not know with
    HTTP 404 and a JSON-RPC "invalid request" error (servers word it "Session
    not found", the SDK "Session terminated"); an invalid request is never run,
    so a new session may send it again, whatever the tool. Servers that answer
    400 instead are told by the response itself (`MCPTools.session_refused`).
    """
    return over_http and isinstance(exc, MCPError) and exc.code == mcp.types.INVALID_REQUEST


def _is_loss(exc: Exception) -> bool:
    """Whether `exc` means the connection is gone (as opposed to a refused call)."""
    if isinstance(exc, MCPError):
        return exc.code == mcp.types.CONNECTION_CLOSED
    return isinstance(
        exc,
        anyio.BrokenResourceError
        | anyio.ClosedResourceError
        | anyio.EndOfStream
        | httpx2.TransportError
        | OSError,
    )


_SDK_SCHEMA_CHECKS = ("Invalid structured content returned by tool", "has an output schema but")


def _refused(label: str, tool: str, exc: Exception) -> MCPToolError:
    if isinstance(exc, RuntimeError) and any(m in str(exc) for m in _SDK_SCHEMA_CHECKS):
        # The SDK checks a listed tool's structured result itself, before this module can.
        first = _text(exc).split("\n", 1)[0]
        return MCPToolError(
            label, tool, f"the structured result breaks the tool's outputSchema: {first}"
        )
    if isinstance(exc, MCPError):
        return MCPToolError(label, tool, f"the server refused the call ({exc.code}): {_text(exc)}")
    if isinstance(exc, pydantic.ValidationError):
        return MCPToolError(label, tool, "the server's answer is not a valid MCP result")
    return MCPToolError(label, tool, f"{type(exc).__name__}: {_text(exc)}")


def output_validator(schema: Mapping[str, Any] | None) -> Validator | None:
    """A validator for a tool's `outputSchema`; None when it declares none or an invalid one."""
    if schema is None:
        return None
    plain = orjson.loads(orjson.dumps(dict(schema)))
    cls = jsonschema.validators.validator_for(plain, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(plain)
    except jsonschema.exceptions.SchemaError:
        return None
    return cls(plain)


def _answer(
    label: str, tool: str, result: mcp.types.CallToolResult, output: Validator | None
) -> Any:
    """What the call gives: its structured content, checked against the tool's `outputSchema`
    when it declares one; otherwise the text blocks in order, other blocks described briefly."""
    parts = [_block(block) for block in result.content]
    text = "\n".join(p for p in parts if p)
    if not text and result.structured_content is not None:
        text = orjson.dumps(result.structured_content).decode()
    if result.is_error:
        raise MCPToolError(label, tool, text or "the tool reported an error without a message")
    if output is None:
        return text
    data = result.structured_content
    if data is None:
        raise MCPToolError(
            label,
            tool,
            "the tool declares an outputSchema but its result has no structured content",
        )
    problems = [
        f"{'/'.join(str(p) for p in error.path) or '(root)'}: {error.message}"
        for error in sorted(output.iter_errors(data), key=lambda e: list(map(str, e.path)))[:5]
    ]
    if problems:
        raise MCPToolError(
            label,
            tool,
            "the structured result breaks the tool's outputSchema: " + "; ".join(problems),
        )
    return data


def _parts_of(result: mcp.types.CallToolResult) -> str | list[str | Image]:
    """The result's text and images in order, or its text when it holds no image providers take."""
    parts: list[str | Image] = []
    for block in result.content:
        image = _image(block)
        if image is not None:
            parts.append(image)
            continue
        text = _block(block)
        if not text:
            continue
        if parts and isinstance(parts[-1], str):
            parts[-1] += "\n" + text
        else:
            parts.append(text)
    if not any(isinstance(part, Image) for part in parts):
        return _text_of(result)
    return parts


def _image(block: mcp.types.ContentBlock) -> Image | None:
    """An image block as an `Image`, when its bytes are a format providers take."""
    if not isinstance(block, mcp.types.ImageContent):
        return None
    try:
        return Image.from_bytes(base64.b64decode(block.data, validate=True))
    except (binascii.Error, ValueError):  # described in words instead, as before
        return None


def _text_of(result: mcp.types.CallToolResult) -> str:
    text = "\n".join(p for p in (_block(b) for b in result.content) if p)
    return text or orjson.dumps(result.structured_content).decode()


def _block(block: mcp.types.ContentBlock) -> str:
    if isinstance(block, mcp.types.TextContent):
        return block.text
    if isinstance(block, mcp.types.EmbeddedResource):
        inner = block.resource
        if isinstance(inner, mcp.types.TextResourceContents):
            return inner.text
        return f"[resource {inner.uri} ({inner.mime_type or 'binary'}) not shown]"
    if isinstance(block, mcp.types.ResourceLink):
        # A reference the model can read and name (to a resource tool, or to the user).
        link = {
            "uri": str(block.uri),
            "name": block.name,
            "title": block.title,
            "mimeType": block.mime_type,
            "description": block.description,
            "size": block.size,
        }
        shown = {k: v for k, v in link.items() if v is not None}
        return f"[resource link {orjson.dumps(shown).decode()}]"
    # audio, and images that are not a format providers take (SVG, damaged bytes)
    size = len(block.data.rstrip("=")) * 3 // 4  # base64: 4 characters per 3 bytes
    return f"[{block.type} ({block.mime_type}), {size} bytes, not shown]"


def _text(exc: BaseException) -> str:
    try:
        return str(exc)[:2000] or type(exc).__name__
    except Exception:
        return f"<unprintable {type(exc).__name__}>"
