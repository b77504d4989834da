"""The agent server's ASGI app: the routes, the API key check and the in-process workers."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from .._core._errors import RunInputError
from .._core._graph import Graph
from .._core._runner import GraphRunner
from .._core._versions import ResumePolicy
from ..memory import PostgresMemory, SQLiteMemory
from ._api import Api, Refused, is_open, json_response
from ._auth import Access
from ._auth_middleware import Authenticated
from ._crons import CronStore
from ._metrics import ServerMetrics
from ._priority import PriorityAssigner
from ._queue import RunQueue
from ._retention import Retention
from ._routes_assistants import AssistantRoutes
from ._routes_crons import CronRoutes
from ._routes_docs import DocsRoutes
from ._routes_ops import OpsRoutes
from ._routes_retention import RetentionRoutes
from ._routes_runs import RunRoutes
from ._routes_store import StoreRoutes
from ._routes_threads import ThreadRoutes
from ._routes_webhooks import WebhookRoutes
from ._settings import ServerSettings
from ._worker import Worker

__all__ = ("server_app",)


class _ApiKey(BaseHTTPMiddleware):
    def __init__(self, app: Any, key: str) -> None:
        super().__init__(app)
        self.key = key

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if not is_open(request.url.path) and request.headers.get("x-api-key") != self.key:
            return json_response({"detail": "a valid x-api-key header is required"}, 401)
        return await call_next(request)


async def _refused(request: Request, exc: Exception) -> Response:
    if isinstance(exc, Refused):
        return json_response({"detail": exc.detail}, exc.status, exc.headers)
    return json_response({"detail": str(exc)}, 422)


def _policy(settings: ServerSettings, runner: GraphRunner | None) -> ResumePolicy:
    """The resume policy of a run whose assistant names none."""
    if settings.resume_policy is not None:
        return settings.resume_policy
    if runner is not None and runner.versions is not None:
        return runner.versions.policy
    return "latest"


def server_app(
    graphs: Mapping[str, Graph[Any, Any]],
    path: str | os.PathLike[str],
    *,
    settings: ServerSettings | None = None,
    runner: GraphRunner | None = None,
    schema: str = "agentgraph",
) -> Starlette:
    """An agent server for `graphs` (by graph id) on the database at `path`.

    `path` is an SQLite file, or a PostgreSQL connection string
    (`postgresql://…`; the tables live in `schema`), which any number of
    API and worker processes may share.

    The LangGraph SDK clients drive it (`get_client(url=...)`). Its
    lifespan starts `settings.workers` workers, each on a thread of its own.
    With `settings.auth`, every request but the open ones (`/ok`, `/ready`, the API's
    description) is authenticated, and each
    route asks the hooks before it acts.
    """
    settings = settings or ServerSettings()
    where = os.fspath(path)
    queue = RunQueue(where, schema=schema)
    metrics = ServerMetrics(queue)
    workers = [
        Worker(
            where,
            graphs,
            runner=runner,
            concurrency=settings.concurrency,
            run_timeout=settings.run_timeout,
            grace=settings.grace,
            schema=schema,
            webhooks=settings.webhooks,
            limits=settings.limits,
            on_claimed=metrics.claimed,
            run_retention=settings.run_retention,
            sweep_every=settings.sweep_every,
        )
        for _ in range(settings.workers)
    ]

    def wake() -> None:
        for worker in workers:
            worker.wake()

    priority = None if settings.priority is None else PriorityAssigner(settings.priority)
    access = Access(settings.auth)
    api = Api(queue, graphs, wake=wake, access=access)
    crons = CronStore(where, schema=schema)
    retention = Retention(queue)
    memory: PostgresMemory | SQLiteMemory = (
        PostgresMemory(where, schema=schema) if queue.postgres else SQLiteMemory(where)
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Word of runs changed by other processes wakes this one's streams and waits.
        stopping = threading.Event()
        listener = threading.Thread(target=queue.listen_events, args=(stopping,), daemon=True)
        listener.start()
        for worker in workers:
            worker.start()
        try:
            yield
        finally:
            stopping.set()
            for worker in workers:
                worker.stop(wait=False)
            for worker in workers:
                worker.stop()
            await anyio.to_thread.run_sync(listener.join)
            queue.close()
            crons.close()
            await memory.aclose()

    key = settings.api_key or os.environ.get("AGENTGRAPH_API_KEY") or None
    routes: list[BaseRoute] = [
        *OpsRoutes(api, workers=workers, metrics=metrics).routes(),
        *AssistantRoutes(api).routes(),
        *RetentionRoutes(api, retention).routes(),
        *ThreadRoutes(api, retention).routes(),
        *CronRoutes(api, crons, webhooks=settings.webhooks).routes(),
        *RunRoutes(
            api,
            resume_policy=_policy(settings, runner),
            webhooks=settings.webhooks,
            priority=priority,
        ).routes(),
        *WebhookRoutes(api).routes(),
        *StoreRoutes(api, memory).routes(),
    ]
    routes += DocsRoutes(lambda: routes).routes()
    middleware = [Middleware(_ApiKey, key=key)] if key else []
    if access.on:
        middleware.append(Middleware(Authenticated, access=access, routes=routes))
    return Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={RunInputError: _refused},
    )
