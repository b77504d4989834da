"""Authorization hooks: a LangGraph SDK `Auth` object's `authenticate` function and its
per-resource, per-action handlers, as the server calls them.

The object is read through the attributes the SDK keeps for servers
(`_authenticate_handler`, `_handlers`, `_global_handlers`), so an `auth.py`
written for LangGraph runs unchanged and `langgraph_sdk` is not imported here.

`Access.authenticate` runs on every request but `/ok` (see `_auth_middleware`):
the function gets the parameters it names (`request`, `body`, `path`,
`method`, `path_params`, `query_params`, `headers`, `authorization`) and
returns the user: a string (its identity), a dict with an `identity`, or an
object with one. `Access.check` runs in each route before it acts, with the
resource, the action and the action's value (a dict the handler may change:
a create's `metadata`, the store's `namespace`). The most specific handler
decides: the resource's and action's, else the resource's, else the
action's on every resource, else the global one; with none, the request is
allowed. A run's action (`runs`: `create`, `read`, `update`, `delete`,
`search`) goes to a `runs` handler when the hooks have one, else to its
thread's, as LangGraph's server asks (`threads`: `create_run`, `read`,
`update`, `delete`). It returns None or True (allowed), False (403), or a filter on the
resources' metadata (`_auth_filter`); an `HTTPException` it raises is
answered with its status and detail.
"""

from __future__ import annotations

import hashlib
import inspect
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
from starlette.requests import Request

from .._core._errors import UsageError
from ._api import Refused
from ._auth_filter import EVERYTHING, Filter

__all__ = ("IDENTITY", "USER", "Access", "AuthContext", "AuthUser", "caller", "plain")

IDENTITY = "agentgraph.identity"
"""The scope key of the caller's identity, there once an `authenticate` function named it."""
USER = "agentgraph.user"
"""The scope key of the caller's `AuthUser`, there on a server with authorization hooks."""

INJECTED = frozenset(
    {"request", "body", "path", "method", "path_params", "query_params", "headers", "authorization"}
)
"""The parameters an `authenticate` function may name."""

Handler = Callable[..., Awaitable[Any]]

_RUNS_AS_THREADS = {
    "create": "create_run",
    "read": "read",
    "update": "update",
    "delete": "delete",
    "search": "read",
}
"""The thread's action a run's action is, for hooks with no `runs` handler (LangGraph's)."""


def _refusal(exc: Exception) -> Refused | None:
    """The answer an `HTTPException` (the SDK's, or Starlette's) raised by a hook asks for."""
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status < 600:
        return None
    return Refused(status, str(getattr(exc, "detail", None) or "refused"))


@attrs.frozen
class AuthUser:
    """The user an `authenticate` function returned, as handlers read it (`ctx.user`):
    `identity`, `display_name`, `is_authenticated` and `permissions`, and every other
    field of a dict user (`user["org"]`, `user.org`) or attribute of an object user."""

    identity: str
    display_name: str
    is_authenticated: bool
    permissions: tuple[str, ...]
    fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
    source: Any = attrs.field(default=None, repr=False)

    @classmethod
    def of(cls, user: Any) -> AuthUser:
        """Normalise what an `authenticate` function returned; a 500 for anything that
        names no identity."""
        if isinstance(user, str):
            return cls(user, user, True, ())
        fields: Mapping[str, Any] = user if isinstance(user, Mapping) else {}
        source = None if isinstance(user, Mapping) else user

        def read(name: str, default: Any) -> Any:
            if source is None:
                return fields.get(name, default)
            return getattr(source, name, default)

        identity = read("identity", None)
        if not isinstance(identity, str):
            raise Refused(
                500,
                f"the authenticate function returned a {type(user).__name__} without an "
                "identity: return a string, a dict with an 'identity', or an object with one",
            )
        permissions = read("permissions", ()) or ()
        if isinstance(permissions, str) or not isinstance(permissions, Sequence):
            raise Refused(500, "the authenticate function's permissions are a list of strings")
        return cls(
            identity,
            str(read("display_name", None) or identity),
            bool(read("is_authenticated", True)),
            tuple(str(p) for p in permissions),
            fields,
            source,
        )

    def __getitem__(self, key: str) -> Any:
        if key in ("identity", "display_name", "is_authenticated", "permissions"):
            return getattr(self, key)
        if self.source is not None:
            try:
                return self.source[key]
            except (TypeError, KeyError, AttributeError):
                if hasattr(self.source, key):
                    return getattr(self.source, key)
            raise KeyError(key)
        return self.fields[key]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __contains__(self, key: object) -> bool:
        try:
            self[str(key)]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        extra = self.fields if self.source is None else {}
        base = ("identity", "display_name", "is_authenticated", "permissions")
        return iter(dict.fromkeys((*base, *extra)))


ANONYMOUS = AuthUser("", "", False, ())
"""The user of a server whose hooks have no `authenticate` function."""


@attrs.frozen
class AuthContext:
    """What a handler is told (`ctx`): the user, their permissions, and the resource and
    action asked for (the fields of the SDK's `AuthContext`)."""

    permissions: tuple[str, ...]
    user: AuthUser
    resource: str
    action: str


def caller(scope: Mapping[str, Any]) -> str:
    """The caller's key: the identity authentication named, else a SHA-256 of the
    `x-api-key` header, else `""`."""
    identity = scope.get(IDENTITY)
    if isinstance(identity, str):
        return identity
    for name, value in scope.get("headers") or ():
        if name == b"x-api-key":
            return hashlib.sha256(value).hexdigest()
    return ""


def plain(value: Any) -> Any:
    """A handler's value back as JSON data: ids as strings, namespaces as lists."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def uid(value: Any) -> Any:
    """An id as the SDK's values type it (a UUID), or as given when it is none."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return value


class Access:
    """The authorization hooks of a server (none: every request is allowed as it is)."""

    def __init__(self, auth: object | None = None) -> None:
        self.on = auth is not None
        self._authenticate: Handler | None = None
        self._handlers: dict[tuple[str, str], Handler] = {}
        self._global: Handler | None = None
        self._wants: frozenset[str] = frozenset()
        if auth is None:
            return
        handlers = getattr(auth, "_handlers", None)
        everywhere = getattr(auth, "_global_handlers", None)
        if not isinstance(handlers, dict) or not isinstance(everywhere, list):
            raise UsageError(
                f"auth is a langgraph_sdk.Auth (its handlers registered with @auth.on), "
                f"not a {type(auth).__name__}"
            )
        self._handlers = {key: found[-1] for key, found in handlers.items() if found}
        self._global = everywhere[-1] if everywhere else None
        self._authenticate = getattr(auth, "_authenticate_handler", None)
        if self._authenticate is not None:
            self._wants = self._parameters(self._authenticate)

    @staticmethod
    def _parameters(fn: Handler) -> frozenset[str]:
        """The parameters `fn` names, each one the server can give it."""
        wanted = set()
        for name, parameter in inspect.signature(fn).parameters.items():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            if name in INJECTED:
                wanted.add(name)
            elif parameter.default is parameter.empty:
                raise UsageError(
                    f"the authenticate function asks for {name!r}; it may ask for "
                    f"{', '.join(sorted(INJECTED))}"
                )
        return frozenset(wanted)

    @property
    def wants_body(self) -> bool:
        """Whether the `authenticate` function reads the request's body."""
        return "body" in self._wants

    async def authenticate(self, given: Mapping[str, Any]) -> AuthUser:
        """The user the `authenticate` function names from `given` (the parameters of
        `INJECTED` it asks for); `Refused` with an `HTTPException`'s status and detail."""
        if self._authenticate is None:
            return ANONYMOUS
        try:
            found = await self._authenticate(**{name: given[name] for name in self._wants})
        except Exception as exc:
            refusal = _refusal(exc)
            if refusal is None:
                raise
            refusal.headers = dict(getattr(exc, "headers", None) or {})
            raise refusal from exc
        return AuthUser.of(found)

    def handler(self, resource: str, action: str) -> tuple[Handler | None, str, str]:
        """The most specific handler of `resource` and `action` (None when none is), and
        the resource and action it is told of. A run's action goes to a `runs` handler
        when there is one, else to its thread's (`create` as `create_run`)."""
        told = [(resource, action)]
        if resource == "runs":
            told.append(("threads", _RUNS_AS_THREADS[action]))
        for named, done in told:
            for key in ((named, done), (named, "*")):
                if key in self._handlers:
                    return self._handlers[key], named, done
        named, done = told[-1]
        if ("*", done) in self._handlers:
            return self._handlers[("*", done)], named, done
        return self._global, named, done

    async def check(
        self, request: Request, resource: str, action: str, value: dict[str, Any]
    ) -> Filter:
        """Ask the handler of `resource` and `action` about `value` (which it may change):
        the filter the resources acted on must pass (`EVERYTHING` when it returns None or
        True); 403 when it returns False."""
        if not self.on:
            return EVERYTHING
        handler, resource, action = self.handler(resource, action)
        if handler is None:
            return EVERYTHING
        user = request.scope.get(USER, ANONYMOUS)
        ctx = AuthContext(user.permissions, user, resource, action)
        try:
            result = await handler(ctx=ctx, value=value)
        except Exception as exc:
            refusal = _refusal(exc)
            if refusal is None:
                raise
            raise refusal from exc
        if result is None or result is True:
            return EVERYTHING
        if result is False:
            raise Refused(403, f"not allowed: {action} on {resource}")
        if resource == "store" or not isinstance(result, Mapping):
            raise Refused(
                500,
                f"the {resource} {action} handler returned {type(result).__name__}: it returns "
                "None or True (allow), False (refuse)"
                + ("" if resource == "store" else ", or a filter on metadata"),
            )
        try:
            return Filter.of(result)
        except ValueError as exc:
            raise Refused(500, str(exc)) from exc
