"""A run's deduplication key (its caller's key is `_auth.caller`'s).

A run is created with a deduplication key in the `Idempotency-Key` header
(the IETF draft's and Stripe's name for it, which both LangGraph SDKs send
through their `headers` option with nothing changed) or, for the items of a
batch that share one request, in the body's `idempotency_key`. While a run
created with that key by the same caller is pending or running, creating
another returns that run instead (header `Idempotent-Replayed: true`); once
it has ended, the key creates a new run. The key is scoped to the caller,
so two callers' keys never meet.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ._api import Refused

__all__ = ("MAX_KEY", "dedup_key")

MAX_KEY = 256
"""The longest deduplication key accepted, in characters."""


def dedup_key(body: Mapping[str, Any], headers: Mapping[str, str], caller: str) -> str | None:
    """The run's deduplication key as stored (the caller's and the key's digest), None when
    it has none; 422 for a key that is not a string of 1 to 256 characters, or two that
    differ."""
    given = body.get("idempotency_key")
    header = headers.get("idempotency-key")
    if header is not None:
        if given is not None and given != header:
            raise Refused(422, "the Idempotency-Key header and idempotency_key differ")
        given = header
    if given is None:
        return None
    if not isinstance(given, str) or not 0 < len(given) <= MAX_KEY:
        raise Refused(
            422, f"an idempotency key is a string of 1 to {MAX_KEY} characters, not {given!r:.300}"
        )
    return hashlib.sha256(f"{caller}\0{given}".encode()).hexdigest()
