"""The sidecar assembled on one event loop: proxy -> intake -> analyzer -> collector and admin
app, with its loops supervised (sidecar/). This module only wires and runs the parts."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, ProcessCollector

from specwatch.analysis.analyzer import Analyzer
from specwatch.core.health import Health
from specwatch.core.listening import binding, serve_app
from specwatch.core.records import SpecConfig
from specwatch.core.turns import ReadGate
from specwatch.engines.detect import VLLM
from specwatch.export.collector import SpecwatchCollector
from specwatch.export.exposition import Exposition
from specwatch.export.reading import Reading
from specwatch.proxy.ab import ABRouter
from specwatch.proxy.budget import ByteBudget
from specwatch.proxy.proxy import Proxy
from specwatch.settings import Settings
from specwatch.sidecar import loops
from specwatch.sidecar.admin import LOOPBACK_HOSTS, admin_app, admin_routes, read_token
from specwatch.sidecar.intake import Intake
from specwatch.sidecar.readings import Readings
from specwatch.sidecar.states import States
from specwatch.upstream.configwatch import ConfigWatch, run_label
from specwatch.upstream.specconfig import read_speculative

log = structlog.get_logger("specwatch")


@dataclass(frozen=True, slots=True)
class Ports:
    proxy: int
    admin: int


class Sidecar:
    """Owns every long-lived part; `start()` binds the ports, `stop()` releases everything."""

    def __init__(
        self,
        settings: Settings,
        clock: Callable[[], float] = time.time,
        fresh_engine: bool = False,
        target: str | None = None,
        engine: str = VLLM,
    ) -> None:
        """`fresh_engine`: vLLM was started with specwatch, its counters count from zero;
        `target`: the model vLLM serves, where its command line says it; `engine`: what the
        command line starts (engines/detect.py; the proxy learns it from the upstream)."""
        self.settings = settings
        self._clock = clock
        # the ground floor: specwatch's own counters, and the gate of readings in turns
        self.health = Health()
        self._gate = ReadGate(self._held_change_failed)
        # vLLM: the run's label (fixed at start but for vLLM's version, learnt from it)
        label = run_label(read_speculative(settings.speculative_config), settings.track, target)
        wait = None if fresh_engine else settings.limits.version_wait_seconds
        self.config = ConfigWatch(settings.upstream, label, wait, engine=engine)
        # the analysis, and what of it is kept on disk
        self.analyzer = Analyzer(settings, started=clock(), fresh_engine=fresh_engine)
        self.states = States(settings, self.analyzer, clock)
        # the request path: what is held of responses to read them (shared by the proxy and
        # the intake's queue), where a request goes (A/B), the intake that feeds the analysis
        budget = ByteBudget(settings.limits.max_observed_bytes)
        self.router = ABRouter(settings.ab, settings.upstream, clock)
        self.intake = Intake(settings, self.analyzer, self.health, self._gate)
        self.proxy = Proxy(settings, self.health, self.intake.submit, self.router, budget, clock)
        self.proxy.engine = self.config.config.engine  # known from a command line, or later
        # the readings in turns, and what the admin port exports of them
        self.readings = Readings(
            self.analyzer, self.health, self.router, budget, self.states, self.config,
            self._gate, clock,
        )  # fmt: skip
        process = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=process)  # process_resident_memory_bytes, open fds...
        collector = SpecwatchCollector(self.read, settings.cost)
        self.exposition = Exposition(collector, process, self.reading)
        self._runners: list[web.AppRunner] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.ports = Ports(0, 0)

    def _held_change_failed(self, error: Exception) -> None:
        self.health.internal_errors += 1
        log.error("analysis_failed", exc_info=error)

    async def _evaluation(self) -> None:
        await self.evaluate_now()
        self.states.save_when_due()

    async def _config_known(self) -> SpecConfig:
        await self.states.config_known(self.config)
        self.proxy.engine = self.config.config.engine  # what to ask on clients' behalf
        return self.config.config

    def log_line(self, line: str) -> None:
        """One line of vLLM's output (the child's stdout or a followed file)."""
        self.intake.log_line(line)

    async def drained(self) -> None:
        """Every observation submitted so far ingested."""
        await self.intake.drained()

    def read(self) -> Reading:
        """What export shows now, in one go (sidecar/readings.py)."""
        return self.readings.read()

    async def reading(self) -> Reading:
        """`read` in turns, the loop relaying in between (the admin endpoints')."""
        return await self.readings.reading()

    async def evaluate_now(self) -> float:
        """One zone and drift evaluation now, in turns; its time."""
        return await self.readings.evaluate_now()

    def _engine(self) -> str | None:
        """The engine upstream, once known (upstream/configwatch.py)."""
        return self.config.config.engine if self.config.resolved.is_set() else None

    def ready(self) -> tuple[bool, str]:
        return self.health.readiness(self.proxy.draining)

    async def drain(self, seconds: float) -> None:
        await self.proxy.drain(seconds)

    def _loops(self) -> list[Callable[[], Awaitable[None]]]:
        settings, health = self.settings, self.health
        interval = settings.zones.evaluation_interval_seconds
        return [
            self.config.run,
            lambda: self.intake.consume(self._config_known),
            lambda: loops.every(interval, self._evaluation, health, "evaluation_failed"),
            *loops.vllm_watchers(settings, health, self.intake, self._clock, self._engine),
            *loops.ab_loops(settings, self.router, self.analyzer, health, self._clock),
        ]

    async def start(self) -> Ports:
        """Raises OSError (a port is taken, the token file is unreadable) or ValueError."""
        settings = self.settings
        token = read_token(settings.ab.admin_token_file)
        self.states.restore_drift()
        for loop in self._loops():
            self._tasks.append(asyncio.create_task(loops.supervised(loop, self.health)))
        admin_host = settings.admin_host or settings.host
        loopback = admin_host in LOOPBACK_HOSTS
        routes = admin_routes(self.router, token, loopback) if self.router.enabled else []
        admin = admin_app(self.exposition.scrape, self.reading, self.ready, routes)
        self._runners.append(
            await serve_app(admin, admin_host, settings.admin_port, "--admin-port")
        )
        admin_port = int(self._runners[-1].addresses[-1][1])  # the bound one, when 0 was asked
        with binding(settings.host, settings.port, "--port"):
            proxy_port = await self.proxy.start(settings.host, settings.port)
        self.ports = Ports(proxy=proxy_port, admin=admin_port)
        ab = settings.ab
        log.info("sidecar_started", proxy=f"http://{settings.host}:{proxy_port}",
                 admin=f"http://{admin_host}:{admin_port}", upstream=settings.upstream,
                 baseline_upstream=ab.baseline_upstream,
                 baseline_percent=ab.baseline_percent if self.router.enabled else None)  # fmt: skip
        return self.ports

    async def stop(self) -> None:
        await self.proxy.close()
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.drained(), timeout=5.0)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self.intake.close()
        self.states.save()
