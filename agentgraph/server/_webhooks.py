"""Webhook delivery: each due delivery POSTed, signed as Standard Webhooks say, and retried.

Every attempt carries `webhook-id` (the delivery's id, the same on every attempt: the
receiver's idempotency key), `webhook-timestamp` (unix seconds) and `webhook-signature`
(`v1,` and the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` under the secret). The
destination is checked again before each attempt, and the connection goes to an address
just checked; redirects are not followed (a 3xx is a failed attempt), and the answer's
body is never read. The attempt and what comes next are recorded after it, so a worker
killed between a receiver's 2xx and its record sends that delivery again: receivers
drop a `webhook-id` they have seen.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

import anyio
import anyio.to_thread
import httpx
import orjson

from ._api import Refused
from ._destinations import destination
from ._outbox import Delivery, Outbox, iso
from ._queue import RunQueue
from ._webhook_settings import WebhookSettings

__all__ = ("deliver_webhooks", "signature")

_POLL = 0.5
"""Seconds between looks for due deliveries."""
_BATCH = 64
"""Deliveries one worker attempts at once."""


def claim_term(settings: WebhookSettings) -> float:
    """Seconds a worker's claim on a delivery lasts: twice an attempt's timeout and 5 s,
    time enough to record the attempt. A killed worker's deliveries are taken up after it."""
    return settings.timeout * 2 + 5.0


def signature(key: bytes, webhook_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` of a body: `v1,` and its base64 HMAC-SHA256."""
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


_DROPPED = ("values", "kwargs", "metadata", "error")
"""The fields set to null, in this order, while a body is larger than `max_body`."""


def _body(delivery: Delivery, settings: WebhookSettings, sent_at: float) -> bytes:
    fields = {**delivery.body, "webhook_sent_at": iso(sent_at)}
    body = orjson.dumps(fields)
    for name in _DROPPED:
        if len(body) <= settings.max_body:
            break
        fields[name] = None
        body = orjson.dumps(fields)
    return body


async def _attempt(
    client: httpx.AsyncClient, delivery: Delivery, settings: WebhookSettings, key: bytes
) -> tuple[int | None, str | None]:
    """POST a delivery once: the answer's status and an error (None for a 2xx)."""
    where = await destination(delivery.url, settings)
    sent_at = time.time()
    timestamp = int(sent_at)
    body = _body(delivery, settings, sent_at)
    headers = {
        "host": where.url.netloc.decode("ascii"),
        "content-type": "application/json",
        "user-agent": "agentgraph-webhooks",
        "webhook-id": delivery.webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(key, delivery.webhook_id, timestamp, body),
    }
    extensions = {"sni_hostname": where.url.host} if where.url.scheme == "https" else {}
    request = client.build_request(
        "POST", where.pinned(), content=body, headers=headers, extensions=extensions
    )
    response = await client.send(request, stream=True)
    await response.aclose()
    if response.is_success:
        return response.status_code, None
    return response.status_code, f"answered {response.status_code}"


async def _deliver(
    outbox: Outbox, client: httpx.AsyncClient, delivery: Delivery, settings: WebhookSettings
) -> None:
    sent_at = time.time()
    status_code: int | None = None
    error: str | None = "the server has no webhook secret"
    key = settings.key
    if key is not None:
        with anyio.move_on_after(settings.timeout) as scope:
            try:
                status_code, error = await _attempt(client, delivery, settings, key)
            except Refused as refused:
                error = refused.detail
            except Exception as failed:  # a network error, or any other: a failed attempt
                error = (
                    f"{type(failed).__name__}: {failed}" if str(failed) else type(failed).__name__
                )
        if scope.cancelled_caught:
            error = f"no answer within {settings.timeout} s"
    await anyio.to_thread.run_sync(
        lambda: outbox.attempted(
            delivery, settings, sent_at=sent_at, status_code=status_code, error=error
        )
    )


async def deliver_webhooks(queue: RunQueue, settings: WebhookSettings, worker: str) -> None:
    """Deliver due webhooks from `queue`'s outbox until cancelled.

    Deliveries go through a connection of their own, so they never wait for the
    worker's runs to let go of theirs.
    """
    own = RunQueue(queue.where, schema=queue.schema)
    try:
        await _deliver_from(Outbox(own), settings, worker)
    finally:
        own.close()


async def _deliver_from(outbox: Outbox, settings: WebhookSettings, worker: str) -> None:
    term = claim_term(settings)
    # No proxy from the environment: the connection must go to the address checked.
    async with httpx.AsyncClient(
        follow_redirects=False, trust_env=False, timeout=settings.timeout
    ) as client:
        while True:
            due = await anyio.to_thread.run_sync(outbox.claim, worker, _BATCH, term)
            if not due:
                await anyio.sleep(_POLL)
                continue
            async with anyio.create_task_group() as tasks:
                for delivery in due:
                    tasks.start_soon(_deliver, outbox, client, delivery, settings)
