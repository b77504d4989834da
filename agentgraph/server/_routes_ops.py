"""Operations: liveness (`/ok`), readiness (`/ready`), `/info` and Prometheus `/metrics`."""

from __future__ import annotations

import platform
import time
from collections.abc import Sequence

import anyio
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import __version__
from ._api import Api, json_response
from ._heartbeats import WorkerBeat, heartbeats
from ._logs import LOG
from ._metrics import ServerMetrics
from ._worker import Worker

__all__ = ("FLAGS", "OpsRoutes")

READY_TIMEOUT = 5.0
"""Seconds the store has to answer a readiness check."""

FLAGS = {
    "assistants": True,
    "crons": True,
    "thread_ttl": True,
    "langsmith": False,
    "strict_resume": False,
    "stream_namespaces": False,
}
"""What this server does, as the LangGraph SDK clients read `/info`'s `flags`."""


class OpsRoutes:
    """What a load balancer, an orchestrator and Prometheus ask a server process."""

    def __init__(self, api: Api, *, workers: Sequence[Worker], metrics: ServerMetrics) -> None:
        self.api = api
        self.workers = tuple(workers)
        self.metrics = metrics
        self.store = "postgresql" if api.queue.postgres else "sqlite"

    async def ok(self, request: Request) -> Response:
        """Liveness: the process answers (nothing else is asked)."""
        return json_response({"ok": True})

    async def ready(self, request: Request) -> Response:
        """Readiness: the store answers, and each worker of this process beats."""
        try:
            with anyio.fail_after(READY_TIMEOUT):
                beats: list[WorkerBeat] = await self.api.call(heartbeats, self.api.queue)
        except Exception as exc:
            # The probe is open to anyone: the error's text (hosts, users) goes to the log.
            LOG.warning("readiness: the store did not answer: %s", exc)
            error = "timeout" if isinstance(exc, TimeoutError) else type(exc).__name__
            return json_response({"ok": False, "store": {"kind": self.store, "error": error}}, 503)
        now = time.time()
        alive = {beat.worker for beat in beats if beat.alive(now)}
        here = {
            worker.name: worker.name in alive and worker.error is None for worker in self.workers
        }
        ready = all(here.values())
        answer = {
            "ok": ready,
            "store": {"kind": self.store, "ok": True},
            "workers": {"here": here, "alive": len(alive)},
        }
        return json_response(answer, 200 if ready else 503)

    async def info(self, request: Request) -> Response:
        return json_response(
            {
                "version": __version__,
                "agentgraph_version": __version__,
                "python_version": platform.python_version(),
                "store": self.store,
                "workers": len(self.workers),
                "flags": FLAGS,
            }
        )

    async def scrape(self, request: Request) -> Response:
        """The metrics in Prometheus' text format, counted in the store now."""
        text = await self.api.call(generate_latest, self.metrics.registry)
        return Response(text, media_type=CONTENT_TYPE_LATEST)

    def routes(self) -> list[Route]:
        return [
            Route("/ok", self.ok, methods=["GET"]),
            Route("/ready", self.ready, methods=["GET"]),
            Route("/info", self.info, methods=["GET"]),
            Route("/metrics", self.scrape, methods=["GET"]),
        ]
