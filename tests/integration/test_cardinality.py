"""A cardinality flood: thousands of task header values, a thousand model names, random paths."""

from __future__ import annotations

import asyncio
import random

import aiohttp
from specwatch import conventions as C
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.server import SimServer

from tests.support.http import by_label, scrape, total


async def test_the_series_stay_bounded_and_the_folding_is_counted(
    sim: tuple[SimServer, str], sidecar: Sidecar
) -> None:
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}"
    rng = random.Random(9)
    limit = asyncio.Semaphore(32)

    async def send(session: aiohttp.ClientSession, method: str, path: str, **kw: object) -> None:
        async with limit, session.request(method, proxy + path, **kw) as response:  # type: ignore[arg-type]  # kwargs pass through untyped
            await response.read()

    async with aiohttp.ClientSession() as session:
        jobs = [
            send(session, "POST", "/v1/completions",
                 json={"prompt": f"p{i}", "max_tokens": 16},
                 headers={"X-Task-Type": f"task-{i}-{rng.random()}"})
            for i in range(10_000)
        ]  # fmt: skip
        jobs += [
            send(session, "POST", "/v1/completions", json={"prompt": "p", "model": f"model-{i}"})
            for i in range(1_000)
        ]
        jobs += [send(session, "GET", f"/{rng.getrandbits(64):x}/{i}") for i in range(500)]
        await asyncio.gather(*jobs)
    await sidecar.drained()
    metrics = await scrape(f"http://127.0.0.1:{sidecar.ports.admin}/metrics")
    series = sum(len(samples) for samples in metrics.values())
    assert series < 2000, series  # bounded by slices, not by the 11,500 distinct values sent
    tasks = set(by_label(metrics, C.REQUESTS + "_total", C.Label.TASK))
    assert tasks <= {*sidecar.settings.tasks.allowlist, C.OTHER}
    models = set(by_label(metrics, C.REQUESTS + "_total", C.Label.MODEL))
    assert {"sim-llama", C.OTHER} == models  # the unknown models' 404s fold into `other`
    assert 1000 == total(metrics, C.FOLDED_LABEL_VALUES + "_total", label="model")
    assert 11_000 == total(metrics, C.REQUESTS + "_total")  # every request counted once
    assert 500 == total(metrics, C.PASSTHROUGH_REQUESTS + "_total")
