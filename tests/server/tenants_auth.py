"""Two tenants, each with an API key: an `auth.py` written as a LangGraph user writes it.

Every resource a tenant makes gets their identity as its `owner` metadata, and
every read, search, update or delete is filtered on it; the store keeps each
tenant under a namespace of their own.
"""

from typing import Any

from langgraph_sdk import Auth

KEYS = {"key-alice": "alice", "key-bob": "bob"}

auth = Auth()


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes]) -> Auth.types.MinimalUserDict:
    key = headers.get(b"x-api-key", b"").decode()
    if key not in KEYS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Invalid API key")
    return {"identity": KEYS[key], "permissions": ["threads:write"]}


@auth.on
async def owner_only(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Auth.types.FilterType:
    filters = {"owner": ctx.user.identity}
    metadata = value.setdefault("metadata", {})
    metadata.update(filters)
    return filters


@auth.on.store
async def own_namespace(ctx: Auth.types.AuthContext, value: Auth.types.on.store.value) -> None:
    namespace = tuple(value["namespace"]) if value.get("namespace") else ()
    if not namespace or namespace[0] != ctx.user.identity:
        namespace = (ctx.user.identity, *namespace)
    value["namespace"] = namespace
