"""The admin port (never the proxy's): /metrics, /status, /healthz, /readyz, and with A/B on
GET /admin/ab and POST /admin/rollback.

The reading routes take a fresh reading of the analysis, health and A/B state per request. The
one route that changes something, the rollback switch, changes where traffic goes, so it needs
`Authorization: Bearer TOKEN` (the token in `ab.admin_token_file`), except on an admin port
bound to loopback with no token configured.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from specwatch import conventions as C
from specwatch.core.httpjson import json_response
from specwatch.export.reading import Reading
from specwatch.export.status import status_document
from specwatch.proxy.ab import ABRouter


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


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


def read_token(path: Path | None) -> str | None:
    """The admin token from its file (stripped); None when no file is configured."""
    if path is None:
        return None
    token = path.read_text().strip()
    if not token:
        raise ValueError(f"the admin token file {path} is empty")
    return token


def authorized(header: str | None, token: str | None, loopback: bool) -> bool:
    """Behaviour-changing admin calls: free on a loopback-only admin port, else the token."""
    if token is None:
        return loopback
    if header is None or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header.removeprefix("Bearer ").encode(), token.encode())


def admin_routes(router: ABRouter, token: str | None, loopback: bool) -> list[web.RouteDef]:
    """GET /admin/ab (the state) and POST /admin/rollback {"rollback": bool}."""

    async def ab_state(_request: web.Request) -> web.Response:
        return json_response(router.snapshot().as_dict())

    async def rollback(request: web.Request) -> web.Response:
        if not authorized(request.headers.get(C.Header.AUTHORIZATION), token, loopback):
            why = (
                "a bearer token is required"
                if token is not None
                else "the admin port is not loopback-only: set ab.admin_token_file"
            )
            return json_response({"error": why}, 401 if token is not None else 403)
        try:
            body = orjson.loads(await request.read())
            on = body["rollback"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            on = None
        if not isinstance(on, bool):
            return json_response(
                {"error": 'expected {"rollback": true} or {"rollback": false}'}, 400
            )
        reason = f"admin request from {request.remote}"
        router.hold(C.ABSource.ADMIN, on, reason)
        if not on:  # rolling forward by hand also clears an auto-rollback
            router.hold(C.ABSource.AUTO, False, reason)
        return json_response(router.snapshot().as_dict())

    return [web.get("/admin/ab", ab_state), web.post("/admin/rollback", rollback)]
