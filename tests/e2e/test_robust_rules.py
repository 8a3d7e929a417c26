"""The request-level interval in Prometheus: the generated rules compute /status's bounds.

A real Prometheus runs the generated recording rules (time scale 60: the 1h window is 60 s)
over a sidecar in front of a simulator whose requests differ (a Beta with intra-slice
correlation 0.1, so the design effect is well above 1). Timeline: a first wave creates every
slice's series; 50 s later the measured wave; 15 s after it, Prometheus' 60-s range starts
between the two waves and the sidecar's 30-s window holds only the second. Prometheus
extrapolates `increase()` to the edges of its range, by the same factor f for every counter of
a slice (they are scraped together): alpha-hat is then exactly the same, and the bounds are
the sidecar's formula on f times the window's sums. The test shows both, and how far f moves
the bounds.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from specwatch import conventions as C
from specwatch.analysis.counting.stats import proportion_interval
from specwatch.gen import promql as Q
from specwatch.gen.writer import RECORDING_RULES, render
from specwatch.settings import load_settings
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import AcceptanceModel
from specwatch.sim.server import SimConfig, SimServer

from tests.support.http import eventually, serve, sidecar_settings
from tests.support.servers import INTERVAL_SECONDS, api, prometheus, scraping

pytestmark = pytest.mark.e2e

TASKS = ("code", "chat", "translation")
FIRST_TO_SECOND, SECOND_TO_QUERY = 50.0, 15.0


def series(prom: str, query: str, at: float) -> dict[str, float]:
    """task -> value of a per-slice query at `at` (the ctx bucket is 0-512 throughout)."""
    result = api(prom, "/api/v1/query", query=query, time=at)["data"]["result"]
    return {sample["metric"]["task"]: float(sample["value"][1]) for sample in result}


async def wave(proxy: str, per_task: int, seed: int) -> None:
    async with aiohttp.ClientSession() as session:

        async def one(task: str, i: int) -> None:
            body = {"model": "sim-llama", "prompt": f"[task:{task}] request {seed} {i}",
                    "max_tokens": 48 + (i * 7) % 64, "temperature": 0}  # fmt: skip
            async with session.post(
                proxy + "/v1/completions", json=body, headers={"X-Task-Type": task}
            ) as response:
                assert 200 == response.status
                await response.read()

        await asyncio.gather(*(one(task, i) for task in TASKS for i in range(per_task)))


async def test_recorded_bounds_are_the_sidecars_request_level_bounds(tmp_path: Path) -> None:
    sim = SimServer(SimConfig(seed=4, sleep=False, acceptance=AcceptanceModel(request_icc=0.1)))
    runner, url = await serve(sim.app())
    car = Sidecar(sidecar_settings(url, window={"length_seconds": 30, "bucket_seconds": 1}))
    await car.start()
    (tmp_path / "recording.yml").write_bytes(
        render(load_settings(), time_scale=60)[RECORDING_RULES]
    )
    proxy = f"http://127.0.0.1:{car.ports.proxy}"
    try:
        with prometheus(tmp_path, ["recording.yml"], [f"127.0.0.1:{car.ports.admin}"]) as prom:
            await scraping(prom)  # the first wave's series are seen the second they appear
            started = time.time()
            await wave(proxy, 3, seed=1)  # creates every slice's series
            await asyncio.sleep(started + FIRST_TO_SECOND - time.time())
            second = time.time()
            await wave(proxy, 40, seed=2)
            await car.drained()
            assert time.time() - second < SECOND_TO_QUERY - 3, "the second wave took too long"
            await asyncio.sleep(second + SECOND_TO_QUERY - time.time())
            at = time.time()
            status = car.analyzer.snapshot(at)
            window = "1h"  # 60 s at this time scale
            queries = {
                "estimate": Q.alpha("slice", window),
                "robust": Q.robust_alpha("slice", window),
                "lower": Q.alpha_bound("slice", "lower", window),
                "upper": Q.alpha_bound("slice", "upper", window),
                "design_effect": Q.design_effect("slice", window),
                "trials": Q.increase("slice", C.ACCEPTANCE_TRIALS, window),
                "requests": Q.increase("slice", C.SLICE_REQUESTS, window),
                "aa": Q.increase("slice", C.REQUEST_ACCEPTED_SQUARED, window),
                "at": Q.increase("slice", C.REQUEST_ACCEPTED_X_TRIALS, window),
                "tt": Q.increase("slice", C.REQUEST_TRIALS_SQUARED, window),
            }
            got: dict[str, dict[str, float]] = {}

            def stamps() -> set[float]:
                return {
                    stamp
                    for query in queries.values()
                    for stamp in series(prom, f"timestamp({query})", at).values()
                }

            def one_evaluation() -> bool:
                """Every series read from the one evaluation stamped at or before `at`:
                Prometheus commits a group's rules one by one, and on a busy machine an
                evaluation of this group can take seconds (once in CI: 7 s between two rules)."""
                before = stamps()
                got.update({name: series(prom, query, at) for name, query in queries.items()})
                return 1 == len(before) and before == stamps()

            await eventually(one_evaluation, seconds=60, every=INTERVAL_SECONDS)
    finally:
        await car.stop()
        await runner.cleanup()
    views = {view.key.task: view for view in status.slices if view.key.ctx_bucket == "0-512"}
    assert set(TASKS) <= set(views)
    report: list[dict[str, Any]] = []
    for task in TASKS:
        view = views[task]
        counts, alpha = view.window, view.stats.alpha
        assert alpha is not None
        assert alpha.design_effect is not None
        assert 40 == counts.requests  # the window holds the second wave only
        f = got["trials"][task] / counts.trials  # Prometheus' extrapolation to its range
        for name, exact in (("requests", counts.requests), ("aa", counts.aa),
                            ("at", counts.at), ("tt", counts.tt)):  # fmt: skip
            assert pytest.approx(exact * f, rel=1e-9) == got[name][task], (task, name)
        # alpha-hat: the same figure; f cancels (the bounds' centre reads the same increases)
        assert pytest.approx(alpha.estimate, rel=1e-9) == got["robust"][task]
        assert pytest.approx(alpha.estimate, rel=1e-3) == got["estimate"][task]  # rate()'s
        # the bounds: the sidecar's formula on the sums Prometheus saw (its Student's t past
        # 20 degrees of freedom is the polynomial, within 1e-7 of the sidecar's exact one)
        trials = got["trials"][task]
        on_prometheus = proportion_interval(
            got["requests"][task], got["robust"][task] * trials, trials,
            got["aa"][task], got["at"][task], got["tt"][task], 0.95,
        )  # fmt: skip
        assert on_prometheus is not None
        assert pytest.approx(on_prometheus.lower, rel=1e-6) == got["lower"][task]
        assert pytest.approx(on_prometheus.upper, rel=1e-6) == got["upper"][task]
        # and against /status: equal up to what f does to the evidence
        width = alpha.upper - alpha.lower
        assert abs(got["lower"][task] - alpha.lower) < 0.02 * width, (task, f)
        assert abs(got["upper"][task] - alpha.upper) < 0.02 * width, (task, f)
        assert pytest.approx(alpha.design_effect, rel=0.01) == got["design_effect"][task]
        report.append({"task": task, "f": f, "status": (alpha.lower, alpha.upper),
                       "rules": (got["lower"][task], got["upper"][task]),
                       "design_effect": alpha.design_effect})  # fmt: skip
    assert max(r["design_effect"] for r in report) > 1.5  # requests differ: it matters here
    print(report)
