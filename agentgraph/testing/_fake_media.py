"""What the fake providers accept of images, documents and prompt-cache breakpoints.

Each check follows the service's own rules: the part and block types it
takes (in user messages and in tool results), the sources each may have,
bytes that must decode and be the format they claim, and Anthropic's limit of
four `cache_control` breakpoints. The decoders turn accepted parts back into
neutral `Image`s and `Document`s; `PromptCache` (in `_fake_cache`) answers
breakpoints with the cache reads and writes the service would report.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Any

from ..llm._content import IMAGE_TYPES, Document, Image, Part
from ._faults import ErrorResponse

__all__ = (
    "anthropic_media_problem",
    "anthropic_part",
    "ollama_images_problem",
    "ollama_parts",
    "openai_content_problem",
    "openai_part",
    "responses_output_problem",
)

_OPENAI_USER_PARTS = ("text", "image_url", "input_audio", "file")
_CACHE_TTLS = ("5m", "1h")
_MAX_BREAKPOINTS = 4


def _bad(message: str, *, param: str | None = None) -> ErrorResponse:
    return ErrorResponse(400, message=message, param=param)


def _b64(data: Any) -> bytes | None:
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _image(data: bytes | None) -> Image | None:
    try:
        return None if data is None else Image.from_bytes(data)
    except ValueError:
        return None


def _data_url(url: str) -> tuple[str, bytes | None]:
    head, _, payload = url.partition(",")
    media_type, _, encoding = head[len("data:") :].partition(";")
    return media_type, _b64(payload) if encoding == "base64" else None


# -- OpenAI chat completions ------------------------------------------------------------


def openai_content_problem(role: str, content: Any, i: int) -> ErrorResponse | None:
    """The error the service gives for `content` of a `role` message, or None."""
    if not isinstance(content, list):
        return None
    # A tool message takes text parts only: its images must go in a user message.
    allowed = {"user": _OPENAI_USER_PARTS, "assistant": ("text", "refusal")}.get(role, ("text",))
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        where = f"messages[{i}].content[{j}]"
        if kind not in allowed:
            shown = ", ".join(f"'{k}'" for k in allowed)
            return _bad(
                f"Invalid value: '{kind}'. Supported values are: {shown}.", param=f"{where}.type"
            )
        problem = _openai_part_problem(part, where)
        if problem is not None:
            return problem
    return None


def _openai_part_problem(part: Mapping[str, Any], where: str) -> ErrorResponse | None:
    if part["type"] == "image_url":
        url = (part.get("image_url") or {}).get("url")
        if not isinstance(url, str):
            return _bad("Missing required parameter: 'image_url.url'.", param=f"{where}.image_url")
        if url.startswith("data:"):
            media_type, data = _data_url(url)
            image = _image(data)
            if image is None or media_type != image.media_type:
                return _bad(
                    "You uploaded an unsupported image. Please make sure your image is valid.",
                    param=f"{where}.image_url",
                )
        elif not url.startswith(("http://", "https://")):
            return _bad("Invalid image URL.", param=f"{where}.image_url.url")
    elif part["type"] == "file":
        file = part.get("file") or {}
        if "file_id" not in file and "file_data" not in file:
            return _bad("Missing required parameter: 'file.file_data'.", param=f"{where}.file")
        if "file_data" in file:
            media_type, data = _data_url(str(file["file_data"]))
            if media_type != "application/pdf" or data is None or not data.startswith(b"%PDF-"):
                return _bad(
                    "Invalid file data: expected a base64-encoded PDF data URL.",
                    param=f"{where}.file.file_data",
                )
            if not file.get("filename"):
                return _bad(
                    "Missing required parameter: 'file.filename'.", param=f"{where}.file.filename"
                )
    return None


def openai_part(part: Mapping[str, Any]) -> Part | None:
    """An accepted content part as a neutral part (None for kinds we do not model)."""
    if part.get("type") == "text":
        return str(part.get("text", ""))
    if part.get("type") == "image_url":
        url = part["image_url"]["url"]
        return Image.from_url(url)
    if part.get("type") == "file" and "file_data" in part["file"]:
        _, data = _data_url(part["file"]["file_data"])
        return Document.from_bytes(data or b"", name=part["file"].get("filename", "file.pdf"))
    return None


# -- OpenAI Responses -------------------------------------------------------------------

_RESPONSES_USER_PARTS = ("input_text", "input_image", "input_file")


def responses_content_problem(role: str, content: Any, i: int) -> ErrorResponse | None:
    """The error the Responses API gives for `content` of a `role` input message, or None."""
    if not isinstance(content, list):
        return None
    allowed = _RESPONSES_USER_PARTS if role != "assistant" else ("output_text", "refusal")
    return _responses_parts_problem(content, allowed, f"input[{i}].content")


def responses_output_problem(output: Any, i: int) -> ErrorResponse | None:
    """The error for a `function_call_output`'s `output`: text, or input text, images and files."""
    if isinstance(output, str):
        return None
    if not isinstance(output, list):
        return _bad(
            f"Invalid type for 'input[{i}].output': expected one of a string or an array "
            "of input content.",
            param=f"input[{i}].output",
        )
    return _responses_parts_problem(output, _RESPONSES_USER_PARTS, f"input[{i}].output")


def _responses_parts_problem(
    content: list[Any], allowed: tuple[str, ...], at: str
) -> ErrorResponse | None:
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        where = f"{at}[{j}]"
        if kind not in allowed:
            shown = ", ".join(f"'{k}'" for k in allowed)
            return _bad(
                f"Invalid value: '{kind}'. Supported values are: {shown}.", param=f"{where}.type"
            )
        assert isinstance(part, dict)
        problem = _responses_part_problem(part, where)
        if problem is not None:
            return problem
    return None


def _responses_part_problem(part: Mapping[str, Any], where: str) -> ErrorResponse | None:
    if part["type"] == "input_image":
        if part.get("detail") not in ("low", "high", "auto"):
            return _bad("Missing required parameter: 'detail'.", param=f"{where}.detail")
        url = part.get("image_url")
        if "file_id" not in part and not isinstance(url, str):
            return _bad("Missing required parameter: 'image_url'.", param=f"{where}.image_url")
        as_chat = {"type": "image_url", "image_url": {"url": url}}
        return None if "file_id" in part else _openai_part_problem(as_chat, where)
    if part["type"] == "input_file" and "file_data" in part:
        as_chat = {"type": "file", "file": {k: v for k, v in part.items() if k != "type"}}
        return _openai_part_problem(as_chat, where)
    return None


def responses_part(part: Mapping[str, Any]) -> Part | None:
    """An accepted Responses input part as a neutral part (None for kinds we do not model)."""
    kind = part.get("type")
    if kind == "input_text":
        return str(part.get("text", ""))
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        return openai_part({"type": "image_url", "image_url": {"url": part["image_url"]}})
    if kind == "input_file" and "file_data" in part:
        return openai_part({"type": "file", "file": dict(part)})
    return None


# -- Anthropic Messages -----------------------------------------------------------------


def _anthropic_source_problem(kind: str, source: Any, where: str) -> ErrorResponse | None:
    if not isinstance(source, dict):
        return _bad(f"{where}.source: Field required")
    if source.get("type") == "url":
        url = source.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return _bad(f"{where}.source.url: Input should be a valid URL")
        return None
    if source.get("type") != "base64":
        return _bad(f"{where}.source.type: Input should be 'base64' or 'url'")
    data = _b64(source.get("data"))
    if kind == "image":
        media_type = source.get("media_type")
        if media_type not in IMAGE_TYPES:
            return _bad(
                f"{where}.source.base64.media_type: Input should be 'image/jpeg', "
                "'image/png', 'image/gif' or 'image/webp'"
            )
        image = _image(data)
        if image is None:
            return _bad(f"{where}.source.base64.data: Invalid base64 image data")
        if image.media_type != media_type:
            return _bad(f"{where}: Image does not match the provided media type {media_type}")
        return None
    if source.get("media_type") != "application/pdf":
        return _bad(f"{where}.source.base64.media_type: Input should be 'application/pdf'")
    if data is None or not data.startswith(b"%PDF-"):
        return _bad(f"{where}: The PDF specified was not valid.")
    return None


def anthropic_media_problem(body: Mapping[str, Any]) -> ErrorResponse | None:
    """The error for the request's cache breakpoints, images and documents, or None."""
    problem = _cache_problem(body)
    for i, message in enumerate(body["messages"]):
        content = message.get("content")
        if problem is None and isinstance(content, list):
            problem = _blocks_problem(str(message.get("role")), content, i)
    return problem


_TOOL_RESULT_BLOCKS = ("text", "image", "document", "search_result")


def _blocks_problem(role: str, blocks: list[Any], i: int) -> ErrorResponse | None:
    """The error the service gives for the image and document blocks of message `i`, or None.

    A `tool_result`'s own content may hold text, image, document and search
    result blocks, checked like a user turn's.
    """
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        where = f"messages.{i}.content.{j}"
        if kind == "tool_result" and isinstance(block.get("content"), list):
            problem = _tool_result_problem(block["content"], where)
            if problem is not None:
                return problem
        if kind not in ("image", "document"):
            continue
        if role != "user":
            return _bad(f"{where}: {kind} blocks are only allowed in user messages")
        problem = _anthropic_source_problem(kind, block.get("source"), where)
        if problem is not None:
            return problem
    return None


def _tool_result_problem(content: list[Any], at: str) -> ErrorResponse | None:
    for k, inner in enumerate(content):
        kind = inner.get("type") if isinstance(inner, dict) else None
        where = f"{at}.content.{k}"
        if kind not in _TOOL_RESULT_BLOCKS:
            shown = ", ".join(f"'{t}'" for t in _TOOL_RESULT_BLOCKS)
            return _bad(f"{where}: Input tag '{kind}' found does not match any of {shown}")
        if kind == "text" and not str(inner.get("text") or "").strip():
            return _bad(f"{where}: text content blocks must contain non-whitespace text")
        if kind in ("image", "document"):
            problem = _anthropic_source_problem(kind, inner.get("source"), where)
            if problem is not None:
                return problem
    return None


def _marked(body: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    """Every `cache_control` in the request, with where it sits.

    The top-level one marks the last block of the request and takes a slot too.
    """
    if "cache_control" in body:
        yield "cache_control", body["cache_control"]
    for i, tool in enumerate(body.get("tools") or ()):
        if isinstance(tool, dict) and "cache_control" in tool:
            yield f"tools.{i}", tool["cache_control"]
    system = body.get("system")
    for i, block in enumerate(system if isinstance(system, list) else ()):
        if isinstance(block, dict) and "cache_control" in block:
            yield f"system.{i}", block["cache_control"]
    for i, message in enumerate(body.get("messages") or ()):
        content = message.get("content") if isinstance(message, dict) else None
        for j, block in enumerate(content if isinstance(content, list) else ()):
            if isinstance(block, dict) and "cache_control" in block:
                yield f"messages.{i}.content.{j}", block["cache_control"]


def _cache_problem(body: Mapping[str, Any]) -> ErrorResponse | None:
    """The error for breakpoints the service refuses: a bad marker, or more than four."""
    marked = list(_marked(body))
    for where, control in marked:
        if control is None:
            continue
        if not isinstance(control, dict) or control.get("type") != "ephemeral":
            return _bad(f"{where}.cache_control.type: Input should be 'ephemeral'")
        if control.get("ttl", "5m") not in _CACHE_TTLS:
            return _bad(f"{where}.cache_control.ttl: Input should be '5m' or '1h'")
    count = sum(1 for _, control in marked if control is not None)
    if count > _MAX_BREAKPOINTS:
        return _bad(
            f"A maximum of {_MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {count}."
        )
    return None


def anthropic_part(block: Mapping[str, Any]) -> Part | None:
    """An accepted text, image or document block as a neutral part."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind not in ("image", "document"):
        return None
    source = block["source"]
    if source["type"] == "url":
        return Image.from_url(source["url"]) if kind == "image" else None
    data = base64.b64decode(source["data"])
    if kind == "image":
        return Image.from_bytes(data)
    return Document.from_bytes(data, name=str(block.get("title") or "document.pdf"))


# -- Ollama -----------------------------------------------------------------------------


def ollama_images_problem(message: Mapping[str, Any], i: int) -> ErrorResponse | None:
    """The error Ollama gives for a message's `images`: a list of plain base64 strings."""
    images = message.get("images")
    if images is None:
        return None
    if not isinstance(images, list):
        return _bad(
            "json: cannot unmarshal into Go struct field Message.messages.images "
            "of type []api.ImageData"
        )
    for image in images:
        if _b64(image) is None:
            return _bad(f"messages[{i}]: illegal base64 data in images")
    return None


def ollama_parts(message: Mapping[str, Any]) -> tuple[Part, ...]:
    """A user message with images as neutral parts: its text, then its images."""
    text = str(message.get("content") or "")
    images: list[Part] = []
    for raw in message.get("images") or ():
        image = _image(_b64(raw))
        if image is not None:
            images.append(image)
    return (text, *images) if text else tuple(images)
