"""Where a server's webhooks may go, how they are signed, and how hard delivery tries."""

from __future__ import annotations

import base64
import binascii
import os
from typing import Any

import attrs

__all__ = ("WebhookSettings",)

_PREFIX = "whsec_"


def _env_secret() -> str | None:
    return os.environ.get("AGENTGRAPH_WEBHOOK_SECRET") or None


def _env_loopback() -> bool:
    return os.environ.get("AGENTGRAPH_WEBHOOK_ALLOW_LOOPBACK") == "1"


def _secret_form(
    instance: object, attribute: attrs.Attribute[str | None], value: str | None
) -> None:
    if value is None:
        return
    try:
        key = base64.b64decode(value.removeprefix(_PREFIX), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("a webhook secret is 'whsec_' followed by base64") from exc
    if not value.startswith(_PREFIX) or not key:
        raise ValueError("a webhook secret is 'whsec_' followed by base64")


def _positive(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if value <= 0:
        raise ValueError(f"{attribute.name} is above 0, not {value}")


@attrs.frozen(kw_only=True)
class WebhookSettings:
    """The webhooks of an agent server: a run's end POSTed to the URL its client gave.

    Args:
        secret: the signing secret, `whsec_` and base64 (Standard Webhooks); default
            `$AGENTGRAPH_WEBHOOK_SECRET`. Without one, a run asking for a webhook is
            refused (422): webhooks are never sent unsigned.
        schemes: the URL schemes allowed. Default `https` and `http`.
        hosts: the host names allowed (`example.com`, or `.example.com` for its
            subdomains); None (the default) for any host whose addresses are allowed.
        ports: the ports allowed; None (the default) for any.
        allow_loopback: allow loopback addresses (127.0.0.0/8, ::1); default True when
            `$AGENTGRAPH_WEBHOOK_ALLOW_LOOPBACK` is `1`.
        allow_link_local: allow link-local addresses (169.254.0.0/16, fe80::/10, where
            cloud metadata services answer). Default False.
        allow_private: allow the other addresses that are not global (10.0.0.0/8,
            172.16.0.0/12, 192.168.0.0/16, fc00::/7, 100.64.0.0/10...). Default False.
        timeout: seconds one attempt may take, connecting included. Default 10.
        max_attempts: attempts before a delivery is given up. Default 12.
        max_age: seconds after a run's end when a delivery is given up. Default 86,400.
        backoff: seconds before the first retry, doubled for each next one. Default 5.
        max_backoff: the longest wait between two attempts. Default 3,600.
        max_body: the largest body sent, in bytes; a bigger one is sent with
            `values`, then `kwargs`, `metadata` and `error` set to null until it fits.
            Default 1 MiB.
    """

    secret: str | None = attrs.field(factory=_env_secret, validator=_secret_form, repr=False)
    schemes: frozenset[str] = frozenset({"https", "http"})
    hosts: frozenset[str] | None = None
    ports: frozenset[int] | None = None
    allow_loopback: bool = attrs.field(factory=_env_loopback)
    allow_link_local: bool = False
    allow_private: bool = False
    timeout: float = attrs.field(default=10.0, validator=_positive)
    max_attempts: int = attrs.field(default=12, validator=_positive)
    max_age: float = attrs.field(default=86_400.0, validator=_positive)
    backoff: float = attrs.field(default=5.0, validator=_positive)
    max_backoff: float = attrs.field(default=3_600.0, validator=_positive)
    max_body: int = attrs.field(default=1024 * 1024, validator=_positive)

    @property
    def key(self) -> bytes | None:
        """The secret's bytes, which sign each delivery; None without a secret."""
        if self.secret is None:
            return None
        return base64.b64decode(self.secret.removeprefix(_PREFIX))

    def delay(self, attempts: int) -> float:
        """Seconds to wait after `attempts` failed attempts."""
        return float(min(self.backoff * 2 ** (attempts - 1), self.max_backoff))
