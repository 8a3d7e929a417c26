"""A/B in the proxy: a speculative simulator (K = 4) and a baseline one (no speculation) behind
one sidecar. Which side served a request shows in its body: only the speculative side sends a
`speculative_decoding` block, and the proxy passes bodies through unchanged."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from specwatch import conventions as C
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.server import SimConfig, SimServer

from tests.support import assert_status_valid
from tests.support.http import scrape, serve, sidecar_settings, total

PERCENT = 30.0


@pytest.fixture
async def upstreams(sim_config: SimConfig) -> AsyncIterator[tuple[SimServer, str, SimServer, str]]:
    spec = SimServer(sim_config)
    base = SimServer(SimConfig(num_spec_tokens=0, sleep=False, cost=sim_config.cost))
    spec_runner, spec_url = await serve(spec.app())
    base_runner, base_url = await serve(base.app())
    yield spec, spec_url, base, base_url
    await spec_runner.cleanup()
    await base_runner.cleanup()


@pytest.fixture
async def ab_sidecar(
    upstreams: tuple[SimServer, str, SimServer, str], tmp_path: Path
) -> AsyncIterator[Sidecar]:
    _, spec_url, _, base_url = upstreams
    settings = sidecar_settings(
        spec_url,
        ab={
            "baseline_upstream": base_url,
            "baseline_percent": PERCENT,
            "rollback_file": str(tmp_path / "rollback"),
            "rollback_poll_seconds": 0.05,
        },
    )
    car = Sidecar(settings)
    await car.start()
    yield car
    await car.stop()


async def served_by(session: aiohttp.ClientSession, proxy: str, user: str | None) -> str:
    """Send one request; which side answered it."""
    headers = {"X-User-Id": user} if user is not None else {}
    body = {"prompt": "a b c d", "max_tokens": 8, "temperature": 0}
    async with session.post(proxy + "/v1/completions", json=body, headers=headers) as response:
        assert 200 == response.status
        document: Any = orjson.loads(await response.read())
    return "spec" if "speculative_decoding" in document["metrics"] else "baseline"


async def test_share_stickiness_rollback_and_variant_metrics(
    upstreams: tuple[SimServer, str, SimServer, str], ab_sidecar: Sidecar, tmp_path: Path
) -> None:
    spec_sim, _, base_sim, _ = upstreams
    proxy = f"http://127.0.0.1:{ab_sidecar.ports.proxy}"
    admin = f"http://127.0.0.1:{ab_sidecar.ports.admin}"
    n = 800
    async with aiohttp.ClientSession() as session:
        sides = await asyncio.gather(*(served_by(session, proxy, f"user-{i}") for i in range(n)))
        # 1. The share: binomial, within 4 standard errors of the configured 30%.
        share = sides.count("baseline") / n
        error = math.sqrt(0.3 * 0.7 / n)
        assert abs(share - PERCENT / 100) < 4 * error, share
        # Without the key header the request id decides, so the share holds there too.
        anonymous = await asyncio.gather(*(served_by(session, proxy, None) for _ in range(400)))
        assert abs(anonymous.count("baseline") / 400 - 0.3) < 4 * math.sqrt(0.21 / 400)
        # 2. Stickiness: every user lands where it landed before, ten times over.
        for i in range(40):
            again = {await served_by(session, proxy, f"user-{i}") for _ in range(10)}
            assert {sides[i]} == again, i
        spec_users = [f"user-{i}" for i in range(n) if sides[i] == "spec"][:20]
        # 3. Rollback by the admin endpoint: the very next request goes to the baseline.
        async with session.post(admin + "/admin/rollback", json={"rollback": True}) as response:
            assert 200 == response.status
            assert (await response.json())["rolled_back"] is True
        assert {"baseline"} == {await served_by(session, proxy, u) for u in spec_users}
        async with session.post(admin + "/admin/rollback", json={"rollback": False}) as response:
            assert 200 == response.status
        assert {"spec"} == {await served_by(session, proxy, u) for u in spec_users}
        # ... and by the flag file: rolled back once the watcher has seen it, forward after.
        flag = tmp_path / "rollback"
        flag.touch()
        await until(lambda: ab_sidecar.router.rolled_back)
        assert {"baseline"} == {await served_by(session, proxy, u) for u in spec_users}
        flag.unlink()
        await until(lambda: not ab_sidecar.router.rolled_back)
        assert {"spec"} == {await served_by(session, proxy, u) for u in spec_users}
        async with session.post(admin + "/admin/rollback", data=b"{") as response:
            assert 400 == response.status
    # 4. Metrics carry the variant, and agree with what each upstream served.
    await ab_sidecar.drained()
    samples = await scrape(admin + "/metrics")
    served_spec, served_base = served(spec_sim), served(base_sim)
    assert served_spec == total(samples, C.REQUESTS + "_total", variant="spec")
    assert served_base == total(samples, C.REQUESTS + "_total", variant="baseline")
    assert served_base == total(
        samples, C.REQUESTS + "_total", variant="baseline", outcome=C.Outcome.OBSERVED
    )
    for family in (C.TTFT_SECONDS + "_count", C.COMPLETION_TOKENS + "_total"):
        assert total(samples, family, variant="baseline") > 0
        assert total(samples, family, variant="spec") > 0
    # Only the speculative side's steps count as speculation.
    assert spec_sim.metrics.total(C.VLLM_NUM_DRAFTS) == total(samples, C.SPEC_STEPS + "_total")
    assert 0.3 == total(samples, C.AB_BASELINE_SHARE)
    assert 0.0 == total(samples, C.AB_ROLLED_BACK)
    for to in ("rolled_back", "rolled_forward"):
        assert 1.0 == total(samples, C.AB_SWITCHES + "_total", to=to, source="admin")
        assert 1.0 == total(samples, C.AB_SWITCHES + "_total", to=to, source="file")
    # The measured gain (baseline TPOT over spec TPOT) now feeds the model's zone.
    snapshot = ab_sidecar.analyzer.snapshot(ab_sidecar._clock())
    (rollup,) = snapshot.rollups
    assert rollup.gain is not None
    assert "measured" == rollup.gain.method


def served(sim: SimServer) -> float:
    """Requests the simulator finished (all here run to max_tokens)."""
    labels = {**sim.metrics.labels(), "finished_reason": "length"}
    return sim.metrics.registry.get_sample_value(C.VLLM_REQUEST_SUCCESS + "_total", labels) or 0


async def until(condition: Any, seconds: float = 5.0) -> None:
    async with asyncio.timeout(seconds):
        while not condition():  # noqa: ASYNC110  # polls state a background task changes
            await asyncio.sleep(0.01)


async def test_rollback_needs_a_token_off_loopback(
    upstreams: tuple[SimServer, str, SimServer, str], tmp_path: Path
) -> None:
    _, spec_url, _, base_url = upstreams
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    ab = {"baseline_upstream": base_url, "baseline_percent": 10}
    body = {"rollback": True}
    # Admin on every interface, no token configured: refused, and says what to do.
    open_car = Sidecar(sidecar_settings(spec_url, admin_host="0.0.0.0", ab=ab))
    await open_car.start()
    try:
        url = f"http://127.0.0.1:{open_car.ports.admin}/admin/rollback"
        async with aiohttp.ClientSession() as session, session.post(url, json=body) as response:
            assert 403 == response.status
            assert "admin_token_file" in (await response.json())["error"]
        assert open_car.router.rolled_back is False
    finally:
        await open_car.stop()
    # With a token: only the right bearer token switches.
    car = Sidecar(
        sidecar_settings(
            spec_url, admin_host="0.0.0.0", ab={**ab, "admin_token_file": str(token_file)}
        )
    )
    await car.start()
    try:
        url = f"http://127.0.0.1:{car.ports.admin}/admin/rollback"
        async with aiohttp.ClientSession() as session:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
                async with session.post(url, json=body, headers=headers) as response:
                    assert 401 == response.status
            assert car.router.rolled_back is False
            good = {"Authorization": "Bearer s3cret-token"}
            async with session.post(url, json=body, headers=good) as response:
                assert 200 == response.status
            assert car.router.rolled_back is True
            async with session.get(f"http://127.0.0.1:{car.ports.admin}/status") as response:
                text = await response.text()
            assert "s3cret-token" not in text
            status = orjson.loads(text)
            assert_status_valid(status)
            assert status["ab"]["rolled_back"] is True
            assert {"admin": "admin request from 127.0.0.1"} == status["ab"]["held_by"]
    finally:
        await car.stop()


async def test_without_ab_there_is_no_rollback_endpoint(sidecar: Sidecar) -> None:
    url = f"http://127.0.0.1:{sidecar.ports.admin}/admin/rollback"
    async with aiohttp.ClientSession() as session, session.post(url, json={}) as response:
        assert 404 == response.status


async def test_auto_rollback_when_a_model_stays_red(sim_config: SimConfig) -> None:
    """A draft that is accepted 20% of the time: the model's zone turns red, and after the
    configured time every request goes to the baseline, with the switch exported."""
    from specwatch.sim.acceptance import AcceptanceModel

    bad = SimServer(
        replace(sim_config, acceptance=AcceptanceModel(task_alpha={}, default_alpha=0.2))
    )
    base = SimServer(SimConfig(num_spec_tokens=0, sleep=False, cost=sim_config.cost))
    bad_runner, bad_url = await serve(bad.app())
    base_runner, base_url = await serve(base.app())
    settings = sidecar_settings(
        bad_url,
        ab={"baseline_upstream": base_url, "baseline_percent": 0, "auto_rollback_seconds": 0.5},
        zones={
            "min_trials": 50,
            "min_requests": 3,
            "min_dwell_seconds": 0,
            "evaluation_interval_seconds": 0.05,
        },
    )
    car = Sidecar(settings)
    await car.start()
    proxy = f"http://127.0.0.1:{car.ports.proxy}"
    try:
        async with aiohttp.ClientSession() as session:
            assert "spec" == await served_by(session, proxy, "user-1")
            async with asyncio.timeout(15):
                while not car.router.rolled_back:
                    await served_by(session, proxy, "user-1")
                    await asyncio.sleep(0.02)
            assert {"auto"} == set(car.router.held_by)
            assert {"baseline"} == {await served_by(session, proxy, f"u{i}") for i in range(20)}
        samples = await scrape(f"http://127.0.0.1:{car.ports.admin}/metrics")
        assert 1.0 == total(samples, C.AB_SWITCHES + "_total", to="rolled_back", source="auto")
        assert 1.0 == total(samples, C.AB_ROLLED_BACK)
    finally:
        await car.stop()
        await bad_runner.cleanup()
        await base_runner.cleanup()
