"""A sidecar knows the speculative config it watches and its track, labels every series with
them, and records a change of config across a restart on the same state directory.

The simulator stands in for vLLM here (it serves /version as vLLM 0.32 does); the real-vLLM
version of the restart is tests/e2e/test_vllm_configs.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog
from aiohttp import web
from specwatch import conventions as C
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.server import SimServer
from specwatch.upstream.configwatch import ConfigWatch, run_label
from specwatch.upstream.specconfig import config_id, spec_config

from tests.support import assert_status_valid
from tests.support.http import eventually, post, scrape, serve, sidecar_settings, total
from tests.support.workloads import mixed_requests

NGRAM = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4}
DRAFT = {"model": "/models/draft", "num_speculative_tokens": 3}


async def run_traffic(sidecar: Sidecar, seed: int, n: int = 40) -> dict[str, Any]:
    """`n` mixed requests through the proxy, then the /status document once all are read."""
    proxy, admin = (
        f"http://127.0.0.1:{sidecar.ports.proxy}",
        f"http://127.0.0.1:{sidecar.ports.admin}",
    )
    async with aiohttp.ClientSession() as session:
        for path, body, headers in mixed_requests(seed=seed, n=n):
            status, _ = await post(session, proxy + path, body, headers)
            assert 200 == status
        await sidecar.drained()
        async with session.get(admin + "/status") as response:
            document: dict[str, Any] = await response.json()
    return document


async def started(
    upstream: str, spec: dict[str, Any], state: Path, track: str = "stable"
) -> Sidecar:
    settings = sidecar_settings(
        upstream,
        speculative_config=json.dumps(spec),
        track=track,
        state_dir=str(state),
        zones={"min_trials": 50, "min_requests": 5},
    )
    car = Sidecar(settings)
    await car.start()
    await asyncio.wait_for(car.config.resolved.wait(), 10)
    return car


async def test_the_config_and_track_are_on_status_and_on_every_series_of_the_analysis(
    sim: tuple[SimServer, str], tmp_path: Path
) -> None:
    car = await started(sim[1], NGRAM, tmp_path, track="canary")
    try:
        document = await run_traffic(car, seed=1)
        assert_status_valid(document)
        config = document["config"]
        expected_id = config_id(NGRAM, "0.32.0")
        assert {
            "id": expected_id,
            "method": "ngram",
            "draft": None,
            "num_speculative_tokens": 2,
            "schedule": [],
            "rejection_sample_method": "standard",
            "vllm_version": "0.32.0",  # from the simulator's GET /version
            "track": "canary",
            "model": None,
            "verifier": "lossless",
            "engine": "vllm",  # GET /version answered
            "engine_version": "0.32.0",
            "gate": None,
        } == config
        samples = await scrape(f"http://127.0.0.1:{car.ports.admin}/metrics")
        (info,) = samples["specwatch_spec_config_info"]
        # how it speculates, whatever vLLM's version and track: the canary alert's test of
        # configs that should accept alike
        speculation = spec_config(NGRAM, "0.32.0", "canary").speculation
        assert speculation == spec_config(NGRAM, "0.99.0", "stable").speculation
        assert speculation != spec_config({**NGRAM, "num_speculative_tokens": 3}, "0.32.0",
                                          "canary").speculation  # fmt: skip
        assert {"config": expected_id, "track": "canary", "method": "ngram", "draft": "",
                "num_speculative_tokens": "2", "vllm_version": "0.32.0",
                "speculation": speculation, "engine": "vllm"} == info[0]  # fmt: skip
        for name in (C.SPEC_STEPS, C.SLICE_REQUESTS, C.MODEL_REQUESTS, C.REQUESTS):
            series = samples[name + "_total"]
            assert series
            assert {(expected_id, "canary")} == {(s["config"], s["track"]) for s, _ in series}
        assert 0 == total(samples, C.CONFIG_CHANGES + "_total")
        assert document["change"] is None
    finally:
        await car.stop()


async def test_a_restart_with_another_config_records_the_change_slice_by_slice(
    sim: tuple[SimServer, str], tmp_path: Path
) -> None:
    first = await started(sim[1], NGRAM, tmp_path)
    try:
        before = await run_traffic(first, seed=2, n=60)
    finally:
        await first.stop()  # saves the config's sums in the state directory
    saved = json.loads((tmp_path / "config.json").read_bytes())["state"]
    assert config_id(NGRAM, "0.32.0") == saved["config"]["id"]

    with structlog.testing.capture_logs() as logs:
        second = await started(sim[1], DRAFT, tmp_path)
        try:
            after = await run_traffic(second, seed=3, n=60)
            samples = await scrape(f"http://127.0.0.1:{second.ports.admin}/metrics")
        finally:
            await second.stop()
    assert_status_valid(after)
    change = after["change"]
    assert (config_id(NGRAM, "0.32.0"), config_id(DRAFT, "0.32.0")) == (
        change["from"]["id"],
        change["to"]["id"],
    )
    assert "draft_model" == change["to"]["method"]
    rows = {(r["model"], r["ctx_bucket"], r["task"]): r for r in change["slices"]}
    for row in before["slices"]:  # every slice of the first run is there with its counts
        key = (row["model"], row["ctx_bucket"], row["task"])
        assert row["since_start"]["trials"] == rows[key]["before"]["trials"], key
    now = {(r["model"], r["ctx_bucket"], r["task"]): r["since_start"] for r in after["slices"]}
    for key, counts in now.items():
        assert counts["trials"] == rows[key]["after"]["trials"], key
    assert {r["verdict"] for r in change["slices"]} <= {"better", "worse", "same", "insufficient"}
    (model,) = change["models"].values()
    assert model["overall"] is not None
    assert 1 == total(samples, C.CONFIG_CHANGES + "_total")
    (event,) = [e for e in logs if e["event"] == "config_changed"]
    assert (event["previous"], event["config"]) == (change["from"]["id"], change["to"]["id"])


async def test_a_restart_with_the_same_config_carries_its_sums_and_records_no_change(
    sim: tuple[SimServer, str], tmp_path: Path
) -> None:
    trials = []
    for seed in (4, 5):
        car = await started(sim[1], NGRAM, tmp_path)
        try:
            document = await run_traffic(car, seed=seed)
        finally:
            await car.stop()
        assert document["change"] is None
        trials.append(sum(row["since_start"]["trials"] for row in document["slices"]))
    saved = json.loads((tmp_path / "config.json").read_bytes())["state"]
    assert sum(trials) == sum(row[5] for row in saved["slices"] if row[1] != C.ALL)


async def test_a_vllm_without_version_leaves_the_version_unknown_without_waiting() -> None:
    async def nothing(_request: web.Request) -> web.Response:
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/version", nothing)
    runner, url = await serve(app)
    car = Sidecar(sidecar_settings(url, speculative_config=json.dumps(NGRAM)))
    try:
        await car.start()
        await eventually(car.config.resolved.is_set, seconds=5)
        assert car.config.config.vllm_version is None
        assert config_id(NGRAM, None) == car.config.config.id
    finally:
        await car.stop()
        await runner.cleanup()


async def test_a_vllm_that_is_down_is_waited_for_by_serve_and_for_a_while_by_proxy() -> None:
    """`proxy` labels with an unknown version once `version_wait_seconds` have passed without an
    answer; `serve` (whose own vLLM may load for many minutes) keeps waiting."""
    now = [0.0]

    def clock() -> float:
        now[0] += 100.0  # every look at the clock is 100 s later
        return now[0]

    down = "http://127.0.0.1:9"  # discard port: nothing listens
    proxy, serve_ = (
        ConfigWatch(down, run_label(NGRAM, "stable", None), 120.0, clock),
        ConfigWatch(down, run_label(NGRAM, "stable", None), None, clock),
    )
    tasks = [asyncio.create_task(watch.run()) for watch in (proxy, serve_)]
    try:
        await asyncio.wait_for(proxy.resolved.wait(), 10)
        assert proxy.config.vllm_version is None
        assert not serve_.resolved.is_set()  # the same looks, past the proxy's deadline
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@pytest.mark.parametrize("loads", ["/version", "/props"])
async def test_an_engine_still_loading_is_asked_again_not_taken_for_one_without_a_version(
    loads: str,
) -> None:
    """llama.cpp's server answers every path 503 while it loads its model: the version is
    learnt once it has loaded, not left unknown. Each probe on its own: a server that loads
    behind /version (vLLM-like: its version there once loaded), and one that has no /version
    and loads behind /props (llama.cpp's build)."""
    loaded = asyncio.Event()
    asked = [0]

    async def answer(request: web.Request) -> web.Response:
        asked[0] += 1
        if request.path == loads and not loaded.is_set():
            body = {"error": {"message": "Loading model", "code": 503}}
            return web.json_response(body, status=503)
        if request.path == loads == "/version":
            return web.json_response({"version": "0.32.0"})
        if request.path == loads == "/props":
            return web.json_response({"build_info": "b11434-test", "total_slots": 1})
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/version", answer)
    app.router.add_get("/props", answer)
    runner, url = await serve(app)
    watch = ConfigWatch(url, run_label(NGRAM, "stable", None), None)
    task = asyncio.create_task(watch.run())
    try:
        await eventually(lambda: asked[0] >= 3 or watch.resolved.is_set(), seconds=10)
        assert not watch.resolved.is_set()  # still loading: not an answer
        loaded.set()
        await asyncio.wait_for(watch.resolved.wait(), 10)
        expected = ("vllm", "0.32.0") if loads == "/version" else ("llamacpp", "b11434-test")
        assert (watch.config.engine, watch.config.vllm_version) == expected
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await runner.cleanup()
