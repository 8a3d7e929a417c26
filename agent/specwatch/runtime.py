"""The sidecar assembled: proxy -> analysis queue -> analyzer -> collector and admin app.

One event loop. The proxy hands observations to a bounded queue and returns; a consumer task
reads them into records and feeds the analyzer; a timer evaluates zones; a prober watches the
upstream's /health. An exception in analysis is counted and logged, never raised into a request.
The admin endpoints read the analysis in steps, the loop relaying between them; nothing changes
it meanwhile (steps.ReadGate).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from functools import partial

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, ProcessCollector

from specwatch.analysis.analyzer import Analyzer
from specwatch.analysis.changes import ConfigHistory, sums_of
from specwatch.conventions import ParseSource, SliceSource
from specwatch.export.admin import admin_app
from specwatch.export.collector import SpecwatchCollector
from specwatch.export.exposition import Exposition
from specwatch.export.status import Reading
from specwatch.health import Health
from specwatch.listening import binding
from specwatch.model import EngineSample
from specwatch.proxy.ab import LOOPBACK_HOSTS, ABRouter, admin_routes, read_token
from specwatch.proxy.observation import Observation, to_record
from specwatch.proxy.proxy import Proxy
from specwatch.settings import Settings
from specwatch.steps import ReadGate, finish
from specwatch.store.cyclelog import CycleLogWriter
from specwatch.store.state import StateFile
from specwatch.vllm.configwatch import ConfigWatch
from specwatch.vllm.log import LogParseFailure, parse_line
from specwatch.vllm.logfollow import LogFollower
from specwatch.vllm.scraper import Scraper
from specwatch.vllm.specconfig import read_speculative

log = structlog.get_logger("specwatch")

STATE_SAVE_SECONDS = 60.0
CONFIG_STATE_MAX_AGE = 90 * 86400.0  # a config's sums, and a change, are kept this long
# a failed loop starts again after LOOP_RESTART_SECONDS, twice that after a second failure in a
# row, ... up to LOOP_RESTART_MAX_SECONDS (see Sidecar._supervised)
LOOP_RESTART_SECONDS = 1.0
LOOP_RESTART_MAX_SECONDS = 60.0


def restart_delay(last: float | None, ran_for: float) -> float:
    """The wait before a failed loop starts again: the first one after its first failure or a
    run of a minute or more (a fault of that moment), else twice the last (a lasting fault),
    at most a minute."""
    if last is None or ran_for >= LOOP_RESTART_MAX_SECONDS:
        return LOOP_RESTART_SECONDS
    return min(2.0 * last, LOOP_RESTART_MAX_SECONDS)


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
    ) -> None:
        """`fresh_engine`: vLLM was started with specwatch, its counters count from zero;
        `target`: the model vLLM serves, where its command line says it."""
        self.settings = settings
        spec = read_speculative(settings.speculative_config)
        self.config = ConfigWatch(settings.upstream, spec, settings.track, target)
        self.history: ConfigHistory | None = None  # once the config is resolved
        self._config_state = StateFile(settings.state_dir, "config") if settings.state_dir else None
        self._clock = clock
        self.health = Health()
        self.analyzer = Analyzer(settings, started=clock(), fresh_engine=fresh_engine)
        self._state = StateFile(settings.state_dir, "drift") if settings.state_dir else None
        cycle_log = settings.cycle_log
        self._cycle_log = (
            CycleLogWriter(cycle_log.path, cycle_log.max_bytes, cycle_log.backups)
            if cycle_log.path is not None
            else None
        )
        self.router = ABRouter(settings.ab, settings.upstream, clock)
        self._gate = ReadGate(self._held_change_failed)
        collector = SpecwatchCollector(self.read, settings.cost)
        process = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=process)  # process_resident_memory_bytes, open fds...
        self.exposition = Exposition(collector, process, self.reading)
        self._queue: asyncio.Queue[Observation] = asyncio.Queue(settings.limits.analysis_queue)
        self.proxy = Proxy(settings, self.health, self.submit, clock, self.router)
        self._runners: list[web.AppRunner] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.ports = Ports(0, 0)

    # --- data path ----------------------------------------------------------------------------

    def submit(self, observation: Observation) -> None:
        try:
            self._queue.put_nowait(observation)
        except asyncio.QueueFull:
            self.proxy.budget.give(observation.held)
            self.health.drop(observation.variant)

    def ingest(self, observation: Observation) -> None:
        self.proxy.budget.give(observation.held)  # read now, and let go of after
        try:
            record = to_record(observation, self.settings.tasks, self.health)
            self.analyzer.ingest(record)
        except Exception:  # a bug must cost one observation, never the sidecar
            self.health.analysis_errors += 1
            log.exception("analysis_failed", request_id=observation.request_id)
            return
        if self._cycle_log is not None:
            try:
                self._cycle_log.write(record)
            except OSError as error:  # a full disk loses cycle-log lines, not requests
                self.health.cycle_log_errors += 1
                log.warning("cycle_log_failed", error=repr(error))

    def log_line(self, line: str) -> None:
        """One line of vLLM's output (child's stdout or a followed file)."""
        try:
            record = parse_line(line)
        except LogParseFailure as failure:
            self.health.parse_error(ParseSource.LOG, failure.reason)
            return
        if record is not None:
            self._gate.change(partial(self.analyzer.ingest_log, record))

    def engine_sample(self, sample: EngineSample) -> None:
        """vLLM's counters, scraped (what raises reaches the scraper, which counts it)."""
        self._gate.change(partial(self.analyzer.ingest_engine, sample))

    def _held_change_failed(self, error: Exception) -> None:
        self.health.analysis_errors += 1
        log.error("analysis_failed", exc_info=error)

    async def _consume(self) -> None:
        queue = self._queue
        if self.history is None:
            await self.config.resolved.wait()  # every record is labelled with the config
            self.history = ConfigHistory(self.config.config, self.settings)
            self._restore_config()
        while True:
            observation = await queue.get()
            await self._gate.clear()  # then nothing reads in steps until the queue is empty
            self.ingest(observation)
            queue.task_done()
            # under load, take what else is queued in the same turn: one wake-up, many records
            while not queue.empty():
                self.ingest(queue.get_nowait())
                queue.task_done()

    async def drained(self) -> None:
        """Wait until every submitted observation has been ingested."""
        await self._queue.join()

    def read(self) -> Reading:
        """What export shows now, in one go: copies, never live state."""
        return finish(self._reading_steps())

    async def reading(self) -> Reading:
        """`read`, the analysis taken in steps with the loop relaying in between (what the
        admin endpoints do: at full cardinality it takes tens of milliseconds)."""
        return await self._gate.read(self._reading_steps)

    async def evaluate_now(self) -> float:
        """One zone and drift evaluation now (the timer's, and the demo's out of turn), in
        steps through the gate like a reading: at full cardinality it takes 10-30 ms; its
        time."""
        return await self._gate.read(self._evaluation_steps)

    def _evaluation_steps(self) -> Generator[None, None, float]:
        now = self._clock()  # when its turn comes, not when it was asked for
        yield from self.analyzer.evaluate_steps(now)
        return now

    def _reading_steps(self) -> Generator[None, None, Reading]:
        budget = self.proxy.budget
        health, ab = self.health.snapshot(budget.held, budget.limit), self.router.snapshot()
        snapshot = yield from self.analyzer.snapshot_steps(self._clock())
        history, change = self.history, None
        if history is not None and history.changed is not None:
            views = (*snapshot.slices, *snapshot.rollups)
            live = {v.key: sums_of(v.since_start) for v in views if v.source == SliceSource.PROXY}
            change = history.view(live)
        changes = 0 if history is None else history.changes
        return Reading(snapshot, health, ab, self.config.config, change, changes)

    # --- timers --------------------------------------------------------------------------------

    async def _evaluate(self) -> None:
        interval = self.settings.zones.evaluation_interval_seconds
        last_save = self._clock()
        while True:
            try:
                now = await self.evaluate_now()
                if self.router.enabled:
                    self.router.check_zones(self.analyzer.red_models(), now)
            except Exception:
                self.health.analysis_errors += 1
                log.exception("evaluation_failed")
            if self._clock() - last_save >= STATE_SAVE_SECONDS:
                self.save_state()
                last_save = self._clock()
            await asyncio.sleep(interval)

    async def _supervised(self, loop: Callable[[], Awaitable[None]]) -> None:
        """Run one of the sidecar's loops for its whole life: one that fails (a bug each of
        them guards against, or a lasting fault such as an unreadable log file) is logged,
        counted in analysis_errors and started again on the same objects (a followed log goes
        on from where it was), sooner after a failure that came after a long run. Nothing
        else would restart it: a scraper that stopped once left vLLM's counters unread."""
        delay: float | None = None
        while True:
            started = time.monotonic()
            try:
                await loop()
                return
            except Exception:
                self.health.analysis_errors += 1
                delay = restart_delay(delay, time.monotonic() - started)
                name = getattr(loop, "__qualname__", repr(loop))
                log.exception("loop_failed", loop=name, restart_in=delay)
            await asyncio.sleep(delay)

    def restore_state(self) -> None:
        if self._state is None:
            return
        drift = self.settings.drift
        max_age = (drift.baseline_buckets + drift.gap_buckets) * drift.bucket_seconds
        data = self._state.load(self._clock(), max_age)
        if data is None:
            return
        try:
            self.analyzer.restore_drift(data)
        except ValueError as error:
            log.warning("state_fresh", path=str(self._state.path), reason=f"corrupt: {error}")
            return
        log.info("state_restored", path=str(self._state.path))

    def save_state(self) -> None:
        if self._state is None:
            return
        try:
            self._state.save(self.analyzer.drift_state(), self._clock())
            if self._config_state is not None and self.history is not None:
                live = self.analyzer.since_start_sums()
                self._config_state.save(self.history.state(live), self._clock())
        except OSError as error:  # a full disk costs the saved baseline, not the sidecar
            log.warning("state_save_failed", path=str(self._state.path), error=repr(error))

    def _restore_config(self) -> None:
        """The config's sums from earlier runs, or the change from the config before."""
        if self._config_state is None or self.history is None:
            return
        data = self._config_state.load(self._clock(), CONFIG_STATE_MAX_AGE)
        if data is None:
            return
        try:
            self.history.restore(data, self._clock())
        except ValueError as error:
            path = str(self._config_state.path)
            log.warning("state_fresh", path=path, reason=f"corrupt: {error}")

    async def drain(self, seconds: float) -> None:
        """Refuse new requests (503) and wait up to `seconds` for those in flight to finish."""
        self.proxy.draining = True
        log.info("draining", in_flight=self.proxy.in_flight, seconds=seconds)
        deadline = asyncio.get_running_loop().time() + seconds
        while self.proxy.in_flight and asyncio.get_running_loop().time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        if self.proxy.in_flight:
            log.warning("drain_timeout", still_in_flight=self.proxy.in_flight)

    def ready(self) -> tuple[bool, str]:
        if self.proxy.draining:
            return False, "draining"
        if self.health.upstream_up:
            return True, "ready"
        if self.health.upstream_up is None:
            return False, "upstream not probed yet"
        return False, "upstream /health is failing"

    # --- lifecycle -----------------------------------------------------------------------------

    async def _serve(self, app: web.Application, host: str, port: int) -> int:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        with binding(host, port, "--admin-port"):
            await site.start()
        self._runners.append(runner)
        return int(runner.addresses[-1][1])  # the bound port, when 0 asked the OS to choose

    async def start(self) -> Ports:
        """Raises OSError (a port is taken, the token file is unreadable) or ValueError."""
        token = read_token(self.settings.ab.admin_token_file)
        self.restore_state()
        scraper = Scraper(
            self.settings.upstream,
            self.settings.scrape_interval_seconds,
            self.health,
            self.engine_sample,
            self._clock,
        )
        loops: list[Callable[[], Awaitable[None]]] = [
            self.config.run,
            self._consume,
            self._evaluate,
            scraper.run,
        ]
        if self.settings.vllm_log is not None:
            loops.append(LogFollower(self.settings.vllm_log, self.log_line).run)
        rollback_file = self.settings.ab.rollback_file
        if self.router.enabled and rollback_file is not None:
            loops.append(lambda: self.router.watch_file(rollback_file))
        for loop in loops:
            self._tasks.append(asyncio.create_task(self._supervised(loop)))
        admin_host = self.settings.admin_host or self.settings.host
        loopback = admin_host in LOOPBACK_HOSTS
        routes = admin_routes(self.router, token, loopback) if self.router.enabled else []
        admin = admin_app(self.exposition.scrape, self.reading, self.ready, routes)
        admin_port = await self._serve(admin, admin_host, self.settings.admin_port)
        with binding(self.settings.host, self.settings.port, "--port"):
            proxy_port = await self.proxy.start(self.settings.host, self.settings.port)
        self.ports = Ports(proxy=proxy_port, admin=admin_port)
        log.info(
            "sidecar_started",
            proxy=f"http://{self.settings.host}:{proxy_port}",
            admin=f"http://{admin_host}:{admin_port}",
            upstream=self.settings.upstream,
            baseline_upstream=self.settings.ab.baseline_upstream,
            baseline_percent=self.settings.ab.baseline_percent if self.router.enabled else None,
        )
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
        if self._cycle_log is not None:
            self._cycle_log.close()
        self.save_state()
