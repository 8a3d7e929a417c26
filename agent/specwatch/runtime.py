"""The sidecar assembled: proxy -> analysis queue -> analyzer -> collector and admin app.

One event loop. The proxy hands observations to a bounded queue and returns; a consumer task
reads them into records and feeds the analyzer; a timer evaluates zones; a prober watches the
upstream's /health. An exception in analysis is counted and logged, never raised into a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry

from specwatch.analysis.analyzer import Analyzer, Snapshot
from specwatch.export.admin import admin_app
from specwatch.export.collector import SpecwatchCollector
from specwatch.health import Health, HealthSnapshot
from specwatch.settings import Settings
from specwatch.sources.observation import Observation, to_record
from specwatch.sources.proxy import Proxy

log = structlog.get_logger("specwatch")

UPSTREAM_PROBE_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class Ports:
    proxy: int
    admin: int


class Sidecar:
    """Owns every long-lived part; `start()` binds the ports, `stop()` releases everything."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self._clock = clock
        self.health = Health()
        self.analyzer = Analyzer(settings, started=clock())
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SpecwatchCollector(self.sources))
        self._queue: asyncio.Queue[Observation] = asyncio.Queue(settings.limits.analysis_queue)
        self.proxy = Proxy(settings, self.health, self.submit, clock)
        self._runners: list[web.AppRunner] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.ports = Ports(0, 0)

    # --- data path ----------------------------------------------------------------------------

    def submit(self, observation: Observation) -> None:
        try:
            self._queue.put_nowait(observation)
        except asyncio.QueueFull:
            self.health.dropped += 1

    def ingest(self, observation: Observation) -> None:
        try:
            record = to_record(observation, self.settings.tasks, self.health)
            self.analyzer.ingest(record)
        except Exception:  # a bug must cost one observation, never the sidecar
            self.health.analysis_errors += 1
            log.exception("analysis_failed", request_id=observation.request_id)

    async def _consume(self) -> None:
        while True:
            observation = await self._queue.get()
            self.ingest(observation)
            self._queue.task_done()

    async def drained(self) -> None:
        """Wait until every submitted observation has been ingested."""
        await self._queue.join()

    def sources(self) -> tuple[Snapshot, HealthSnapshot]:
        return self.analyzer.snapshot(self._clock()), self.health.snapshot()

    # --- timers --------------------------------------------------------------------------------

    async def _evaluate(self) -> None:
        interval = self.settings.zones.evaluation_interval_seconds
        while True:
            try:
                self.analyzer.evaluate(self._clock())
            except Exception:
                self.health.analysis_errors += 1
                log.exception("evaluation_failed")
            await asyncio.sleep(interval)

    async def _probe_upstream(self) -> None:
        url = self.settings.upstream + "/health"
        timeout = aiohttp.ClientTimeout(total=UPSTREAM_PROBE_SECONDS)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                try:
                    async with session.get(url) as response:
                        up = response.status == 200
                except (aiohttp.ClientError, TimeoutError):
                    up = False
                if up != self.health.upstream_up:
                    log.info("upstream_health", up=up, url=url)
                self.health.upstream_up = up
                await asyncio.sleep(UPSTREAM_PROBE_SECONDS)

    def ready(self) -> tuple[bool, str]:
        if self.health.upstream_up:
            return True, "ready"
        if self.health.upstream_up is None:
            return False, "upstream not probed yet"
        return False, "upstream /health is failing"

    # --- lifecycle -----------------------------------------------------------------------------

    async def _serve(self, app: web.Application, port: int, cancel_on_disconnect: bool) -> int:
        runner = web.AppRunner(app, access_log=None, handler_cancellation=cancel_on_disconnect)
        await runner.setup()
        site = web.TCPSite(runner, self.settings.host, port)
        await site.start()
        self._runners.append(runner)
        return int(runner.addresses[-1][1])  # the bound port, when 0 asked the OS to choose

    async def start(self) -> Ports:
        for coroutine in (self._consume(), self._evaluate(), self._probe_upstream()):
            self._tasks.append(asyncio.create_task(coroutine))
        admin = admin_app(self.registry, self.sources, self.ready)
        admin_port = await self._serve(admin, self.settings.admin_port, False)
        # handler_cancellation: a client that goes away cancels its upstream request too.
        proxy_port = await self._serve(self.proxy.app(), self.settings.port, True)
        self.ports = Ports(proxy=proxy_port, admin=admin_port)
        log.info(
            "specwatch_started",
            proxy=f"http://{self.settings.host}:{proxy_port}",
            admin=f"http://{self.settings.host}:{admin_port}",
            upstream=self.settings.upstream,
        )
        return self.ports

    async def stop(self) -> None:
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.drained(), timeout=5.0)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
