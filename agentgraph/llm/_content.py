"""Images and documents in messages: provider-neutral content parts.

A message's `parts` hold its content in order when it is more than text:
strings, `Image`s and `Document`s. Bytes are checked when a part is made (an
image's media type must match what its bytes are), so a bad file is refused
here, not by the provider after the request was paid for.
"""

from __future__ import annotations

from typing import Literal

import attrs

from .._util._public import stored_as

# base64, hashlib and urllib.parse load where bytes or URLs are handled, not with
# the package: most messages are text.

__all__ = ("IMAGE_TYPES", "Document", "Image", "ImageType", "Part", "data_url")

ImageType = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
"""The image formats every provider here takes."""

IMAGE_TYPES: tuple[ImageType, ...] = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _sniff(data: bytes) -> ImageType | None:
    """The image format `data` starts with, if it is one of `IMAGE_TYPES`."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def data_url(media_type: str, data: bytes) -> str:
    """`data:<media type>;base64,<data>`, as OpenAI takes inline files."""
    import base64

    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def _from_data_url(url: str) -> tuple[str, bytes]:
    import base64
    import binascii

    head, _, payload = url.partition(",")
    media_type, _, encoding = head[len("data:") :].partition(";")
    if encoding != "base64" or not payload:
        raise ValueError("a data URL for an image must be base64: data:image/png;base64,...")
    try:
        return media_type, base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"the data URL's base64 does not decode: {exc}") from exc


@stored_as("agentgraph:Image")
@attrs.frozen(repr=False)
class Image:
    """An image in a message: bytes with their media type, or a URL the provider fetches.

    Make one with `Image.from_bytes(data)` (the media type is read from the
    bytes) or `Image.from_url(url)`; a `data:` URL becomes bytes.
    """

    data: bytes | None = None
    media_type: ImageType | None = None
    url: str | None = None

    def __attrs_post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            raise ValueError("an Image holds either bytes or a URL")
        if self.data is not None:
            found = _sniff(self.data)
            if found is None:
                raise ValueError(
                    "these bytes are not a PNG, JPEG, GIF or WebP image, the formats "
                    "providers take; convert the image first"
                )
            if self.media_type != found:
                raise ValueError(
                    f"the bytes are {found}, not {self.media_type}: "
                    "use Image.from_bytes(data), which reads the type from the bytes"
                )
        elif self.media_type is not None:
            raise ValueError("an Image by URL has no media_type: the provider reads it")

    @classmethod
    def from_bytes(cls, data: bytes) -> Image:
        """An image from its bytes (PNG, JPEG, GIF or WebP); the format is read from them."""
        data = bytes(data)
        return cls(data, _sniff(data))

    @classmethod
    def from_url(cls, url: str) -> Image:
        """An image the provider fetches from an `http(s)` URL; a `data:` URL becomes bytes."""
        if url.startswith("data:"):
            media_type, data = _from_data_url(url)
            image = cls.from_bytes(data)
            if image.media_type != media_type:
                raise ValueError(
                    f"the data URL says {media_type}, its bytes are {image.media_type}"
                )
            return image
        from urllib.parse import urlsplit

        if urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"an image URL is http(s) or data:, not {url[:40]!r}")
        return cls(url=url)

    @property
    def digest(self) -> str | None:
        """The SHA-256 of the bytes in hex (None for an image by URL)."""
        import hashlib

        return None if self.data is None else hashlib.sha256(self.data).hexdigest()

    def __repr__(self) -> str:
        if self.data is None:
            return f"Image.from_url({self.url!r})"
        return f"<Image {self.media_type}, {len(self.data)} bytes>"


@stored_as("agentgraph:Document")
@attrs.frozen(repr=False)
class Document:
    """A PDF document in a message, sent whole; `name` is the file name providers show."""

    data: bytes
    name: str = "document.pdf"
    media_type: Literal["application/pdf"] = "application/pdf"

    def __attrs_post_init__(self) -> None:
        if self.media_type != "application/pdf":
            raise ValueError(f"documents are PDF (application/pdf), not {self.media_type}")
        if not self.data.startswith(b"%PDF-"):
            raise ValueError("these bytes are not a PDF (they do not start with %PDF-)")
        if not self.name:
            raise ValueError("a document needs a file name")

    @classmethod
    def from_bytes(cls, data: bytes, *, name: str = "document.pdf") -> Document:
        """A PDF from its bytes."""
        return cls(bytes(data), name)

    @property
    def digest(self) -> str:
        """The SHA-256 of the bytes in hex."""
        import hashlib

        return hashlib.sha256(self.data).hexdigest()

    def __repr__(self) -> str:
        return f"<Document {self.name!r}, {len(self.data)} bytes>"


Part = str | Image | Document
"""One piece of a message's content: text, an image or a document."""
