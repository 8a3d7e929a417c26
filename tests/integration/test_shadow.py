"""The shadow check against two speculative simulators behind two sidecars, one of which changes
a token in 30% of its answers, both compared with one lossless baseline simulator. The baseline
is slow (about 1 s per answer): a client kept waiting for the comparison would show it."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from specwatch import conventions as C
from specwatch.core.health import Health
from specwatch.proxy.budget import ByteBudget
from specwatch.proxy.shadow import SKIP_MEMORY, Shadow
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig, SimServer

from tests.support.http import scrape, serve, sidecar_settings, total

N = 60


@pytest.fixture
async def slow_baseline() -> AsyncIterator[tuple[str, dict[str, float]]]:
    """A lossless baseline at 30 ms per token; records when each request (by id) finished."""
    finished: dict[str, float] = {}

    @web.middleware
    async def record(request: web.Request, handler: Any) -> web.StreamResponse:
        response: web.StreamResponse = await handler(request)
        finished[request.headers.get("X-Request-Id", "")] = time.perf_counter()
        return response

    server = SimServer(SimConfig(num_spec_tokens=0, cost=CostModel(target_step_ms=30.0)))
    app = server.app()
    app.middlewares.append(record)
    runner, url = await serve(app)
    yield url, finished
    await runner.cleanup()


async def sidecar_for(spec_url: str, baseline_url: str, fraction: float) -> Sidecar:
    settings = sidecar_settings(
        spec_url,
        ab={"baseline_upstream": baseline_url, "baseline_percent": 0},
        shadow={"fraction": fraction, "max_in_flight": 2 * N},
    )
    car = Sidecar(settings)
    await car.start()
    return car


async def traffic(car: Sidecar, tag: str) -> dict[str, tuple[float, float]]:
    """N greedy requests, streaming and not; per request id: (latency, time it completed)."""
    proxy = f"http://127.0.0.1:{car.ports.proxy}"
    out = {}
    async with aiohttp.ClientSession() as session:

        async def one(i: int) -> None:
            request_id = f"{tag}-{i}"
            chat = i % 2 == 0
            body: dict[str, Any] = {"max_tokens": 32, "temperature": 0, "stream": i % 3 == 0}
            if chat:
                body["messages"] = [{"role": "user", "content": f"tell me {i}"}]
            else:
                body["prompt"] = f"tell me {i}"
            path = "/v1/chat/completions" if chat else "/v1/completions"
            started = time.perf_counter()
            headers = {"X-Request-Id": request_id}
            async with session.post(proxy + path, json=body, headers=headers) as response:
                assert 200 == response.status
                await response.read()
            done = time.perf_counter()
            out[request_id] = (done - started, done)

        await asyncio.gather(*(one(i) for i in range(N)))
    return out


async def settled(car: Sidecar, seconds: float = 30.0) -> None:
    async with asyncio.timeout(seconds):
        while sum(car.health.shadow_comparisons.values()) < N:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def test_divergence_rises_for_the_buggy_server_only_and_never_delays_clients(
    slow_baseline: tuple[str, dict[str, float]],
) -> None:
    baseline_url, finished = slow_baseline
    fast = CostModel(target_step_ms=1.0)
    buggy = SimServer(SimConfig(cost=fast, corrupt_share=0.3))
    good = SimServer(SimConfig(cost=fast))
    buggy_runner, buggy_url = await serve(buggy.app())
    good_runner, good_url = await serve(good.app())
    cars = [
        await sidecar_for(buggy_url, baseline_url, 1.0),
        await sidecar_for(good_url, baseline_url, 1.0),
        await sidecar_for(buggy_url, baseline_url, 0.0),  # shadow off, for comparison
    ]
    try:
        with_shadow = await traffic(cars[0], "buggy")
        clean = await traffic(cars[1], "good")
        without = await traffic(cars[2], "off")
        await settled(cars[0])
        await settled(cars[1])
        metrics = [await scrape(f"http://127.0.0.1:{c.ports.admin}/metrics") for c in cars]
        for car in cars:  # the captured streams and the payloads let go of their budget
            await car.drained()
            assert 0 == car.proxy.budget.held
    finally:
        for car in cars:
            await car.stop()
        await buggy_runner.cleanup()
        await good_runner.cleanup()
    compared = [total(m, C.SHADOW_COMPARISONS + "_total") for m in metrics]
    diverged = [total(m, C.OUTPUT_DIVERGENCE + "_total") for m in metrics]
    assert [N, N, 0] == compared
    # Exactly the answers the buggy server changed (it changed the same ones again for the
    # shadow-off sidecar: same requests), none of the correct server's.
    assert 5 < diverged[0] < N * 0.6
    assert buggy.corrupted == 2 * diverged[0]
    assert 0 == diverged[1]
    assert 0 == diverged[2]
    # Never delaying the client: every client had its answer before the baseline had answered
    # the shadow copy of its request (the baseline takes about a second).
    for request_id, (_, done) in {**with_shadow, **clean}.items():
        assert done < finished[request_id], request_id
    p50 = {name: statistics.median(v[0] for v in runs.values())
           for name, runs in (("shadow on", with_shadow), ("shadow off", without))}  # fmt: skip
    print(f"client latency p50: {p50}")  # measured side by side, for the record


async def test_a_comparison_holds_both_outputs_against_the_byte_budget() -> None:
    """The spec output is held from the start of a comparison, the baseline's body piece by
    piece, both until it ends; a comparison without room, or with a baseline answer past the
    response limit, is skipped as `memory_budget`. Nothing stays held."""
    size = {"text": 10}
    inside: list[int] = []

    async def baseline(request: web.Request) -> web.Response:
        inside.append(budget.held)  # while the comparison runs: the spec output is held
        return web.json_response({"choices": [{"text": "x" * size["text"]}]})

    app = web.Application()
    app.router.add_post("/v1/completions", baseline)
    runner, url = await serve(app)
    settings = sidecar_settings(
        "http://127.0.0.1:9", ab={"baseline_upstream": url}, shadow={"fraction": 1.0},
        limits={"max_response_bytes": 4096, "max_observed_bytes": 8192},
    )  # fmt: skip
    health, budget = Health(), ByteBudget(settings.limits.max_observed_bytes)
    async with aiohttp.ClientSession() as session:
        shadow = Shadow(settings, health, lambda: session, budget)
        same = orjson.dumps({"choices": [{"text": "x" * 10}]})
        try:
            cases = ((10, same), (6000, same), (10, b" " * 9000), (3900, b" " * 6000))
            for text, spec_output in cases:
                size["text"] = text
                shadow.start("/v1/completions", {"prompt": "p"}, {}, spec_output, False)
                await asyncio.gather(*shadow._tasks)
                assert 0 == budget.held
            shadow.start("/v1/completions", {"prompt": "p"}, {}, same, False)
            assert len(same) == budget.held
            await shadow.close()  # cancelled before it ran: what it held is given back too
            assert 0 == budget.held
        finally:
            await runner.cleanup()
    # compared; baseline past the response limit; no room for the spec output (never started);
    # the baseline's body found no room beside it
    assert [len(same), len(same), 6000] == inside
    assert 1 == sum(health.shadow_comparisons.values())
    assert {SKIP_MEMORY: 3} == dict(health.shadow_skipped)
