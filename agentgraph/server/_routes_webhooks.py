"""A run's webhook: checked when the run is created, and its delivery log."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ._api import Api, Refused, json_response
from ._auth import caller, uid
from ._destinations import destination
from ._outbox import Outbox
from ._webhook_settings import WebhookSettings

__all__ = ("WebhookRoutes", "checked_webhook")


async def checked_webhook(body: dict[str, Any], settings: WebhookSettings) -> str | None:
    """The run's `webhook` URL once allowed, None when it has none; 422 otherwise."""
    url = body.get("webhook")
    if url is None:
        return None
    if settings.secret is None:
        raise Refused(
            422,
            "this server sends no webhooks: it has no signing secret "
            "(set AGENTGRAPH_WEBHOOK_SECRET to whsec_ and base64)",
        )
    await destination(url, settings)
    return str(url)


class WebhookRoutes:
    """`GET /threads/{thread_id}/runs/{run_id}/webhooks`: a run's deliveries and attempts."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.outbox = Outbox(api.queue)

    async def log(self, request: Request) -> Response:
        thread_id, run_id = request.path_params["thread_id"], request.path_params["run_id"]
        value = {"thread_id": uid(thread_id), "run_id": uid(run_id)}
        where = await self.api.access.check(request, "runs", "read", value)
        run = await self.api.run(thread_id, run_id, where=where, caller=caller(request.scope))
        return json_response(await self.api.call(self.outbox.log, run.run_id))

    def routes(self) -> list[Route]:
        return [Route("/threads/{thread_id}/runs/{run_id}/webhooks", self.log, methods=["GET"])]
