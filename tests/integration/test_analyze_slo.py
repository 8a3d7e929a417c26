"""Latency objectives over cycle logs: `analyze --slo` counts each objective's requests per
group and variant as `replay` does (and as the log's own lines count them), and `compare`
gives the canary's attainment against stable's with an interval."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from specwatch.cli.main import main
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig, SimServer

from tests.support.http import serve, sidecar_settings
from tests.support.latency import counted_from_the_log, objectives_at_medians, traffic

pytest.importorskip("duckdb")


async def logged(tmp_path: Path) -> tuple[Path, Path]:
    """A stable sidecar with 40% of its traffic on a server without speculation, and a canary
    beside it, each writing its cycle log."""
    cost = CostModel(target_step_ms=2.0)
    runner, upstream = await serve(SimServer(SimConfig(seed=9, cost=cost)).app())
    base_runner, base_url = await serve(
        SimServer(SimConfig(seed=9, num_spec_tokens=0, cost=cost)).app()
    )
    logs = (tmp_path / "stable.jsonl", tmp_path / "canary.jsonl")
    ab = {"baseline_upstream": base_url, "baseline_percent": 40}
    cars = (
        Sidecar(sidecar_settings(upstream, cycle_log={"path": logs[0]}, ab=ab)),
        Sidecar(sidecar_settings(upstream, cycle_log={"path": logs[1]}, track="canary")),
    )
    try:
        for car in cars:
            await car.start()
            try:
                await traffic(f"http://127.0.0.1:{car.ports.proxy}", 60)
                await car.drained()
            finally:
                await car.stop()
    finally:
        await runner.cleanup()
        await base_runner.cleanup()
    return logs


def document(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    capsys.readouterr()
    assert 0 == main(list(argv))
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


async def test_analyze_counts_what_replay_counts_and_compare_sets_canary_against_stable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stable, canary = await logged(tmp_path)
    objectives, config = objectives_at_medians(tmp_path, stable, canary)

    replayed = document(capsys, "replay", "--json", "--config", str(config), str(stable))
    analyzed = document(
        capsys, "analyze", "--json", "--quiet", "--slo", "--by", "model", "--config", str(config),
        str(stable),
    )  # fmt: skip
    assert analyzed["latency_slos"], analyzed
    by_arm = {(r["slo"], r["model"], r["variant"]): r for r in replayed["latency_slos"]}
    assert {(r["slo"], r["model"], r["variant"]) for r in analyzed["latency_slos"]} == set(by_arm)
    assert {"spec", "baseline"} == {variant for _, _, variant in by_arm}
    for row in analyzed["latency_slos"]:
        live = by_arm[(row["slo"], row["model"], row["variant"])]
        assert (row["good"], row["requests"]) == (live["good"], live["requests"])
        # the same minutes (the log is in order of finishing): the same interval
        assert row["attainment_interval"] == pytest.approx(live["attainment_interval"])
    # and both are the count made from the log's own lines
    expected = counted_from_the_log(stable, objectives)
    for name, (good, events) in expected.items():
        mine = [r for r in analyzed["latency_slos"] if r["slo"] == name]
        assert (good, events) == (sum(r["good"] for r in mine), sum(r["requests"] for r in mine))

    compared = document(
        capsys, "compare", "--json", "--quiet", "--split", "track", "--config", str(config),
        str(stable), str(canary),
    )  # fmt: skip
    by_track = document(
        capsys, "analyze", "--json", "--quiet", "--slo", "--by", "model,track", "--config",
        str(config), str(stable), str(canary),
    )  # fmt: skip
    arms = {(r["slo"], r["track"], r["variant"]): r for r in by_track["latency_slos"]}
    assert compared["latency_slos"]
    for row in compared["latency_slos"]:
        a, b = (
            arms[(row["slo"], "stable", row["variant"])],
            arms[(row["slo"], "canary", row["variant"])],
        )
        assert (row["a"]["good"], row["a"]["requests"]) == (a["good"], a["requests"])
        assert (row["b"]["good"], row["b"]["requests"]) == (b["good"], b["requests"])
        d = row["difference"]
        assert d["estimate"] == pytest.approx(b["attainment"] - a["attainment"])
        assert d["lower"] <= d["estimate"] <= d["upper"]


def test_analyze_slo_without_an_objective_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "empty.jsonl"
    log.write_text("")
    assert 2 == main(["analyze", "--slo", "--quiet", str(log)])
    assert "--slo: no latency objective configured" in capsys.readouterr().err
