"""The OpenAPI 3.1 description of the agent server, written from its own routes.

`OPERATIONS` describes each route (method and path) the app serves: what it
does, its query parameters, its request body and its answer. `openapi` walks
the app's route table and writes one operation per route and method from it,
so the document lists exactly what the app serves; a route added without a
description is listed as undescribed, and the tests refuse that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.routing import BaseRoute, Route

__all__ = ("OPERATIONS", "UNDESCRIBED", "openapi")

UNDESCRIBED = "(not described)"
"""The summary of an operation `OPERATIONS` has no description of."""

JSON = dict[str, Any]


def _ref(name: str) -> JSON:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(required: Sequence[str] = (), **properties: JSON) -> JSON:
    schema: JSON = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def _list(item: JSON) -> JSON:
    return {"type": "array", "items": item}


_STR: JSON = {"type": "string"}
_UUID: JSON = {"type": "string", "format": "uuid"}
_TIME: JSON = {"type": "string", "format": "date-time"}
_INT: JSON = {"type": "integer", "minimum": 0}
_BOOL: JSON = {"type": "boolean"}
_NUM: JSON = {"type": "number"}
_ANY: JSON = {}
_MAP: JSON = {"type": "object", "additionalProperties": True}
_NULLABLE_STR: JSON = {"type": ["string", "null"]}
_STRATEGY: JSON = {"enum": ["reject", "interrupt", "rollback", "enqueue"]}
_SORT: JSON = {"enum": ["asc", "desc"]}
_RUN_STATUS: JSON = {"enum": ["pending", "running", "success", "error", "timeout", "interrupted"]}
_THREAD_STATUS: JSON = {"enum": ["idle", "busy", "interrupted", "error"]}
_STREAM_MODE: JSON = {
    "oneOf": [
        _STR,
        _list(_STR),
    ],
    "description": "values, updates, messages, messages-tuple, events, debug, custom",
}
_TTL: JSON = {
    "oneOf": [
        {"type": "number", "exclusiveMinimum": 0},
        _obj(
            ["ttl"],
            ttl={"type": "number", "exclusiveMinimum": 0, "description": "minutes"},
            strategy={"enum": ["delete", "keep_latest"]},
        ),
    ],
    "description": "Minutes after its last change the thread is pruned, and how.",
}
_PAGE: JSON = {"limit": _INT, "offset": _INT}

SCHEMAS: dict[str, JSON] = {
    "Error": _obj(["detail"], detail=_STR),
    "Config": _obj(
        tags=_list(_STR),
        recursion_limit=_INT,
        configurable=_MAP,
    ),
    "Assistant": _obj(
        ["assistant_id", "graph_id", "name", "version"],
        assistant_id=_UUID,
        graph_id=_STR,
        name=_STR,
        description=_NULLABLE_STR,
        config=_ref("Config"),
        context=_MAP,
        metadata=_MAP,
        version={"type": "integer"},
        created_at=_TIME,
        updated_at=_TIME,
    ),
    "Thread": _obj(
        ["thread_id", "status"],
        thread_id=_UUID,
        created_at=_TIME,
        updated_at=_TIME,
        metadata=_MAP,
        status=_THREAD_STATUS,
        values=_MAP,
        interrupts=_MAP,
    ),
    "Checkpoint": _obj(
        thread_id=_UUID,
        checkpoint_ns=_STR,
        checkpoint_id={"type": ["string", "null"]},
        checkpoint_map={"type": ["object", "null"]},
    ),
    "ThreadState": _obj(
        ["values", "next", "checkpoint"],
        values=_MAP,
        next=_list(_STR),
        tasks=_list(_MAP),
        metadata=_MAP,
        created_at={"type": ["string", "null"]},
        checkpoint=_ref("Checkpoint"),
        parent_checkpoint={"oneOf": [_ref("Checkpoint"), {"type": "null"}]},
        interrupts=_list(_MAP),
    ),
    "Run": _obj(
        ["run_id", "thread_id", "assistant_id", "status"],
        run_id=_UUID,
        thread_id=_UUID,
        assistant_id=_UUID,
        created_at=_TIME,
        updated_at=_TIME,
        status=_RUN_STATUS,
        metadata=_MAP,
        kwargs=_MAP,
        multitask_strategy=_STRATEGY,
    ),
    "RunCreate": _obj(
        ["assistant_id"],
        assistant_id={"type": "string", "description": "an assistant's id or a graph's id"},
        input=_ANY,
        command=_obj(resume=_ANY, update=_ANY, goto=_ANY),
        config=_ref("Config"),
        context=_MAP,
        metadata=_MAP,
        stream_mode=_STREAM_MODE,
        stream_subgraphs=_BOOL,
        interrupt_before=_list(_STR),
        interrupt_after=_list(_STR),
        checkpoint=_ref("Checkpoint"),
        checkpoint_id=_STR,
        webhook={"type": "string", "format": "uri"},
        multitask_strategy=_STRATEGY,
        if_not_exists={"enum": ["create", "reject"]},
        on_completion={"enum": ["delete", "keep"]},
        on_disconnect={"enum": ["cancel", "continue"]},
        after_seconds=_NUM,
    ),
    "Cron": _obj(
        ["cron_id", "assistant_id", "schedule"],
        cron_id=_UUID,
        assistant_id=_UUID,
        thread_id={"type": ["string", "null"]},
        schedule=_STR,
        timezone=_NULLABLE_STR,
        end_time={"type": ["string", "null"]},
        enabled=_BOOL,
        on_run_completed={"enum": ["delete", "keep"]},
        payload=_MAP,
        metadata=_MAP,
        next_run_date={"type": ["string", "null"]},
        created_at=_TIME,
        updated_at=_TIME,
    ),
    "CronCreate": _obj(
        ["assistant_id", "schedule"],
        assistant_id=_STR,
        schedule={"type": "string", "description": "five fields of a crontab line"},
        timezone=_STR,
        end_time=_TIME,
        enabled=_BOOL,
        on_run_completed={"enum": ["delete", "keep"]},
        input=_ANY,
        config=_ref("Config"),
        context=_MAP,
        metadata=_MAP,
        webhook={"type": "string", "format": "uri"},
        multitask_strategy=_STRATEGY,
    ),
    "Item": _obj(
        ["namespace", "key", "value"],
        namespace=_list(_STR),
        key=_STR,
        value=_MAP,
        created_at=_TIME,
        updated_at=_TIME,
        score={"type": ["number", "null"]},
    ),
    "Delivery": _obj(
        webhook_id=_STR,
        url=_STR,
        status={"enum": ["pending", "delivered", "failed"]},
        created_at=_TIME,
        next_attempt_at={"type": ["string", "null"]},
        attempts=_list(
            _obj(
                attempt={"type": "integer"},
                sent_at=_TIME,
                ended_at=_TIME,
                status_code={"type": ["integer", "null"]},
                error=_NULLABLE_STR,
            )
        ),
    ),
}


def _op(
    summary: str,
    tag: str,
    *,
    body: JSON | None = None,
    query: Mapping[str, JSON] | None = None,
    answer: JSON | None = None,
    status: str = "200",
    media: str = "application/json",
) -> JSON:
    """One operation: its words, query parameters, body and answer."""
    operation: JSON = {"summary": summary, "tags": [tag]}
    if query:
        operation["parameters"] = [
            {"name": name, "in": "query", "required": False, "schema": schema}
            for name, schema in query.items()
        ]
    if body is not None:
        operation["requestBody"] = {
            "required": False,
            "content": {"application/json": {"schema": body}},
        }
    ok: JSON = {"description": "OK" if status == "200" else "Done"}
    if answer is not None:
        ok["content"] = {media: {"schema": answer}}
    operation["responses"] = {
        status: ok,
        "4XX": {
            "description": "Refused: the detail says why",
            "content": {"application/json": {"schema": _ref("Error")}},
        },
    }
    return operation


_SSE = "text/event-stream"
_EVENTS: JSON = {"type": "string", "description": "server-sent events: event and data lines"}
_SEARCH = {"metadata": _MAP, **_PAGE}
_ASSISTANT_BODY = _obj(
    ["graph_id"],
    graph_id=_STR,
    assistant_id=_UUID,
    name=_STR,
    description=_STR,
    config=_ref("Config"),
    context=_MAP,
    metadata=_MAP,
    if_exists={"enum": ["raise", "do_nothing"]},
)
_THREAD_BODY = _obj(
    thread_id=_UUID,
    metadata=_MAP,
    if_exists={"enum": ["raise", "do_nothing"]},
    ttl=_TTL,
)
_HISTORY_BODY = _obj(
    limit=_INT, before={"oneOf": [_STR, _ref("Checkpoint")]}, metadata=_MAP, checkpoint=_MAP
)

OPERATIONS: dict[tuple[str, str], JSON] = {
    # -- operations
    ("GET", "/ok"): _op("Liveness: the process answers", "operations", answer=_obj(ok=_BOOL)),
    ("GET", "/ready"): _op(
        "Readiness: the store answers and this process's workers beat (503 otherwise)",
        "operations",
        answer=_obj(ok=_BOOL, store=_MAP, workers=_MAP),
    ),
    ("GET", "/info"): _op(
        "Versions, the store's kind and the capability flags the clients read",
        "operations",
        answer=_obj(
            version=_STR,
            agentgraph_version=_STR,
            python_version=_STR,
            store={"enum": ["sqlite", "postgresql"]},
            workers=_INT,
            flags={"type": "object", "additionalProperties": _BOOL},
        ),
    ),
    ("GET", "/metrics"): _op(
        "Prometheus metrics, counted in the store when scraped",
        "operations",
        answer={"type": "string"},
        media="text/plain",
    ),
    ("GET", "/openapi.json"): _op("This description", "operations", answer={"type": "object"}),
    ("GET", "/docs"): _op(
        "This description, rendered (Swagger UI, served by the server itself)",
        "operations",
        answer={"type": "string"},
        media="text/html",
    ),
    # -- assistants
    ("POST", "/assistants"): _op(
        "Create an assistant", "assistants", body=_ASSISTANT_BODY, answer=_ref("Assistant")
    ),
    ("POST", "/assistants/search"): _op(
        "Search assistants",
        "assistants",
        body=_obj(
            graph_id=_STR,
            name=_STR,
            sort_by=_STR,
            sort_order=_SORT,
            select=_list(_STR),
            **_SEARCH,
        ),
        answer=_list(_ref("Assistant")),
    ),
    ("POST", "/assistants/count"): _op(
        "Count assistants",
        "assistants",
        body=_obj(graph_id=_STR, name=_STR, metadata=_MAP),
        answer={"type": "integer"},
    ),
    ("GET", "/assistants/{assistant_id}"): _op(
        "Get an assistant", "assistants", answer=_ref("Assistant")
    ),
    ("PATCH", "/assistants/{assistant_id}"): _op(
        "Update an assistant (a new version)",
        "assistants",
        body=_obj(
            graph_id=_STR,
            name=_STR,
            description=_STR,
            config=_ref("Config"),
            context=_MAP,
            metadata=_MAP,
        ),
        answer=_ref("Assistant"),
    ),
    ("DELETE", "/assistants/{assistant_id}"): _op(
        "Delete an assistant",
        "assistants",
        query={"delete_threads": _BOOL},
        status="204",
    ),
    ("POST", "/assistants/{assistant_id}/versions"): _op(
        "List an assistant's versions",
        "assistants",
        body=_obj(**_SEARCH),
        answer=_list(_ref("Assistant")),
    ),
    ("POST", "/assistants/{assistant_id}/latest"): _op(
        "Make one of an assistant's versions its current one",
        "assistants",
        body=_obj(["version"], version={"type": "integer"}),
        answer=_ref("Assistant"),
    ),
    ("GET", "/assistants/{assistant_id}/graph"): _op(
        "An assistant's graph, drawn as nodes and edges",
        "assistants",
        query={"xray": {"oneOf": [_BOOL, _INT]}},
        answer=_obj(nodes=_list(_MAP), edges=_list(_MAP)),
    ),
    ("GET", "/assistants/{assistant_id}/schemas"): _op(
        "An assistant's input, output, state, config and context schemas",
        "assistants",
        answer=_obj(
            graph_id=_STR,
            input_schema=_MAP,
            output_schema=_MAP,
            state_schema=_MAP,
            config_schema=_MAP,
            context_schema=_MAP,
        ),
    ),
    ("GET", "/assistants/{assistant_id}/subgraphs"): _op(
        "An assistant's subgraphs' schemas",
        "assistants",
        query={"recurse": _BOOL},
        answer=_MAP,
    ),
    ("GET", "/assistants/{assistant_id}/subgraphs/{namespace}"): _op(
        "The schemas of an assistant's subgraphs under a namespace",
        "assistants",
        query={"recurse": _BOOL},
        answer=_MAP,
    ),
    # -- threads
    ("POST", "/threads"): _op(
        "Create a thread (with a ttl: pruned once that long unchanged)",
        "threads",
        body=_THREAD_BODY,
        answer=_ref("Thread"),
    ),
    ("POST", "/threads/search"): _op(
        "Search threads",
        "threads",
        body=_obj(
            status=_THREAD_STATUS,
            values=_MAP,
            ids=_list(_UUID),
            sort_by={
                "enum": ["thread_id", "status", "created_at", "updated_at", "state_updated_at"]
            },
            sort_order=_SORT,
            select=_list(
                {
                    "enum": [
                        "thread_id",
                        "created_at",
                        "updated_at",
                        "metadata",
                        "config",
                        "context",
                        "status",
                        "values",
                        "interrupts",
                    ]
                }
            ),
            extract={"type": "object", "additionalProperties": _STR, "maxProperties": 10},
            **_SEARCH,
        ),
        answer=_list(_ref("Thread")),
    ),
    ("POST", "/threads/count"): _op(
        "Count threads",
        "threads",
        body=_obj(status=_THREAD_STATUS, metadata=_MAP, values=_MAP),
        answer={"type": "integer"},
    ),
    ("POST", "/threads/prune"): _op(
        "Prune idle threads: delete them, or keep only their latest state",
        "threads",
        body=_obj(
            ["thread_ids"],
            thread_ids=_list(_UUID),
            strategy={"enum": ["delete", "keep_latest"]},
        ),
        answer=_obj(pruned_count=_INT),
    ),
    ("GET", "/threads/{thread_id}"): _op("Get a thread", "threads", answer=_ref("Thread")),
    ("PATCH", "/threads/{thread_id}"): _op(
        "Update a thread's metadata or ttl",
        "threads",
        body=_obj(metadata=_MAP, ttl=_TTL),
        answer=_ref("Thread"),
    ),
    ("DELETE", "/threads/{thread_id}"): _op(
        "Delete a thread with its runs and checkpoints", "threads", status="204"
    ),
    ("POST", "/threads/{thread_id}/copy"): _op(
        "Copy a thread with its checkpoints", "threads", answer=_ref("Thread")
    ),
    ("GET", "/threads/{thread_id}/state"): _op(
        "A thread's current state", "threads", answer=_ref("ThreadState")
    ),
    ("POST", "/threads/{thread_id}/state"): _op(
        "Update a thread's state (a new checkpoint)",
        "threads",
        body=_obj(
            values=_MAP,
            as_node=_STR,
            checkpoint=_ref("Checkpoint"),
            checkpoint_id=_STR,
        ),
        answer=_obj(checkpoint=_ref("Checkpoint")),
    ),
    ("POST", "/threads/{thread_id}/state/checkpoint"): _op(
        "A thread's state at a checkpoint",
        "threads",
        body=_obj(checkpoint=_ref("Checkpoint")),
        answer=_ref("ThreadState"),
    ),
    ("GET", "/threads/{thread_id}/state/{checkpoint_id}"): _op(
        "A thread's state at a checkpoint", "threads", answer=_ref("ThreadState")
    ),
    ("GET", "/threads/{thread_id}/history"): _op(
        "A thread's checkpoints, newest first",
        "threads",
        query={"limit": _INT, "before": _STR},
        answer=_list(_ref("ThreadState")),
    ),
    ("POST", "/threads/{thread_id}/history"): _op(
        "A thread's checkpoints, newest first",
        "threads",
        body=_HISTORY_BODY,
        answer=_list(_ref("ThreadState")),
    ),
    # -- runs
    ("POST", "/threads/{thread_id}/runs"): _op(
        "Start a run on a thread in the background",
        "runs",
        body=_ref("RunCreate"),
        answer=_ref("Run"),
    ),
    ("GET", "/threads/{thread_id}/runs"): _op(
        "A thread's runs, newest first",
        "runs",
        query={**_PAGE, "status": _RUN_STATUS, "select": _list(_STR)},
        answer=_list(_ref("Run")),
    ),
    ("POST", "/threads/{thread_id}/runs/stream"): _op(
        "Start a run on a thread and stream its events",
        "runs",
        body=_ref("RunCreate"),
        answer=_EVENTS,
        media=_SSE,
    ),
    ("POST", "/threads/{thread_id}/runs/wait"): _op(
        "Start a run on a thread and answer its final values",
        "runs",
        body=_ref("RunCreate"),
        answer=_MAP,
    ),
    ("GET", "/threads/{thread_id}/runs/{run_id}"): _op("Get a run", "runs", answer=_ref("Run")),
    ("DELETE", "/threads/{thread_id}/runs/{run_id}"): _op(
        "Delete an ended run", "runs", status="204"
    ),
    ("POST", "/threads/{thread_id}/runs/{run_id}/cancel"): _op(
        "Cancel a run",
        "runs",
        query={"wait": _BOOL, "action": {"enum": ["interrupt", "rollback"]}},
        answer=_ref("Run"),
    ),
    ("GET", "/threads/{thread_id}/runs/{run_id}/join"): _op(
        "Wait for a run's end: its thread's values", "runs", answer=_MAP
    ),
    ("GET", "/threads/{thread_id}/runs/{run_id}/stream"): _op(
        "Stream a run's events (from `Last-Event-ID` on a reconnect)",
        "runs",
        query={"stream_mode": _STREAM_MODE, "cancel_on_disconnect": _BOOL},
        answer=_EVENTS,
        media=_SSE,
    ),
    ("GET", "/threads/{thread_id}/stream"): _op(
        "Stream the events of a thread's runs", "runs", answer=_EVENTS, media=_SSE
    ),
    ("GET", "/threads/{thread_id}/runs/{run_id}/webhooks"): _op(
        "A run's webhook deliveries and their attempts",
        "runs",
        answer=_list(_ref("Delivery")),
    ),
    ("POST", "/runs"): _op(
        "Start a stateless run in the background",
        "runs",
        body=_ref("RunCreate"),
        answer=_ref("Run"),
    ),
    ("POST", "/runs/stream"): _op(
        "Start a stateless run and stream its events",
        "runs",
        body=_ref("RunCreate"),
        answer=_EVENTS,
        media=_SSE,
    ),
    ("POST", "/runs/wait"): _op(
        "Start a stateless run and answer its final values",
        "runs",
        body=_ref("RunCreate"),
        answer=_MAP,
    ),
    ("POST", "/runs/batch"): _op(
        "Start several stateless runs",
        "runs",
        body=_list(_ref("RunCreate")),
        answer=_list(_ref("Run")),
    ),
    ("POST", "/runs/cancel"): _op(
        "Cancel several runs, or every run of a status",
        "runs",
        body=_obj(thread_id=_UUID, run_ids=_list(_UUID), status=_RUN_STATUS),
        query={"action": {"enum": ["interrupt", "rollback"]}},
        status="204",
    ),
    # -- crons
    ("POST", "/threads/{thread_id}/runs/crons"): _op(
        "Schedule runs on a thread", "crons", body=_ref("CronCreate"), answer=_ref("Cron")
    ),
    ("POST", "/runs/crons"): _op(
        "Schedule stateless runs", "crons", body=_ref("CronCreate"), answer=_ref("Cron")
    ),
    ("POST", "/runs/crons/search"): _op(
        "Search crons",
        "crons",
        body=_obj(
            assistant_id=_STR,
            thread_id=_UUID,
            enabled=_BOOL,
            sort_by=_STR,
            sort_order=_SORT,
            select=_list(_STR),
            **_PAGE,
        ),
        answer=_list(_ref("Cron")),
    ),
    ("POST", "/runs/crons/count"): _op(
        "Count crons",
        "crons",
        body=_obj(assistant_id=_STR, thread_id=_UUID),
        answer={"type": "integer"},
    ),
    ("GET", "/runs/crons/{cron_id}"): _op("Get a cron", "crons", answer=_ref("Cron")),
    ("PATCH", "/runs/crons/{cron_id}"): _op(
        "Update a cron",
        "crons",
        body=_obj(
            schedule=_STR,
            timezone=_STR,
            end_time=_TIME,
            enabled=_BOOL,
            on_run_completed={"enum": ["delete", "keep"]},
            input=_ANY,
            metadata=_MAP,
        ),
        answer=_ref("Cron"),
    ),
    ("DELETE", "/runs/crons/{cron_id}"): _op("Delete a cron", "crons", status="204"),
    # -- store
    ("PUT", "/store/items"): _op(
        "Put an item in the store",
        "store",
        body=_obj(
            ["namespace", "key", "value"],
            namespace=_list(_STR),
            key=_STR,
            value=_MAP,
            index={"oneOf": [{"type": "boolean"}, _list(_STR)]},
            ttl={"type": ["number", "null"]},
        ),
        status="204",
    ),
    ("GET", "/store/items"): _op(
        "Get an item from the store",
        "store",
        query={"namespace": _STR, "key": _STR},
        answer=_ref("Item"),
    ),
    ("DELETE", "/store/items"): _op(
        "Delete an item from the store",
        "store",
        body=_obj(["namespace", "key"], namespace=_list(_STR), key=_STR),
        status="204",
    ),
    ("POST", "/store/items/search"): _op(
        "Search the store's items under a namespace",
        "store",
        body=_obj(namespace_prefix=_list(_STR), filter=_MAP, query=_STR, **_PAGE),
        answer=_obj(items=_list(_ref("Item"))),
    ),
    ("POST", "/store/namespaces"): _op(
        "List the store's namespaces",
        "store",
        body=_obj(prefix=_list(_STR), suffix=_list(_STR), max_depth=_INT, **_PAGE),
        answer=_obj(namespaces=_list(_list(_STR))),
    ),
}

_PARAMETER = re.compile(r"{([^}:]+)(?::[^}]+)?}")


def _path(route_path: str) -> tuple[str, list[str]]:
    """A Starlette path as OpenAPI writes it (`{name:path}` → `{name}`), and its
    parameters' names."""
    names = _PARAMETER.findall(route_path)
    return _PARAMETER.sub(lambda m: "{" + m.group(1) + "}", route_path), names


def openapi(routes: Sequence[BaseRoute], *, version: str) -> JSON:
    """The OpenAPI 3.1 document of `routes` (the app's route table)."""
    paths: dict[str, JSON] = {}
    for route in routes:
        if not isinstance(route, Route) or not route.include_in_schema:
            continue
        path, names = _path(route.path)
        for method in sorted((route.methods or set()) - {"HEAD"}):
            described = OPERATIONS.get((method, path))
            operation = dict(described) if described else _op(UNDESCRIBED, "undescribed")
            parameters = [
                {"name": name, "in": "path", "required": True, "schema": _STR} for name in names
            ]
            if parameters or "parameters" in operation:
                operation["parameters"] = parameters + list(operation.get("parameters", ()))
            slug = re.sub(r"[^a-z0-9]+", "_", path.lower()).strip("_") or "root"
            operation["operationId"] = f"{method.lower()}_{slug}"
            paths.setdefault(path, {})[method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "agentgraph agent server",
            "version": version,
            "description": (
                "Assistants, threads, runs, crons and a store, as the LangGraph SDK "
                "clients drive them; with an API key set, every request but /ok, "
                "/ready, /docs and /openapi.json carries it in `x-api-key`."
            ),
        },
        "paths": paths,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"}},
        },
        "security": [{"apiKey": []}, {}],
    }
