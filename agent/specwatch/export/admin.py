"""The admin app: /metrics, /status, /healthz, /readyz (its own port, never the proxy's).

With A/B configured: GET /admin/ab (the state) and POST /admin/rollback {"rollback": bool}.
The POST changes where traffic goes, so it needs `Authorization: Bearer TOKEN` (the token in
`ab.admin_token_file`), except on an admin port bound to loopback with no token configured.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from specwatch.analysis.analyzer import Snapshot
from specwatch.export.status import status_document
from specwatch.health import HealthSnapshot
from specwatch.sources.ab import ABRouter, authorized


def _json(document: object, status: int = 200) -> web.Response:
    body = orjson.dumps(document, option=orjson.OPT_INDENT_2)
    return web.Response(status=status, body=body, content_type="application/json")


def admin_app(
    registry: CollectorRegistry,
    source: Callable[[], tuple[Snapshot, HealthSnapshot]],
    ready: Callable[[], tuple[bool, str]],
    router: ABRouter | None = None,
    token: str | None = None,
    loopback: bool = True,
) -> web.Application:
    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def status(_request: web.Request) -> web.Response:
        snapshot, health = source()
        return _json(status_document(snapshot, health))

    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_request: web.Request) -> web.Response:
        is_ready, why = ready()
        return web.Response(status=200 if is_ready else 503, text=why + "\n")

    async def ab_state(_request: web.Request) -> web.Response:
        assert router is not None
        return _json(router.state())

    async def rollback(request: web.Request) -> web.Response:
        assert router is not None
        if not authorized(request.headers.get("Authorization"), token, loopback):
            why = (
                "a bearer token is required"
                if token is not None
                else "the admin port is not loopback-only: set ab.admin_token_file"
            )
            return _json({"error": why}, 401 if token is not None else 403)
        try:
            body = orjson.loads(await request.read())
            on = body["rollback"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            on = None
        if not isinstance(on, bool):
            return _json({"error": 'expected {"rollback": true} or {"rollback": false}'}, 400)
        reason = f"admin request from {request.remote}"
        router.hold("admin", on, reason)
        if not on:  # rolling forward by hand also clears an auto-rollback
            router.hold("auto", False, reason)
        return _json(router.state())

    app = web.Application(client_max_size=4096)
    if router is not None and router.enabled:
        app.router.add_get("/admin/ab", ab_state)
        app.router.add_post("/admin/rollback", rollback)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/status", status)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app
