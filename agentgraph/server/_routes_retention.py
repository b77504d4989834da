"""`POST /threads/prune`: delete threads, or keep only their latest state."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ._api import Api, Refused, check_uuid, json_response, read_body
from ._auth import uid
from ._retention import STRATEGIES, Retention

__all__ = ("RetentionRoutes",)


class RetentionRoutes:
    """Pruning threads on request (a ttl prunes them on its own: see `Retention`); only
    the threads the authorization hooks let the caller delete (`threads` `delete`)."""

    def __init__(self, api: Api, retention: Retention) -> None:
        self.api = api
        self.retention = retention

    async def prune(self, request: Request) -> Response:
        """`{"thread_ids": [...], "strategy": "delete" | "keep_latest"}` → `{"pruned_count": n}`:
        the threads that exist and have no run pending or running are pruned."""
        body = await read_body(request)
        given = body.get("thread_ids")
        if not isinstance(given, list):
            raise Refused(422, "thread_ids is a list of thread ids")
        thread_ids = [check_uuid(str(thread_id), "thread id") for thread_id in given]
        strategy = body.get("strategy") or "delete"
        if strategy not in STRATEGIES:
            raise Refused(422, f"strategy is one of {list(STRATEGIES)}, not {strategy!r}")
        thread_ids = [t for t in thread_ids if await self._may_delete(request, t)]
        # Their checkpoint store records go at a worker's next sweep.
        pruned = await self.api.call(self.retention.prune, thread_ids, strategy)
        return json_response({"pruned_count": len(pruned)})

    async def _may_delete(self, request: Request, thread_id: str) -> bool:
        """Whether the hooks let the caller delete `thread_id` and see it: a thread
        they leave out is skipped as a missing one is, not counted."""
        where = await self.api.access.check(
            request, "threads", "delete", {"thread_id": uid(thread_id)}
        )
        try:
            await self.api.thread(thread_id, where=where)
        except Refused as missing:
            if missing.status != 404:
                raise
            return False
        return True

    def routes(self) -> list[Route]:
        return [Route("/threads/prune", self.prune, methods=["POST"])]
