"""Read routes shaped like the reference server's, answered by the query helper (DESIGN.md
section 12): `GET /api/v1/lineage`, `GET /api/v1/column-lineage`, the dataset resource
`GET /api/v1/namespaces/{namespace}/datasets/{name}`, and the field-lineage queries of section
8 under it (`.../fields`, `.../field-mappings`, `.../fields/{field}/operations`), and the DataHub
export `.../upstream-lineage?pathVersion=v1|v2` (the `upstreamLineage` aspect). `nodeId` may be a
DataHub URN; or, as the helper's structured arguments, `nodeType`, `namespace`, `name` (and
`field` for column lineage and the column traces) name the node when its id would be ambiguous. The recipe questions of section 9: `GET /api/v1/column-history?nodeId=...`,
`GET /api/v1/column-impact?nodeId=...` (or `nodeType`, `namespace`, `name`, `field`), `.../datasets/{name}/fields/{field}/directives?start&end`,
the dataset's tags `.../datasets/{name}/tags` and `GET /api/v1/tagged-fields?key=&value=&propagate=`.

Pictures (DESIGN.md section 12): `GET /lineage/view?nodeId=...&depth=20&columns=true&withDownstream=true&maxNodes=300`
is an HTML page for a node: the job/dataset graph around it (or with `columns=true` its column
graph, fields grouped by dataset) drawn by Graphviz as inline SVG, each node linked to its own
page, and the list of the answer's nodes (`query.picture.view_page`). Its errors are HTML pages
that say "error" (`<main id="lineage-error">`) with the same status codes as the JSON routes, and
503 when Graphviz's `dot` is not installed.

Namespaces and names are single URL-encoded path segments (`postgres%3A%2F%2Fdb%3A5432`), read
from the raw path so an encoded `/` stays inside its segment. Errors are JSON: 400 for a bad
argument, 404 for an unknown node, 503 when the warehouse cannot be read. The helper is
synchronous: each question runs in a worker thread.
"""

from __future__ import annotations

import os
from typing import Any, Callable
from urllib.parse import unquote

import anyio
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from lineage_assets.query.lineage_query import LineageQuery, WarehouseReadError
from lineage_assets.query.node_ids import NodeNotFound
from lineage_assets.query import picture
from lineage_assets.query.render import jsonable

API = "/api/v1"
VIEW = "/lineage/view"
NAMESPACES = f"{API}/namespaces/"


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": status, "error": code, "message": message}, status_code=status)


def _int(request: Request, key: str, default: int) -> int:
    value = request.query_params.get(key)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {value!r}") from None


def _bool(request: Request, key: str) -> bool:
    value = request.query_params.get(key, "false").lower()
    if value not in ("true", "false", "1", "0"):
        raise ValueError(f"{key} must be true or false, got {value!r}")
    return value in ("true", "1")


def _node(request: Request, fields: bool = False) -> dict[str, str | None]:
    """The node a question starts from: `nodeId`, or the structured `nodeType`, `namespace`,
    `name` (and `field` where `fields`) that name it unambiguously (DESIGN.md section 5), as the
    helper's keyword arguments."""
    p = request.query_params
    keys = {"node_type": "nodeType", "namespace": "namespace", "name": "name", **({"field": "field"} if fields else {})}
    named = {arg: p.get(key) for arg, key in keys.items()}
    if p.get("nodeId") is None and named["namespace"] is None and named["name"] is None:
        raise ValueError(f"the query parameter nodeId is required (or {', '.join(keys.values())})")
    return {"node_id": p.get("nodeId"), **named}


def _required(request: Request, key: str) -> str:
    value = request.query_params.get(key)
    if not value:
        raise ValueError(f"the query parameter {key} is required")
    return value


class ReadApi:
    """The read routes over one warehouse; one `LineageQuery` for the server's lifetime."""

    def __init__(self, warehouse: str):
        self.warehouse = warehouse
        self._query: LineageQuery | None = None

    def query(self) -> LineageQuery:
        if not os.path.isdir(self.warehouse):
            raise WarehouseReadError(f"warehouse {self.warehouse} does not exist (run `lineage-assets ingest` first)")
        if self._query is None:
            self._query = LineageQuery(self.warehouse)
        return self._query

    def close(self) -> None:
        if self._query is not None:
            self._query.close()
            self._query = None

    async def _answer(self, ask: Callable[[LineageQuery], BaseModel]) -> JSONResponse:
        try:
            answer = await anyio.to_thread.run_sync(lambda: ask(self.query()))
        except NodeNotFound as exc:
            return _error(404, "not_found", str(exc))
        except ValueError as exc:
            return _error(400, "bad_request", str(exc))
        except OSError as exc:  # WarehouseReadError
            return _error(503, "warehouse_unavailable", str(exc))
        return JSONResponse(jsonable(answer))

    def _by_field(self, ask: Callable[..., BaseModel]):
        """A route asking one question of a field (`nodeId`, or `nodeType`, `namespace`, `name`
        and `field`) and `depth` (default 20)."""
        async def route(request: Request) -> JSONResponse:
            async def run() -> JSONResponse:
                node, depth = _node(request, fields=True), _int(request, "depth", 20)
                return await self._answer(lambda q: ask(q, depth=depth, **node))
            return await _guard(run)
        return route

    async def lineage(self, request: Request) -> JSONResponse:
        async def run() -> JSONResponse:
            node, depth = _node(request), _int(request, "depth", 20)
            return await self._answer(lambda q: q.lineage(depth=depth, **node))
        return await _guard(run)

    async def column_lineage(self, request: Request) -> JSONResponse:
        async def run() -> JSONResponse:
            node, depth, down = _node(request, fields=True), _int(request, "depth", 20), _bool(request, "withDownstream")
            version, at = request.query_params.get("datasetVersion"), request.query_params.get("lineageAt")
            return await self._answer(
                lambda q: q.column_lineage(depth=depth, with_downstream=down, dataset_version=version, lineage_at=at, **node))
        return await _guard(run)

    async def tagged_fields(self, request: Request) -> JSONResponse:
        async def run() -> JSONResponse:
            key, value, propagate = _required(request, "key"), request.query_params.get("value"), _bool(request, "propagate")
            return await self._answer(lambda q: q.tagged_fields(key, value, propagate=propagate))
        return await _guard(run)

    async def namespaces(self, request: Request) -> JSONResponse:
        """`{namespace}/datasets/{name}[/fields[/{field}/operations] | /field-mappings]`."""
        async def run() -> JSONResponse:
            raw = request.scope.get("raw_path", request.url.path.encode()).decode("latin-1").split("?", 1)[0]
            parts = [unquote(p) for p in raw[len(NAMESPACES):].split("/")]
            if len(parts) < 3 or parts[1] != "datasets" or not parts[0] or not parts[2]:
                return _error(404, "not_found", f"no route {request.url.path}")
            ns, name, rest = parts[0], parts[2], parts[3:]
            p = request.query_params
            start, end = p.get("start"), p.get("end")
            if not rest:
                return await self._answer(lambda q: q.dataset(ns, name))
            if rest == ["fields"]:
                prefix, current = p.get("prefix"), _bool(request, "includeCurrent")
                return await self._answer(lambda q: q.fields(ns, name, start, end, prefix=prefix, include_current=current))
            if rest == ["field-mappings"]:
                direction, levels = p.get("direction", "backward"), _int(request, "levels", 1)
                return await self._answer(lambda q: q.field_mappings(ns, name, start, end, direction=direction, levels=levels))
            if rest == ["upstream-lineage"]:
                version = p.get("pathVersion", "v1")
                return await self._answer(lambda q: q.fine_grained_lineage(ns, name, path_version=version))
            if rest == ["tags"]:
                return await self._answer(lambda q: q.dataset_tags(ns, name))
            if len(rest) == 3 and rest[0] == "fields" and rest[2] == "directives" and rest[1]:
                field = rest[1]
                return await self._answer(lambda q: q.column_directives(ns, name, field, start, end))
            if len(rest) == 3 and rest[0] == "fields" and rest[2] == "operations" and rest[1]:
                field, direction = rest[1], p.get("direction", "backward")
                return await self._answer(lambda q: q.field_operations(ns, name, field, start, end, direction=direction))
            return _error(404, "not_found", f"no route {request.url.path}")
        return await _guard(run)

    async def view(self, request: Request) -> HTMLResponse:
        """The HTML page of a node (see the module docstring); errors as HTML pages."""
        def error(status: int, code: str, exc: Exception) -> HTMLResponse:
            return HTMLResponse(picture.error_page(status, code, str(exc)), status_code=status)

        try:
            node, depth = _required(request, "nodeId"), _int(request, "depth", 20)
            columns, down = _bool(request, "columns"), _bool(request, "withDownstream")
            max_nodes = _int(request, "maxNodes", picture.DEFAULT_MAX_NODES)
        except ValueError as exc:
            return error(400, "bad_request", exc)

        def page() -> str:
            return picture.view_page(self.query(), node, columns=columns, depth=depth, with_downstream=down,
                                     max_nodes=max_nodes, path=VIEW, api=API)

        try:
            text = await anyio.to_thread.run_sync(page)
        except NodeNotFound as exc:
            return error(404, "not_found", exc)
        except ValueError as exc:
            return error(400, "bad_request", exc)
        except picture.GraphvizMissing as exc:
            return error(503, "graphviz_missing", exc)
        except picture.GraphvizFailed as exc:
            return error(500, "graphviz_failed", exc)
        except OSError as exc:  # WarehouseReadError
            return error(503, "warehouse_unavailable", exc)
        return HTMLResponse(text)

    def routes(self) -> list[Route]:
        return [
            Route(VIEW, self.view, methods=["GET"]),
            Route(f"{API}/lineage", self.lineage, methods=["GET"]),
            Route(f"{API}/column-lineage", self.column_lineage, methods=["GET"]),
            Route(f"{API}/column-history", self._by_field(lambda q, **asked: q.column_history(**asked)), methods=["GET"]),
            Route(f"{API}/column-impact", self._by_field(lambda q, **asked: q.column_impact(**asked)), methods=["GET"]),
            Route(f"{API}/tagged-fields", self.tagged_fields, methods=["GET"]),
            Route(NAMESPACES + "{rest:path}", self.namespaces, methods=["GET"]),
        ]


async def _guard(run: Callable[[], Any]) -> JSONResponse:
    """A bad query parameter (read before the helper is asked) is a 400 too."""
    try:
        return await run()
    except ValueError as exc:
        return _error(400, "bad_request", str(exc))
