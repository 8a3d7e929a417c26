"""Every query of every generated dashboard panel, run against a real Prometheus.

Prometheus (with the generated recording rules, time scale 60) scrapes a real specwatch in
front of the simulator under a mixed load that includes a drift (so the drift annotation has
something to show) and one unreadable request (so the parse-error series exists), and a second
specwatch with another speculative config on track `canary` beside it (so the stable-vs-canary
panels compare two configs), both with a latency objective. Template variables are replaced by
real values; each query must parse and return data over the run.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import aiohttp
import pytest
from specwatch.commands.demo import demo_settings
from specwatch.commands.snapshot import render_snapshot
from specwatch.gen.dashboards import panel_queries, render_dashboards
from specwatch.gen.writer import RECORDING_RULES, render
from specwatch.settings import ABSettings, CostSettings, ShadowSettings, load_settings
from specwatch.settings.slo import LatencyObjective
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import AcceptanceModel, Drop
from specwatch.sim.server import SimConfig, SimServer
from specwatch.sim.workload import run_load

from tests.support.http import serve
from tests.support.servers import api, prometheus

pytestmark = pytest.mark.e2e

VALUES = {"$model": "sim-llama", "$ctx_bucket": "0-512", "$task": "code"}
# a latency objective on both sidecars, so the SLO row has each config and track
OBJECTIVES = (LatencyObjective(name="chat", ttft_ms=50.0, tpot_ms=5.0),)


def substitute(expr: str) -> str:
    for name, value in VALUES.items():
        expr = expr.replace(name, value)
    return expr


async def test_every_panel_query_parses_and_returns_data(tmp_path: Path) -> None:
    sim = SimServer(
        SimConfig(seed=3, acceptance=AcceptanceModel(drops=(Drop(after=20.0, factor=0.6),)))
    )
    sim_runner, sim_url = await serve(sim.app())
    # A/B on, so the A/B panels have both variants: 20% to a baseline without speculation.
    base = SimServer(SimConfig(seed=3, num_spec_tokens=0))
    base_runner, base_url = await serve(base.app())
    # A/B, the shadow check and a price on, so their panels have data too.
    ab = ABSettings(baseline_upstream=base_url, baseline_percent=20)
    settings = demo_settings(0, 0).model_copy(
        update={
            "upstream": sim_url,
            "ab": ab,
            "shadow": ShadowSettings(fraction=0.2),
            "latency_slos": OBJECTIVES,
            "cost": CostSettings(
                price_per_accelerator_hour=2.5, baseline_price_per_accelerator_hour=2.5
            ),
        }
    )
    car = Sidecar(settings)  # 1-second drift buckets, like the demo
    await car.start()
    canary = Sidecar(
        demo_settings(0, 0).model_copy(
            update={
                "upstream": sim_url,
                "track": "canary",
                "latency_slos": OBJECTIVES,
                # a schedule the simulator does not follow (it drafts 4 at every batch size):
                # schedule_not_applied, so the causes panel has a cause to show
                "speculative_config": json.dumps(
                    {
                        "method": "ngram",
                        "num_speculative_tokens": 4,
                        "num_speculative_tokens_per_batch_size": [[1, 1, 4], [2, 1024, 1]],
                    }
                ),
            }
        )
    )
    await canary.start()
    # Time scale 60 makes the canary's 30-minute window 30 s, but not the traffic 60 times
    # denser: at the production gates (30 requests a slice) the canary's busiest slice is at
    # 20-30 requests in 30 s here, and the difference is sometimes not recorded at all.
    rules = load_settings()
    rules = rules.model_copy(
        update={"zones": rules.zones.model_copy(update={"min_requests": 10, "min_trials": 300})}
    )
    (tmp_path / "recording.yml").write_bytes(render(rules, time_scale=60)[RECORDING_RULES])
    started = time.time()
    try:
        targets = [f"127.0.0.1:{c.ports.admin}" for c in (car, canary)]
        with prometheus(tmp_path, ["recording.yml"], targets) as prom:
            async with (
                aiohttp.ClientSession() as session,
                session.post(
                    f"http://127.0.0.1:{car.ports.proxy}/v1/completions", data=b"{not json"
                ) as response,
            ):
                await response.read()
            await asyncio.gather(
                run_load(f"http://127.0.0.1:{car.ports.proxy}", "sim-llama", seed=5,
                         concurrency=6, duration=45.0),
                run_load(f"http://127.0.0.1:{canary.ports.proxy}", "sim-llama", seed=6,
                         concurrency=2, duration=45.0),
            )  # fmt: skip
            await asyncio.sleep(5)  # waits out: rule evaluations over the load's last samples
            failures = []
            checked = 0
            for name, data in render_dashboards(load_settings()).items():
                for title, expr in panel_queries(json.loads(data)):
                    result = api(
                        prom, "/api/v1/query_range", query=substitute(expr),
                        start=started, end=time.time(), step=1,
                    )  # fmt: skip
                    checked += 1
                    if result["status"] != "success" or not result["data"]["result"]:
                        failures.append(f"{name}: {title}: {expr}")
            assert [] == failures
            assert checked >= 50
            png = render_snapshot(prom, tmp_path / "overview.png", load_settings(), minutes=2)
            assert png.read_bytes().startswith(b"\x89PNG")
    finally:
        await car.stop()
        await canary.stop()
        await sim_runner.cleanup()
        await base_runner.cleanup()
