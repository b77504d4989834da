"""Whether a webhook may go to a URL: its scheme, host and port, and every address its host
resolves to (no server-side request forgery).

The check runs when a run is created and again before each attempt, whose connection
goes to an address just checked (a name that resolved to a public address at first and
to a private one later is refused then).
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import anyio
import httpx

from ._api import Refused
from ._webhook_settings import WebhookSettings

__all__ = ("Destination", "destination", "resolve")

_DEFAULT_PORTS = {"http": 80, "https": 443}

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class Destination:
    """A webhook's URL and the checked addresses its host resolves to."""

    def __init__(self, url: httpx.URL, addresses: list[Address]) -> None:
        self.url = url
        self.addresses = addresses

    def pinned(self) -> httpx.URL:
        """The URL with its host replaced by the first checked address."""
        return self.url.copy_with(host=str(self.addresses[0]))


def _refusal(address: Address, settings: WebhookSettings) -> str | None:
    """Why `address` is refused, or None when it is allowed."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_unspecified or address.is_multicast:
        return "an unspecified or multicast address"
    if address.is_loopback:
        return None if settings.allow_loopback else "a loopback address"
    if address.is_link_local:
        return None if settings.allow_link_local else "a link-local address"
    if not address.is_global:
        return None if settings.allow_private else "a private address"
    return None


async def resolve(host: str, port: int) -> list[tuple[Any, ...]]:
    """The addresses of `host` (`getaddrinfo`'s answers)."""
    return list(await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM))


def _host_allowed(host: str, hosts: frozenset[str]) -> bool:
    return any(
        host == allowed or (allowed.startswith(".") and host.endswith(allowed)) for allowed in hosts
    )


async def destination(url: object, settings: WebhookSettings) -> Destination:
    """`url` checked against `settings`, with its host resolved; `Refused` (422) otherwise."""
    if not isinstance(url, str):
        raise Refused(422, "webhook is a URL")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise Refused(422, f"webhook {url!r} is not a URL: {exc}") from exc
    if parsed.scheme not in settings.schemes:
        raise Refused(
            422, f"webhook scheme {parsed.scheme!r} is not one of {sorted(settings.schemes)}"
        )
    host = parsed.host
    if not host:
        raise Refused(422, f"webhook {url!r} has no host")
    if settings.hosts is not None and not _host_allowed(host, settings.hosts):
        raise Refused(422, f"webhook host {host!r} is not among the allowed hosts")
    port = parsed.port or _DEFAULT_PORTS[parsed.scheme]
    if settings.ports is not None and port not in settings.ports:
        raise Refused(422, f"webhook port {port} is not among the allowed ports")
    try:
        found = await resolve(host, port)
    except OSError as exc:
        raise Refused(422, f"webhook host {host!r} does not resolve: {exc}") from exc
    addresses: list[Address] = []
    for _family, _type, _proto, _name, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        why = _refusal(address, settings)
        if why is not None:
            raise Refused(422, f"webhook host {host!r} resolves to {address}, {why}")
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise Refused(422, f"webhook host {host!r} resolves to no address")
    return Destination(parsed, addresses)
