"""Faults on both sides: abort storms, slow and odd upstreams. After each: clean results or clean
errors, the sidecar still serves, every request in one outcome, nothing left behind."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator

import aiohttp
import psutil
import pytest
from aiohttp import web
from specwatch import conventions as C
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig, SimServer
from structlog.testing import capture_logs

from tests.support.http import by_label, eventually, post, scrape, serve, sidecar_settings, total


@pytest.fixture
def sim_config() -> SimConfig:
    return SimConfig(cost=CostModel(target_step_ms=5.0, prefill_ms_per_token=0.0))


def resources() -> tuple[int, int]:
    return psutil.Process().num_fds(), len(asyncio.all_tasks())


async def settled(quiet: int = 8) -> None:
    """Until the process' file descriptors and tasks stay the same over `quiet` polls in a row
    (0.1 s apart, past the 0.3 s keep-alive): what a storm left open has closed."""
    last, same = resources(), 0
    async with asyncio.timeout(20):
        while same < quiet:
            await asyncio.sleep(0.1)
            now = resources()
            same = same + 1 if now == last else 0
            last = now


@pytest.fixture
async def short_keepalive(sim: tuple[SimServer, str]) -> AsyncIterator[Sidecar]:
    """Idle upstream connections close after 0.3 s, so a pool cannot hide or fake a leak."""
    car = Sidecar(sidecar_settings(sim[1], limits={"upstream_keepalive_seconds": 0.3}))
    await car.start()
    yield car
    await car.stop()


def scraped_everything(car: Sidecar) -> bool:
    """vLLM's counters, as scraped, hold every draft token the proxy saw (coverage 1 between
    the scrapes, and the scrapes caught up with the proxy)."""
    snapshot = car.analyzer.snapshot(time.time())
    seen = {view.key.model: view.since_start.drafted for view in snapshot.rollups}
    return bool(snapshot.engine) and all(
        view.coverage == 1.0 and view.since_start.drafted == seen.get(view.model)
        for view in snapshot.engine
    )


def resets(car: Sidecar) -> int:
    return car.analyzer.snapshot(time.time()).counter_resets


async def test_an_abort_storm_leaks_nothing_and_every_request_is_counted(
    sim: tuple[SimServer, str], short_keepalive: Sidecar
) -> None:
    sidecar = short_keepalive
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}/v1/completions"
    rng = random.Random(4)
    limit = asyncio.Semaphore(150)
    n = 2000

    async def one(session: aiohttp.ClientSession, i: int) -> None:
        """Once the response has begun, go away at a random point (or read it all)."""
        body = {"prompt": f"storm {i}", "max_tokens": 60, "stream": i % 4 != 0}
        async with limit, session.post(proxy, json=body) as response:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(rng.uniform(0.0, 0.4)):
                    await response.read()
            response.close()

    async def storm(first: int) -> None:
        async with aiohttp.ClientSession() as session:
            await asyncio.gather(*(one(session, i) for i in range(first, first + n // 2)))
        await sidecar.drained()
        await eventually(lambda: sidecar.proxy.in_flight == 0)
        await settled()  # aborts settle upstream; idle pooled connections close

    with capture_logs() as logs:
        # The first storm warms everything up; the second's thousand requests must leave the
        # same number of file descriptors and tasks behind.
        await storm(0)
        before = resources()
        await storm(n // 2)
        after = resources()
    assert 0 == sidecar.proxy.budget.held  # aborted exchanges let go of what they held
    metrics = await scrape(f"http://127.0.0.1:{sidecar.ports.admin}/metrics")
    outcomes = by_label(metrics, C.REQUESTS + "_total", C.Label.OUTCOME)
    assert n == sum(outcomes.values())
    assert outcomes[C.Outcome.CLIENT_ABORTED] > n / 4
    assert outcomes[C.Outcome.OBSERVED] > 0
    # what specwatch counted never exceeds what the upstream did (aborted steps it cannot see)
    server = sim[0]
    assert total(metrics, C.SPEC_STEPS + "_total") <= server.metrics.total(C.VLLM_NUM_DRAFTS)
    assert after[0] <= before[0] + 10, (before, after)  # file descriptors
    assert after[1] <= before[1] + 5, (before, after)  # event-loop tasks
    noisy = [e for e in logs if e["log_level"] in ("warning", "error", "critical")]
    assert len(noisy) < 10  # client aborts are counted, not logged one by one
    async with aiohttp.ClientSession() as session:  # and it still serves
        assert 200 == (await post(session, proxy, {"prompt": "after", "max_tokens": 8}))[0]


async def healthy(_request: web.Request) -> web.Response:
    return web.Response()


@pytest.fixture
async def odd_upstream() -> AsyncIterator[str]:
    """Answers slowly, with the wrong content type, or with a 5xx, by path of the request body."""

    async def handler(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        kind = body.get("prompt")
        if kind == "slow":
            await asyncio.sleep(3)  # waits out: nothing; the fault itself (a slow upstream)
        if kind == "html":
            return web.Response(text="<html>oops</html>", content_type="text/html")
        if kind == "5xx":
            return web.Response(status=503, text="overloaded")
        usage = {"prompt_tokens": 1, "completion_tokens": 1}
        return web.json_response({"id": "x", "model": "m", "usage": usage})

    app = web.Application()
    app.router.add_post("/v1/completions", handler)
    app.router.add_get("/health", healthy)
    runner, url = await serve(app)
    yield url
    await runner.cleanup()


async def test_slow_odd_and_failing_upstreams_give_clean_results_and_single_outcomes(
    odd_upstream: str,
) -> None:
    car = Sidecar(sidecar_settings(odd_upstream, upstream_timeout_seconds=0.5))
    await car.start()
    proxy = f"http://127.0.0.1:{car.ports.proxy}/v1/completions"
    try:
        before = resources()
        async with aiohttp.ClientSession() as session:
            results = {kind: await post(session, proxy, {"prompt": kind})
                       for kind in ("slow", "html", "5xx", "ok")}  # fmt: skip
        await car.drained()
        after = resources()
        assert 502 == results["slow"][0]  # timed out upstream: a clean 502, not a hang
        assert (200, b"<html>oops</html>") == results["html"]  # passed on as it came
        assert (503, b"overloaded") == results["5xx"]
        assert 200 == results["ok"][0]
        metrics = await scrape(f"http://127.0.0.1:{car.ports.admin}/metrics")
        assert {
            C.Outcome.UPSTREAM_FAILED: 1,
            C.Outcome.PARSE_ERROR: 1,
            C.Outcome.UPSTREAM_ERROR: 1,
            C.Outcome.NO_SPEC_METRICS: 1,
        } == by_label(metrics, C.REQUESTS + "_total", C.Label.OUTCOME)
        assert after[0] <= before[0] + 5
    finally:
        await car.stop()


async def test_an_upstream_restart_resets_its_counters_and_totals_still_reconcile() -> None:
    from specwatch.upstream.child import free_port

    port = free_port()
    config = SimConfig(sleep=False)

    async def start_sim() -> tuple[SimServer, web.AppRunner]:
        server = SimServer(config)
        runner = web.AppRunner(server.app(), handler_cancellation=True, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        return server, runner

    first, runner = await start_sim()
    car = Sidecar(sidecar_settings(f"http://127.0.0.1:{port}", scrape_interval_seconds=0.2))
    await car.start()
    proxy = f"http://127.0.0.1:{car.ports.proxy}/v1/completions"
    try:
        async with aiohttp.ClientSession() as session:
            for i in range(10):
                await post(session, proxy, {"prompt": f"before {i}", "max_tokens": 30})
            await car.drained()
            await eventually(lambda: scraped_everything(car), seconds=10)  # a scrape saw them
            await runner.cleanup()  # vLLM restarts: its counters start again from zero
            second, runner = await start_sim()
            for i in range(5):
                await post(session, proxy, {"prompt": f"after {i}", "max_tokens": 30})
            await car.drained()
            await eventually(lambda: scraped_everything(car) and resets(car) == 1, seconds=10)
        metrics = await scrape(f"http://127.0.0.1:{car.ports.admin}/metrics")
        upstream_steps = sum(s.metrics.total(C.VLLM_NUM_DRAFTS) for s in (first, second))
        assert upstream_steps == total(metrics, C.SPEC_STEPS + "_total")
        assert 1 == total(metrics, C.VLLM_COUNTER_RESETS + "_total")
        assert 1.0 == total(metrics, C.COVERAGE_RATIO)  # the reset is not read as a collapse
        assert {C.Outcome.OBSERVED: 15} == by_label(metrics, C.REQUESTS + "_total", C.Label.OUTCOME)
    finally:
        await car.stop()
        await runner.cleanup()
