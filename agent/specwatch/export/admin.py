"""The admin app: /metrics, /status, /healthz, /readyz (its own port, never the proxy's).

It only reads: a fresh reading of the analysis, health and A/B state per request. Routes that
change something (the A/B rollback switch) belong to their source and are passed in by
runtime.py (`routes`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from specwatch.export.status import Reading, status_document
from specwatch.httpjson import json_response


def admin_app(
    exposition: Callable[[], Awaitable[list[bytes]]],
    read: Callable[[], Awaitable[Reading]],
    ready: Callable[[], tuple[bool, str]],
    routes: Iterable[web.RouteDef] = (),
) -> web.Application:
    async def metrics(request: web.Request) -> web.StreamResponse:
        pieces = await exposition()  # written one by one: never joined into one body
        response = web.StreamResponse(headers={"Content-Type": CONTENT_TYPE_LATEST})
        response.content_length = sum(map(len, pieces))
        await response.prepare(request)
        for piece in pieces:
            await response.write(piece)
        await response.write_eof()
        return response

    async def status(_request: web.Request) -> web.Response:
        return json_response(status_document(await read()))

    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_request: web.Request) -> web.Response:
        is_ready, why = ready()
        return web.Response(status=200 if is_ready else 503, text=why + "\n")

    extra = list(routes)
    paths = sorted({route.path for route in extra if isinstance(route, web.RouteDef)})
    served = [*paths, "/metrics", "/status", "/healthz", "/readyz"]

    async def not_found(request: web.Request) -> web.Response:
        """A 404 that says what is here, and what to configure for what is not."""
        if request.path in served:  # there, for another method: what aiohttp would answer
            return json_response({"error": f"{request.method} is not allowed here"}, 405)
        error = f"no {request.path} on the admin port; it serves {', '.join(served)}"
        if request.path.startswith("/admin/") and not extra:
            error = (
                f"{request.path} exists when A/B is on: set ab.baseline_upstream "
                f"(--baseline-upstream URL of a vLLM without speculation)"
            )
        return json_response({"error": error}, 404)

    app = web.Application(client_max_size=4096)
    app.router.add_routes(extra)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/status", status)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
