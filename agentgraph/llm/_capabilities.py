"""`Capabilities`: which request hints a model honours, and what happens to the rest."""

from __future__ import annotations

import logging
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import attrs

from .._core._errors import UnsupportedSetting

if TYPE_CHECKING:
    from ._messages import Message

__all__ = ("Capabilities", "Hint", "OnUnsupported")

OnUnsupported = Literal["ignore", "warn", "fail"]
"""What to do with a hint the model cannot honour."""

Hint = Literal["temperature", "think", "tool_choice", "output"]
"""The request hints a model may not support."""

_log = logging.getLogger("agentgraph.llm")


@attrs.frozen
class Capabilities:
    """Which request hints a model honours, and the policy for the others.

    A field left `None` is inferred by the client from the provider and the
    model name (for example, OpenAI reasoning models take no `temperature`).
    A hint the model cannot honour is left out of the request, and
    `on_unsupported` decides what else happens:

    - `"ignore"`: nothing.
    - `"warn"` (default): a DEBUG record on the `agentgraph.llm` logger, so the
      dropped hint shows up when debugging without flooding production logs
      (the same request repeats on every step).
    - `"fail"`: `UnsupportedSetting` is raised before anything is sent.

    `images` and `documents` say whether the model reads images and PDF
    documents in messages. Content is never dropped: a message the model
    cannot read raises `UnsupportedSetting` whatever `on_unsupported` says.

    ```python
    model = OpenAIModel("o3-mini", api_key=key, capabilities=Capabilities(on_unsupported="fail"))
    ```
    """

    temperature: bool | None = None
    think: bool | None = None
    tool_choice: bool | None = None
    output: bool | None = None
    on_unsupported: OnUnsupported = "warn"
    images: bool | None = None
    documents: bool | None = None

    def allows(self, hint: Hint, *, model: str, default: bool = True, reason: str = "") -> bool:
        """Whether `hint` may be sent; applies the policy when it may not.

        Args:
            hint: the request hint about to be sent.
            model: the model name, for the message.
            default: the inferred support, used when the field is `None`.
            reason: why the model cannot take it, for the message.
        """
        declared: bool | None = getattr(self, hint)
        if default if declared is None else declared:
            return True
        self.refuse(hint, model=model, reason=reason)
        return False

    def refuse(self, hint: Hint, *, model: str, reason: str = "") -> None:
        """Apply the policy to a hint that cannot be sent as given."""
        if self.on_unsupported == "fail":
            raise UnsupportedSetting(model, hint, reason)
        if self.on_unsupported == "warn":
            detail = f" ({reason})" if reason else ""
            _log.debug(
                "model %r does not support %s%s; left out of the request", model, hint, detail
            )

    def check_media(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        images: bool = True,
        documents: bool = True,
        image_urls: bool = True,
        reason: str = "",
    ) -> None:
        """Refuse images or documents in `messages` that the model cannot take.

        Args:
            messages: the request's messages.
            model: the model name, for the message.
            images, documents: the inferred support, used when the field is `None`.
            image_urls: whether images may be given by URL (else bytes only).
            reason: why the provider cannot take them, naming the fix.

        Raises:
            UnsupportedSetting: always, whatever `on_unsupported` says: dropping
                content would change what the model is asked.
            ValueError, TypeError: a message's parts disagree with it.
        """
        if not any(map(_PARTS, messages)):  # the common case, at C speed
            return
        from ._content import Document, Image
        from ._messages import check_parts

        found: list[Image | Document] = []
        for message in messages:
            if message.parts:
                check_parts(message)
                found.extend(message.media)
        if not found:
            return
        if any(isinstance(p, Image) for p in found):
            if not (images if self.images is None else self.images):
                raise UnsupportedSetting(model, "images", reason or _DECLARE.format("images"))
            if not image_urls and any(isinstance(p, Image) and p.data is None for p in found):
                raise UnsupportedSetting(
                    model,
                    "images by URL",
                    "it takes image bytes only: fetch the image and use Image.from_bytes",
                )
        if any(not isinstance(p, Image) for p in found) and not (
            documents if self.documents is None else self.documents
        ):
            raise UnsupportedSetting(model, "documents", reason or _DECLARE.format("documents"))


_PARTS = operator.attrgetter("parts")
_DECLARE = "use a model that reads {0}, or declare it with Capabilities({0}=True) if this one does"
