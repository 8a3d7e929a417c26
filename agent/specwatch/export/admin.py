"""The admin app: /metrics, /status, /healthz, /readyz (its own port, never the proxy's)."""

from __future__ import annotations

from collections.abc import Callable

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from specwatch.analysis.analyzer import Snapshot
from specwatch.export.status import status_document
from specwatch.health import HealthSnapshot


def admin_app(
    registry: CollectorRegistry,
    source: Callable[[], tuple[Snapshot, HealthSnapshot]],
    ready: Callable[[], tuple[bool, str]],
) -> web.Application:
    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def status(_request: web.Request) -> web.Response:
        snapshot, health = source()
        body = orjson.dumps(status_document(snapshot, health), option=orjson.OPT_INDENT_2)
        return web.Response(body=body, content_type="application/json")

    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_request: web.Request) -> web.Response:
        is_ready, why = ready()
        return web.Response(status=200 if is_ready else 503, text=why + "\n")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/status", status)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app
