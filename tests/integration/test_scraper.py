"""The scraper of vLLM's /metrics over real sockets: a bad page or a failing analysis costs
one scrape, counted, and the scraper goes on (nothing restarts it if it stops)."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web
from specwatch.conventions import ParseReason, ParseSource
from specwatch.core.health import Health
from specwatch.core.records import EngineSample
from specwatch.sidecar import loops
from specwatch.sidecar.sidecar import Sidecar
from specwatch.upstream.scraper import ScrapeFailure, Scraper, parse_vllm_metrics

from tests.support.http import serve, sidecar_settings

PAGE = """# TYPE vllm:spec_decode_num_drafts counter
vllm:spec_decode_num_drafts_total{{model_name="m"}} {drafts}
vllm:spec_decode_num_draft_tokens_total{{model_name="m"}} 30
vllm:spec_decode_num_accepted_tokens_total{{model_name="m"}} 12
# TYPE vllm:some_gauge gauge
vllm:some_gauge{{model_name="m"}} NaN
"""


@pytest.mark.parametrize("drafts", ["NaN", "+Inf", "-Inf", "-1"])
def test_a_speculative_counter_that_is_not_a_count_fails_the_page(drafts: str) -> None:
    """A counter is finite and not negative; NaN in a family specwatch does not read (the
    gauge above) is none of its business."""
    with pytest.raises(ScrapeFailure, match=ParseReason.BAD_FORMAT):
        parse_vllm_metrics(PAGE.format(drafts=drafts), ts=1.0)
    (sample,) = parse_vllm_metrics(PAGE.format(drafts="10"), ts=1.0)
    assert (10.0, 30.0, 12.0) == (sample.drafts, sample.draft_tokens, sample.accepted_tokens)


async def test_a_bad_page_or_a_failing_analysis_costs_one_scrape_and_the_scraper_goes_on() -> None:
    """A NaN counter once reached the analysis, whose ValueError ended the scraper's task for
    the sidecar's life: upstream health frozen, vLLM's counters never read again."""
    pages = iter(["NaN", "10", "10", "20", "30"])

    async def health_page(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def metrics_page(_: web.Request) -> web.Response:
        return web.Response(text=PAGE.format(drafts=next(pages, "30")))

    app = web.Application()
    app.router.add_get("/health", health_page)
    app.router.add_get("/metrics", metrics_page)
    runner, url = await serve(app)
    health, seen = Health(), []

    def sink(sample: EngineSample) -> None:
        seen.append(sample.drafts)
        if len(seen) == 2:
            raise RuntimeError("a bug in the analysis")

    scraper = Scraper(url, 0.01, health, sink)
    try:
        async with aiohttp.ClientSession() as session:
            await scraper.scrape_once(session)  # NaN: a bad page, nothing ingested
            key = (ParseSource.METRICS, ParseReason.BAD_FORMAT)
            assert (1, []) == (health.parse_errors[key], seen)
            await scraper.scrape_once(session)
            await scraper.scrape_once(session)  # the sink raises: counted
            assert ([10.0, 10.0], 1) == (seen, health.internal_errors)
        task = asyncio.create_task(scraper.run())  # and the loop goes on past it
        for _ in range(200):
            if len(seen) == 4:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        assert [10.0, 10.0, 20.0, 30.0] == seen[:4]
        assert health.upstream_up
    finally:
        await runner.cleanup()


async def test_a_sidecar_loop_that_fails_is_started_again_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Defence in depth behind the guards above: whatever escapes one of the sidecar's loops
    (here the scraper's, once) is logged and counted, and the loop runs again: vLLM's
    counters keep coming."""
    app = web.Application()

    async def ok(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def metrics_page(_: web.Request) -> web.Response:
        return web.Response(text=PAGE.format(drafts="10"))

    app.router.add_get("/health", ok)
    app.router.add_get("/metrics", metrics_page)
    runner, url = await serve(app)
    calls = []
    original = Scraper.scrape_once

    async def once_broken(self: Scraper, session: aiohttp.ClientSession) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug the scraper's guards do not catch")
        await original(self, session)

    monkeypatch.setattr(Scraper, "scrape_once", once_broken)
    monkeypatch.setattr(loops, "RESTART_SECONDS", 0.01)
    car = Sidecar(sidecar_settings(url, scrape_interval_seconds=0.02))
    await car.start()
    try:
        for _ in range(300):
            if car.read().snapshot.engine:
                break
            await asyncio.sleep(0.01)
        assert ["m"] == [view.model for view in car.read().snapshot.engine]
        assert 1 == car.health.internal_errors
        assert len(calls) >= 2
    finally:
        await car.stop()
        await runner.cleanup()


def test_a_loop_failing_again_and_again_waits_longer_each_time_up_to_a_minute() -> None:
    """A lasting fault (an unreadable log file) logs a traceback a minute at most, not every
    second; a failure after a long run is a fault of that moment and restarts at once."""
    delays, delay = [], None
    for _ in range(9):
        delay = loops.restart_delay(delay, ran_for=0.1)
        delays.append(delay)
    assert [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0] == delays
    assert 1.0 == loops.restart_delay(60.0, ran_for=300.0)
