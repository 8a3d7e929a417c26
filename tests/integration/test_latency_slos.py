"""Latency SLOs end to end on the simulator: the sidecar counts each request against its
objectives as /metrics and /status show them, and `specwatch replay --json` of its cycle log
gives attainment equal to a count made from the log's own lines (docs/latency-slos.md)."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest
from specwatch import conventions as C
from specwatch.cli.main import main
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig, SimServer

from tests.support import assert_status_valid
from tests.support.http import by_label, eventually, get_json, scrape, serve, sidecar_settings
from tests.support.latency import counted_from_the_log, objectives_at_medians, traffic


async def test_attainment_from_status_and_replay_is_the_count_from_the_cycle_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sim = SimServer(SimConfig(seed=9, cost=CostModel(target_step_ms=2.0)))
    runner, upstream = await serve(sim.app())
    log = tmp_path / "cycles.jsonl"
    first = Sidecar(sidecar_settings(upstream, cycle_log={"path": log}))
    await first.start()
    try:
        await traffic(f"http://127.0.0.1:{first.ports.proxy}", 60)
        await first.drained()
    finally:
        await first.stop()
    # thresholds at the medians the simulator gave: some requests meet them, some do not
    objectives, config = objectives_at_medians(tmp_path, log)
    expected = counted_from_the_log(log, objectives)
    assert all(0 < good < events for good, events in expected.values()), expected
    capsys.readouterr()
    assert 0 == main(["replay", "--json", "--config", str(config), str(log)])
    document = json.loads(capsys.readouterr().out)
    assert_status_valid(document)
    got: dict[str, list[int]] = {o["name"]: [0, 0] for o in objectives}
    for row in document["latency_slos"]:
        got[row["slo"]][0] += row["good"]
        got[row["slo"]][1] += row["requests"]
        assert row["attainment"] == pytest.approx(row["good"] / row["requests"])
    assert expected == got

    # live, with a share of the traffic on a server without speculation: /metrics and /status
    # count the same, errors included (which no cycle log holds), and each variant's
    # attainment stands beside the other's
    base = SimServer(SimConfig(seed=9, num_spec_tokens=0, cost=CostModel(target_step_ms=2.0)))
    base_runner, base_url = await serve(base.app())
    ab = {"baseline_upstream": base_url, "baseline_percent": 40}
    live = Sidecar(sidecar_settings(upstream, latency_slos=objectives, ab=ab))
    await live.start()
    try:
        await traffic(f"http://127.0.0.1:{live.ports.proxy}", 60)
        # three requests vLLM refuses (400): the client's fault, no event of the SLI
        async with aiohttp.ClientSession() as session:
            for _ in range(3):
                body = {"prompt": "x", "max_tokens": -1}
                url = f"http://127.0.0.1:{live.ports.proxy}/v1/completions"
                async with session.post(url, json=body) as response:
                    assert 400 == response.status
        await live.drained()
        admin = f"http://127.0.0.1:{live.ports.admin}"
        family = C.LATENCY_SLO_REQUESTS + "_total"

        async def counted() -> bool:
            results = by_label(await scrape(f"{admin}/metrics"), family, C.Label.RESULT)
            return sum(results.values()) > 0

        await eventually(counted)
        samples = await scrape(f"{admin}/metrics")
        status = await get_json(f"{admin}/status")
    finally:
        await live.stop()
        await runner.cleanup()
        await base_runner.cleanup()
    assert_status_valid(status)
    arms = {(row["slo"], row["variant"]): row for row in status["latency_slos"]}
    for (slo, variant), row in arms.items():
        lower, upper = row["attainment_interval"]
        assert lower <= row["attainment"] <= upper
        if variant == C.Variant.SPEC:
            baseline = arms[(slo, C.Variant.BASELINE)]
            versus = row["attainment_vs_baseline"]
            assert versus["difference"] == pytest.approx(row["attainment"] - baseline["attainment"])
            assert versus["interval"][0] <= versus["difference"] <= versus["interval"][1]
        else:
            assert row["attainment_vs_baseline"] is None
    by_result = by_label(samples, family, C.Label.RESULT)
    # the simulator's 500s (requests 0 and 46 of task code, 23 of chat) are bad requests:
    # 3 against `all`, 2 against `code`; the 400s are no event
    assert 5 == by_result.get(C.SloResult.ERROR, 0)
    assert 6 == status["requests_by_outcome"][C.Outcome.UPSTREAM_ERROR]
    from_status: dict[str, int] = {}
    for row in status["latency_slos"]:
        for result, n in row["by_result"].items():
            from_status[result] = from_status.get(result, 0) + n
    assert by_result == from_status
