"""A vLLM that answers without its per-request speculative block (started without the flags):
the sidecar says so within its first requests — a warning naming the flags for the version it
saw, `/status` `per_request_data`, the model's cause `no_per_request_data`, coverage 0 (not
null) — instead of sitting silently empty."""

from __future__ import annotations

from typing import Any

import structlog
from specwatch import conventions as C
from specwatch.settings import load_settings
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.server import SimConfig, SimServer
from specwatch.sim.workload import run_load

from tests.support import assert_status_valid
from tests.support.http import eventually, get_json, serve


async def test_a_vllm_without_the_flags_is_named_with_the_flags_it_needs() -> None:
    sim = SimServer(SimConfig(seed=3, sleep=False, spec_metrics="none"))
    runner, url = await serve(sim.app())
    settings = load_settings(
        upstream=url,
        port=0,
        admin_port=0,
        scrape_interval_seconds=0.2,
        zones={"evaluation_interval_seconds": 0.2},
    )
    car = Sidecar(settings)
    status: dict[str, Any] = {}
    with structlog.testing.capture_logs() as logs:
        await car.start()
        try:
            admin = f"http://127.0.0.1:{car.ports.admin}/status"
            proxy = f"http://127.0.0.1:{car.ports.proxy}"
            await run_load(proxy, sim.config.model, seed=2, concurrency=4, requests=12)
            await car.drained()

            async def named() -> bool:
                status.update(await get_json(admin))
                models = status["models"]
                return bool(models) and any(
                    c["kind"] == C.CauseKind.NO_PER_REQUEST_DATA for c in models[0]["causes"]
                )

            await eventually(named, seconds=30)
            # and the log line, at the next evaluation
            await eventually(
                lambda: any(e["event"] == "per_request_data_missing" for e in logs), seconds=30
            )
        finally:
            await car.stop()
            await runner.cleanup()
    assert_status_valid(status)
    model = sim.config.model
    none = dict.fromkeys(("alpha_hat", "rate", "tau", "per_position"), False)
    assert {"with": 0, "without": 12, "source": "vllm_metrics", "data": "none",
            "supports": none, "reason": None} == status["per_request_data"][model]  # fmt: skip
    (cause,) = [c for c in status["models"][0]["causes"] if c["kind"] == "no_per_request_data"]
    assert "--per-request-spec-decode-metrics detailed" in cause["flags"]
    assert cause["vllm_version"] == sim.config.version
    (engine,) = status["vllm"]["models"]
    assert 0.0 == engine["coverage"]
    said = [e for e in logs if e["event"] == "per_request_data_missing"]
    assert 1 == len(said)
    assert said[0]["flags"] == cause["flags"]
