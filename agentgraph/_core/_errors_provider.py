"""Errors of model providers and of the settings sent to them (drawn in
`agentgraph._core._errors`)."""

from __future__ import annotations

from typing import Any

from ._errors_root import AgentGraphError

__all__ = (
    "AuthenticationError",
    "BadRequestError",
    "InvalidTranscript",
    "NotFoundError",
    "ProviderConfigError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderStatusError",
    "ProviderTimeout",
    "RateLimitError",
    "ResponseFormatError",
    "ServerError",
    "UnsupportedSetting",
)


class ProviderError(AgentGraphError):
    """A model provider failed. `.retryable` says whether trying again can help.

    `.attempts` is how many requests the client made before giving up; when the
    client already retried (`attempts > 1`) the runner does not retry the node
    again, so attempts never multiply.

    The message (and so `str`, `repr` and the traceback) has secrets masked,
    the provider's own words included. `.body` is the error body as received
    (parsed JSON, or the start of the text), with only the client's own key
    masked: a server may echo other secrets there, so log the error, not its
    body.
    """

    retryable: bool = False
    attempts: int = 1

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        body: Any = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
        code: str | None = None,
        request_id: str | None = None,
    ) -> None:
        self.provider = provider
        self.status = status
        self.body = body
        self.retry_after = retry_after
        self.code = code
        self.request_id = request_id
        if retryable is not None:
            self.retryable = retryable
        prefix = f"{provider}: " if provider else ""
        suffix = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"{prefix}{message}{suffix}")


class ProviderConnectionError(ProviderError, ConnectionError):
    """The provider could not be reached, or the connection broke. Retryable."""

    retryable = True


class ProviderTimeout(ProviderError, TimeoutError):
    """The provider did not answer in time. Retryable."""

    retryable = True


class ProviderStatusError(ProviderError):
    """The provider answered with an error status or sent an error inside a stream."""


class AuthenticationError(ProviderStatusError):
    """The credentials were refused (401/403)."""


class NotFoundError(ProviderStatusError):
    """The endpoint or the model does not exist."""


class BadRequestError(ProviderStatusError, ValueError):
    """The request was refused as malformed (400/422); retrying cannot help."""


class InvalidTranscript(BadRequestError):
    """A conversation the provider's wire would refuse, caught before any request.

    Never sent and never retried. `.rule` names the broken rule (for example
    `"missing-result"`), `.index` the position of the message that breaks it
    in the messages given, and `.wire` the wire format checked.
    """

    def __init__(
        self, rule: str, index: int, detail: str, *, wire: str, provider: str = ""
    ) -> None:
        self.rule = rule
        self.index = index
        self.wire = wire
        super().__init__(
            f"transcript refused before sending ({rule}, message {index}): {detail}",
            provider=provider,
            retryable=False,
        )

    def __reduce__(self) -> tuple[object, ...]:
        detail = str(self).split("): ", 1)[-1]
        prefix = f"{self.provider}: " if self.provider else ""
        if detail.startswith(prefix):
            detail = detail[len(prefix) :]
        return _rebuild, (self.rule, self.index, detail, self.wire, self.provider)


def _rebuild(rule: str, index: int, detail: str, wire: str, provider: str) -> InvalidTranscript:
    return InvalidTranscript(rule, index, detail, wire=wire, provider=provider)


class RateLimitError(ProviderStatusError):
    """429. Retryable unless the quota is exhausted or the request can never fit."""

    retryable = True


class ServerError(ProviderStatusError):
    """5xx or 529 overload. Retryable."""

    retryable = True


class ResponseFormatError(ProviderError, ValueError):
    """A response that does not follow the provider's wire format."""


class ProviderConfigError(ProviderError, ValueError):
    """A model string or client configuration that cannot work (unknown provider, no key)."""


class UnsupportedSetting(AgentGraphError, ValueError):
    """A setting the model does not support, refused under the `fail` capability policy."""

    def __init__(self, model: str, setting: str, reason: str = "") -> None:
        self.model = model
        self.setting = setting
        detail = f": {reason}" if reason else ""
        super().__init__(f"model {model!r} does not support {setting}{detail}")
