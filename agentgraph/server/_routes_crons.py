"""Crons: scheduled runs on a thread, or stateless on a new thread each tick.

Create (`POST /threads/{id}/runs/crons`, `POST /runs/crons`), search, count,
get, update (`PATCH`) and delete, as the SDK's cron client calls them. The
body a cron is created with is its `payload`: each tick queues a run with its
`input`, `config`, `context`, `metadata`, `stream_mode` and
`multitask_strategy`. The workers fire the ticks (`_scheduler`).
"""

from __future__ import annotations

import datetime
import time
import uuid
from typing import Any

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ._api import (
    Api,
    Refused,
    assistant_id_of,
    check_uuid,
    iso,
    json_response,
    read_body,
    run_settings,
    whole_number,
)
from ._auth import caller, plain, uid
from ._auth_filter import EVERYTHING, Filter
from ._crons import CRON_SORTS, CronStore, StoredCron, next_run
from ._mapping import run_context, typed
from ._routes_webhooks import checked_webhook
from ._schedule import check_schedule
from ._sse import event_names
from ._webhook_settings import WebhookSettings

__all__ = ("CronRoutes", "cron_json")

_STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")
_ON_COMPLETED = ("delete", "keep")
_FIELDS = (
    "cron_id",
    "assistant_id",
    "thread_id",
    "on_run_completed",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "payload",
    "user_id",
    "next_run_date",
    "metadata",
    "enabled",
    "now",
)
_RUN_KEYS = (
    "input",
    "config",
    "context",
    "metadata",
    "webhook",
    "interrupt_before",
    "interrupt_after",
    "stream_mode",
    "stream_subgraphs",
    "stream_resumable",
    "durability",
    "checkpoint_during",
)
"""The keys of a cron's body that describe its runs (kept in its payload)."""


def cron_json(cron: StoredCron) -> dict[str, Any]:
    """A cron as the clients read it."""
    return {
        "cron_id": cron.cron_id,
        "assistant_id": cron.assistant_id,
        "thread_id": cron.thread_id,
        "on_run_completed": cron.on_run_completed,
        "end_time": None if cron.end_time is None else iso(cron.end_time),
        "schedule": cron.schedule,
        "timezone": cron.timezone,
        "created_at": iso(cron.created_at),
        "updated_at": iso(cron.updated_at),
        "payload": cron.payload,
        "user_id": None,
        "next_run_date": None if cron.next_run_at is None else iso(cron.next_run_at),
        "metadata": cron.metadata,
        "enabled": cron.enabled,
    }


def _end_time(value: Any) -> float | None:
    """An ISO 8601 instant (UTC when it names no offset) as a Unix time; 422 otherwise."""
    if value is None:
        return None
    try:
        moment = datetime.datetime.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise Refused(422, f"end_time {value!r} is not an ISO 8601 date and time") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def _choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise Refused(422, f"{name} is one of {', '.join(choices)}, not {value!r}")
    return str(value)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise Refused(422, f"{name} is true or false, not {value!r}")
    return value


def _object(body: dict[str, Any], name: str) -> dict[str, Any]:
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Refused(422, f"{name} is a JSON object, not {value!r}")
    return value


class CronRoutes:
    """Crons, kept in `crons`, their runs' webhooks checked against `webhooks`.

    Each action is asked of the authorization hooks first (`crons` and the
    action), a cron they leave out refused as a missing one. A cron on a thread
    also asks for `runs` `create` on it, and any cron for `assistants` `read` on
    its assistant, as its runs will."""

    def __init__(
        self, api: Api, crons: CronStore, *, webhooks: WebhookSettings | None = None
    ) -> None:
        self.api = api
        self.crons = crons
        self.webhooks = webhooks or WebhookSettings()

    async def _check_runs(
        self, request: Request, assistant_id: Any, payload: dict[str, Any]
    ) -> str:
        """Check the runs a payload describes as creating one would; the assistant's id."""
        read = {"assistant_id": uid(assistant_id)}
        seen = await self.api.access.check(request, "assistants", "read", read)
        assistant = await self.api.assistant(assistant_id, where=seen)
        graph = self.api.graph(assistant.graph_id)
        settings = run_settings(assistant, payload)
        if typed(graph.input_type):
            run_context({"input": payload.get("input"), **settings}, graph.input_type)
        modes = payload.get("stream_mode") or ["values"]
        modes = [modes] if isinstance(modes, str) else modes
        if not isinstance(modes, list) or not all(isinstance(mode, str) for mode in modes):
            raise Refused(422, f"stream_mode is a mode or a list of modes, not {modes!r}")
        event_names(modes)
        _object(payload, "metadata")
        # Refused here as a run's would be: every tick's run is delivered to it.
        await checked_webhook(payload, self.webhooks)
        return assistant.assistant_id

    async def create(self, request: Request) -> Response:
        body = await read_body(request)
        thread_id = request.path_params.get("thread_id")
        value = {
            "payload": body,
            "schedule": body.get("schedule"),
            "cron_id": None,
            "thread_id": None if thread_id is None else uid(thread_id),
            "user_id": None,
            "end_time": body.get("end_time"),
            "metadata": _object(body, "metadata"),
        }
        made = await self.api.access.check(request, "crons", "create", value)
        body = plain(value["payload"])
        metadata = made.stamped(plain(value["metadata"]))  # the caller's filter finds it
        if "metadata" in body or metadata:
            body["metadata"] = metadata
        if thread_id is not None:
            run = {
                "thread_id": uid(thread_id),
                "assistant_id": uid(body.get("assistant_id")),
                "metadata": _object(body, "metadata"),
                "multitask_strategy": body.get("multitask_strategy", "enqueue"),
                "kwargs": {k: body[k] for k in _RUN_KEYS if k in body},
            }
            where = await self.api.access.check(request, "runs", "create", run)
            await self.api.thread(thread_id, where=where)
        assistant_id = await self._check_runs(request, body.get("assistant_id"), body)
        timezone = body.get("timezone")
        schedule = check_schedule(body.get("schedule"), timezone)
        strategy = _choice(
            body.get("multitask_strategy", "enqueue"), "multitask_strategy", _STRATEGIES
        )
        on_completed = None
        if thread_id is None:
            on_completed = _choice(
                body.get("on_run_completed", "delete"), "on_run_completed", _ON_COMPLETED
            )
        now = time.time()
        cron = StoredCron(
            cron_id=str(uuid.uuid4()),
            assistant_id=assistant_id,
            thread_id=thread_id,
            schedule=schedule,
            timezone=timezone,
            end_time=_end_time(body.get("end_time")),
            enabled=_flag(body.get("enabled", True), "enabled"),
            on_run_completed=on_completed,
            payload={**body, "multitask_strategy": strategy},
            metadata=_object(body, "metadata"),
            next_run_at=None,
            created_at=now,
            updated_at=now,
        )
        cron = _scheduled(cron, now)
        await self.api.call(self.crons.put, cron, owner=caller(request.scope) or None)
        self.api.wake()
        return json_response(cron_json(cron))

    async def cron(self, cron_id: str, *, where: Filter = EVERYTHING) -> StoredCron:
        check_uuid(cron_id, "cron id")
        found: StoredCron | None = await self.api.call(self.crons.get, cron_id)
        if found is None or not where.matches(found.metadata):
            raise Refused(404, f"no cron {cron_id!r}")
        return found

    async def _named(
        self, request: Request, action: str, value: dict[str, Any] | None = None
    ) -> StoredCron:
        """The cron the path names, once the hooks allow `action` on it with `value`."""
        cron_id = request.path_params["cron_id"]
        value = {"cron_id": uid(cron_id), **(value or {})}
        where = await self.api.access.check(request, "crons", action, value)
        return await self.cron(cron_id, where=where)

    async def get(self, request: Request) -> Response:
        return json_response(cron_json(await self._named(request, "read")))

    async def update(self, request: Request) -> Response:
        """Change a cron; a changed schedule, time zone, end or `enabled` sets its next
        tick anew from now."""
        body = await read_body(request)
        value = {"payload": body, "schedule": body.get("schedule")}
        cron = await self._named(request, "update", value)
        body = plain(value["payload"])
        payload = {**cron.payload, **{k: body[k] for k in _RUN_KEYS if k in body}}
        await self._check_runs(request, cron.assistant_id, payload)
        changes: dict[str, Any] = {"payload": payload}
        if "timezone" in body:
            changes["timezone"] = body["timezone"]
        if "schedule" in body or "timezone" in body:
            changes["schedule"] = check_schedule(
                body.get("schedule", cron.schedule), changes.get("timezone", cron.timezone)
            )
        if "end_time" in body:
            changes["end_time"] = _end_time(body["end_time"])
        if "enabled" in body:
            changes["enabled"] = _flag(body["enabled"], "enabled")
        if "on_run_completed" in body:
            if cron.thread_id is not None:
                raise Refused(422, "on_run_completed is for stateless crons only")
            changes["on_run_completed"] = _choice(
                body["on_run_completed"], "on_run_completed", _ON_COMPLETED
            )
        if "metadata" in body:
            changes["metadata"] = _object(body, "metadata")
        now = time.time()
        new = attrs.evolve(cron, **changes, updated_at=now)
        if any(name in changes for name in ("schedule", "end_time", "enabled")):
            new = _scheduled(new, now)
        await self.api.call(self.crons.replace, new)
        self.api.wake()
        return json_response(cron_json(new))

    async def delete(self, request: Request) -> Response:
        cron = await self._named(request, "delete")
        await self.api.call(self.crons.delete, cron.cron_id)
        return Response(status_code=204)

    async def _found(self, request: Request, body: dict[str, Any]) -> list[StoredCron]:
        """The crons a search body asks for, among those the hooks let the caller see."""
        value = {
            "assistant_id": uid(body.get("assistant_id")),
            "thread_id": uid(body.get("thread_id")),
            "metadata": _object(body, "metadata"),
            "limit": body.get("limit", 10),
            "offset": body.get("offset", 0),
        }
        where = await self.api.access.check(request, "crons", "search", value)
        body = {**body, "metadata": plain(value["metadata"])}
        assistant_id = body.get("assistant_id")
        if isinstance(assistant_id, str) and assistant_id in self.api.graphs:
            assistant_id = assistant_id_of(assistant_id)
        enabled = body.get("enabled")
        sort_by = _choice(body.get("sort_by", "created_at"), "sort_by", tuple(CRON_SORTS))
        order = _choice(body.get("sort_order", "desc"), "sort_order", ("asc", "desc"))
        found: list[StoredCron] = await self.api.call(
            self.crons.search,
            assistant_id=assistant_id,
            thread_id=body.get("thread_id"),
            enabled=None if enabled is None else _flag(enabled, "enabled"),
            metadata=_object(body, "metadata"),
            sort_by=sort_by,
            descending=order == "desc",
            only=where.sql("metadata", postgres=self.crons.postgres),
        )
        return found

    async def search(self, request: Request) -> Response:
        body = await read_body(request)
        found = await self._found(request, body)
        limit, offset = whole_number(body, "limit", 10), whole_number(body, "offset", 0)
        select = body.get("select") or [name for name in _FIELDS if name != "now"]
        if not isinstance(select, list) or not set(select) <= set(_FIELDS):
            raise Refused(422, f"select names some of {', '.join(_FIELDS)}, not {select!r}")
        now = iso(time.time())
        shown = [
            {k: v for k, v in {**cron_json(cron), "now": now}.items() if k in select}
            for cron in found[offset : offset + limit]
        ]
        headers = {"X-Pagination-Next": str(offset + limit)} if offset + limit < len(found) else {}
        return json_response(shown, headers=headers)

    async def count(self, request: Request) -> Response:
        return json_response(len(await self._found(request, await read_body(request))))

    def routes(self) -> list[Route]:
        """The routes, for the app."""
        one = "/runs/crons/{cron_id}"
        return [
            Route("/threads/{thread_id}/runs/crons", self.create, methods=["POST"]),
            Route("/runs/crons", self.create, methods=["POST"]),
            Route("/runs/crons/search", self.search, methods=["POST"]),
            Route("/runs/crons/count", self.count, methods=["POST"]),
            Route(one, self.get, methods=["GET"]),
            Route(one, self.update, methods=["PATCH"]),
            Route(one, self.delete, methods=["DELETE"]),
        ]


def _scheduled(cron: StoredCron, now: float) -> StoredCron:
    """`cron` with its next tick after `now` (None when disabled or ended)."""
    return attrs.evolve(cron, next_run_at=next_run(cron, now))
