"""`Capabilities`: which request hints a model honours, and what happens to the rest."""

from __future__ import annotations

import logging
from typing import Literal

import attrs

from .._errors import UnsupportedSetting

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

    ```python
    model = OpenAIModel("o3-mini", api_key=key, capabilities=Capabilities(on_unsupported="fail"))
    ```
    """

    temperature: bool | None = None
    think: bool | None = None
    tool_choice: bool | None = None
    output: bool | None = None
    on_unsupported: OnUnsupported = "warn"

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
