"""The sidecar's long-running loops besides the proxy's: each supervised (started again after a
failure, counted and logged), a timer, vLLM's watchers, and the A/B rollback's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import partial

import structlog

from specwatch.analysis.analyzer import Analyzer
from specwatch.core.health import Health
from specwatch.proxy.ab import ABRouter
from specwatch.settings import Settings
from specwatch.sidecar.intake import Intake
from specwatch.upstream.logfollow import LogFollower
from specwatch.upstream.scraper import Scraper

log = structlog.get_logger("specwatch")

Loop = Callable[[], Awaitable[None]]

# a failed loop starts again after RESTART_SECONDS, twice that after a second failure in a
# row, ... up to RESTART_MAX_SECONDS (see supervised)
RESTART_SECONDS = 1.0
RESTART_MAX_SECONDS = 60.0


def restart_delay(last: float | None, ran_for: float) -> float:
    """The wait before a failed loop starts again: the first one after its first failure or a
    run of a minute or more (a fault of that moment), else twice the last (a lasting fault),
    at most a minute."""
    if last is None or ran_for >= RESTART_MAX_SECONDS:
        return RESTART_SECONDS
    return min(2.0 * last, RESTART_MAX_SECONDS)


async def supervised(loop: Loop, health: Health) -> None:
    """Run one loop for the sidecar's whole life: one that fails (a bug each of them guards
    against, or a lasting fault such as an unreadable log file) is logged, counted in
    internal_errors and started again on the same objects (a followed log goes on from where
    it was), sooner after a failure that came after a long run. Nothing else would restart
    it: a scraper that stopped would leave vLLM's counters unread for good."""
    delay: float | None = None
    while True:
        started = time.monotonic()
        try:
            await loop()
            return
        except Exception:
            health.internal_errors += 1
            delay = restart_delay(delay, time.monotonic() - started)
            name = getattr(loop, "__qualname__", repr(loop))
            log.exception("loop_failed", loop=name, restart_in=delay)
        await asyncio.sleep(delay)


async def every(
    interval: float, work: Callable[[], Awaitable[None]], health: Health, event: str
) -> None:
    """`work` every `interval` seconds; a failure is counted and logged, and the next turn
    comes as usual."""
    while True:
        try:
            await work()
        except Exception:
            health.internal_errors += 1
            log.exception(event)
        await asyncio.sleep(interval)


def vllm_watchers(
    settings: Settings,
    health: Health,
    intake: Intake,
    clock: Callable[[], float],
    engine: Callable[[], str | None],
) -> list[Loop]:
    """vLLM's own view: its /metrics scraped (once `engine` says which engine it is), and its
    log followed when it is in a file."""
    scrape = settings.upstream, settings.scrape_interval_seconds
    found: list[Loop] = [Scraper(*scrape, health, intake.engine_sample, clock, engine).run]
    if settings.vllm_log is not None:
        found.append(LogFollower(settings.vllm_log, intake.log_line).run)
    return found


def ab_loops(
    settings: Settings,
    router: ABRouter,
    analyzer: Analyzer,
    health: Health,
    clock: Callable[[], float],
) -> list[Loop]:
    """With A/B on: the automatic rollback after each evaluation interval (the router told
    which models are red), and the rollback flag file watched when there is one."""
    if not router.enabled:
        return []

    async def rollback_turn() -> None:
        router.check_zones(analyzer.red_models(), clock())

    interval = settings.zones.evaluation_interval_seconds
    found: list[Loop] = [lambda: every(interval, rollback_turn, health, "rollback_failed")]
    if settings.ab.rollback_file is not None:
        found.append(partial(router.watch_file, settings.ab.rollback_file))
    return found
