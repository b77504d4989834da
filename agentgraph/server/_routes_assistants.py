"""Assistants: one default per graph, named by the graph's id."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ._api import Api, Refused, assistant_id_of, assistant_json, json_response, read_body

__all__ = ("AssistantRoutes",)


class AssistantRoutes:
    """Each graph's default assistant."""

    def __init__(self, api: Api) -> None:
        self.api = api

    async def get(self, request: Request) -> Response:
        graph_id = self.api.graph_id(request.path_params["assistant_id"])
        return json_response(assistant_json(graph_id, assistant_id_of(graph_id)))

    def matching(self, body: dict[str, object]) -> list[dict[str, object]]:
        wanted = body.get("graph_id")
        return [
            assistant_json(name, assistant_id_of(name))
            for name in sorted(self.api.graphs)
            if wanted in (None, name)
        ]

    async def search(self, request: Request) -> Response:
        body = await read_body(request)
        found = self.matching(body)
        offset, limit = int(body.get("offset", 0)), int(body.get("limit", 10))
        return json_response(found[offset : offset + limit])

    async def count(self, request: Request) -> Response:
        return json_response(len(self.matching(await read_body(request))))

    async def drawing(self, request: Request) -> Response:
        graph = self.api.graphs[self.api.graph_id(request.path_params["assistant_id"])]
        nodes = [
            {"id": name, "type": "runnable", "data": name} for name in (n.name for n in graph.nodes)
        ]
        return json_response({"nodes": nodes, "edges": [], "mermaid": graph.to_mermaid()})

    async def schemas(self, request: Request) -> Response:
        graph_id = self.api.graph_id(request.path_params["assistant_id"])
        schema = {"type": "object", "properties": {"messages": {"type": "array"}}}
        return json_response(
            {
                "graph_id": graph_id,
                "input_schema": schema,
                "output_schema": schema,
                "state_schema": schema,
                "config_schema": {"type": "object"},
                "context_schema": None,
            }
        )

    async def subgraphs(self, request: Request) -> Response:
        self.api.graph_id(request.path_params["assistant_id"])
        return json_response({})

    async def refuse_change(self, request: Request) -> Response:
        raise Refused(405, "this server keeps one assistant per graph; it cannot be changed")

    def routes(self) -> list[Route]:
        """The routes, for the app."""
        return [
            Route("/assistants/search", self.search, methods=["POST"]),
            Route("/assistants/count", self.count, methods=["POST"]),
            Route("/assistants", self.refuse_change, methods=["POST"]),
            Route("/assistants/{assistant_id}", self.get, methods=["GET"]),
            Route("/assistants/{assistant_id}", self.refuse_change, methods=["PATCH", "DELETE"]),
            Route("/assistants/{assistant_id}/graph", self.drawing, methods=["GET"]),
            Route("/assistants/{assistant_id}/schemas", self.schemas, methods=["GET"]),
            Route("/assistants/{assistant_id}/subgraphs", self.subgraphs, methods=["GET"]),
            Route(
                "/assistants/{assistant_id}/subgraphs/{namespace:path}",
                self.subgraphs,
                methods=["GET"],
            ),
        ]
