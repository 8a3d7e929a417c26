"""What specwatch adds to each request, said by specwatch: `specwatch_proxy_added_seconds{path}`
counts every request answered whole, streamed or not, and holds its span less the upstream's,
so a simulator that takes its time (sleeping as its cost model says) shows in the client's
span and not in what specwatch adds. The CPU a request costs is the process' own counter over
the requests, beside it on /metrics."""

from __future__ import annotations

import time

import aiohttp
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.server import SimConfig, SimServer

from tests.support.http import post, scrape, serve, sidecar_settings, total

ADDED = "specwatch_proxy_added_seconds"


async def test_the_time_added_is_counted_per_path_and_leaves_the_upstreams_out() -> None:
    sim = SimServer(SimConfig(seed=3))  # sleeps: a step takes its 4 ms
    runner, url = await serve(sim.app())
    car = Sidecar(sidecar_settings(url))
    await car.start()
    spans = 0.0
    try:
        proxy = f"http://127.0.0.1:{car.ports.proxy}"
        async with aiohttp.ClientSession() as session:
            for i in range(20):
                path = "/v1/chat/completions" if i % 2 else "/v1/completions"
                body = {"model": "sim-llama", "max_tokens": 48, "stream": i % 4 < 2}
                body |= (
                    {"messages": [{"role": "user", "content": f"q{i}"}]}
                    if i % 2
                    else {"prompt": f"q{i}"}
                )
                started = time.perf_counter()
                status, _ = await post(session, proxy + path, body)
                spans += time.perf_counter() - started
                assert 200 == status
            await car.drained()
        samples = await scrape(f"http://127.0.0.1:{car.ports.admin}/metrics")
    finally:
        await car.stop()
        await runner.cleanup()
    for path in ("/v1/chat/completions", "/v1/completions"):
        assert 10 == total(samples, ADDED + "_count", path=path)
    added = total(samples, ADDED + "_sum")
    assert 0 < added < 0.5 * spans  # the upstream's sleeping is the span, not what is added
    assert total(samples, "process_cpu_seconds_total") > 0  # the CPU, per request beside it
