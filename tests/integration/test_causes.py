"""Causes of poor or suspicious acceptance, black box: the simulator shows each cause (or the
sidecar is given the config that makes it), specwatch in front writes its cycle log, and
`specwatch replay --json` and `specwatch worst` must name that cause and no other; healthy
traffic none at all. The rates over many slices are benchmarks/causes.py's (docs/causes.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from specwatch import conventions as C
from specwatch.cli.main import main
from specwatch.settings import load_settings
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.causes import CONFIGURED, CONTEXT_LIMIT, with_cause
from specwatch.sim.server import SimConfig, SimServer
from specwatch.sim.workload import run_load

from tests.support import assert_status_valid
from tests.support.http import serve

Kind = C.CauseKind


async def cycle_log(tmp_path: Path, cause: str | None, **cycle: Any) -> Path:
    """A cycle log of ~5 s of mixed load through specwatch to the simulator showing `cause`."""
    sim = SimServer(with_cause(SimConfig(seed=4, sleep=False), cause))
    runner, url = await serve(sim.app())
    path = tmp_path / f"{cause}.jsonl"
    spec = CONFIGURED.get(cause or "")
    settings = load_settings(
        upstream=url,
        port=0,
        admin_port=0,
        cycle_log={"path": path, **cycle},
        speculative_config=None if spec is None else json.dumps(spec),
    )
    car = Sidecar(settings)
    await car.start()
    try:
        proxy = f"http://127.0.0.1:{car.ports.proxy}"
        await run_load(proxy, sim.config.model, seed=9, concurrency=8, requests=1500)
        await car.drained()
    finally:
        await car.stop()
        await runner.cleanup()
    return path


def replayed(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert 0 == main(["replay", "--json", str(path)])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert_status_valid(document)
    return document


def kinds(views: list[dict[str, Any]]) -> set[str]:
    return {cause["kind"] for view in views for cause in view["causes"]}


# (no_per_request_data leaves nothing to replay: tests/integration/test_no_per_request_data.py;
# the causes that take a pod's time or step times: tests/integration/test_lifetime_causes.py)
REPLAYED_ELSEWHERE = {
    Kind.NO_PER_REQUEST_DATA,
    Kind.SPECULATION_SWITCHED_OFF,
    Kind.DECAY_OVER_UPTIME,
    Kind.K0_STILL_COSTS,
}


@pytest.mark.parametrize("cause", sorted(set(Kind) - REPLAYED_ELSEWHERE))
async def test_each_cause_is_named_where_it_is_and_no_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cause: str
) -> None:
    document = replayed(await cycle_log(tmp_path, cause), capsys)
    model = document["models"][0]
    # nothing accepted from the first request on is a draft that never matched, too
    also = {Kind.DRAFT_MISMATCH} if cause == Kind.NO_ACCEPTANCE else set()
    assert {cause} | also == kinds(document["models"]) | kinds(document["slices"])
    assert cause in kinds([model]) or cause == Kind.REPETITION_SUSPECTED
    found = [c for view in document["slices"] + [model] for c in view["causes"]]
    if cause == Kind.DRAFT_CONTEXT_LIMIT:
        # where acceptance falls to 0, by the steps' own positions: within a 64-token bin
        assert {c["position"] for c in found} == {CONTEXT_LIMIT + 64} or all(
            abs(c["position"] - CONTEXT_LIMIT) <= 64 for c in found
        )
        shorter = [s for s in document["slices"] if s["ctx_bucket"] == "0-512"]
        assert shorter
        assert not kinds(shorter)  # slices before the limit are left alone
    if cause in (Kind.SYNTHETIC_VERIFIER, Kind.LOSSY_VERIFIER):
        zones = {view["zone"] for view in document["slices"] + document["models"]}
        assert {C.Zone.NOT_APPLICABLE} == zones
    else:
        assert C.Zone.NOT_APPLICABLE not in {view["zone"] for view in document["slices"]}
    if cause == Kind.REPETITION_SUSPECTED:
        for c in found:
            assert c["alpha_without"] <= c["alpha"] - 0.05
            assert 0 < c["share"] < 1
            assert c["requests"] >= 3
    if cause == Kind.DRAFT_MISMATCH:
        assert all(c["alpha_first"] <= 0.05 and c["config"] for c in found)
    if cause == Kind.LATER_POSITIONS_COLLAPSE:
        assert all(c["later"] <= 0.5 * c["first"] for c in found)
    if cause == Kind.ENGINE_DISAGREEMENT:
        (c,) = found
        assert c["reported_tau"] == pytest.approx(c["recomputed_tau"] + 0.5)
        assert c["vllm_version"] == "0.32.0"


async def test_healthy_traffic_has_no_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = replayed(await cycle_log(tmp_path, None), capsys)
    assert set() == kinds(document["models"]) | kinds(document["slices"])
    assert {"insufficient", "green", "yellow", "red"} >= {v["zone"] for v in document["slices"]}


async def test_worst_lists_the_loops_with_their_causes_as_lines_and_as_one_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = await cycle_log(tmp_path, Kind.REPETITION_SUSPECTED)
    document = replayed(path, capsys)
    causes = {
        (view["ctx_bucket"], view["task"]): kinds([view])
        for view in document["slices"] + document["models"]
    }
    assert any(Kind.REPETITION_SUSPECTED in found for found in causes.values())
    assert 0 == main(["worst", "--kind", "high", "--limit", "20", str(path)])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert 20 == len(rows)
    for row in rows:
        assert "high" == row["kind"]
        assert row["alpha"] >= 0.99
        # its slice's causes and its model's, as replay names them
        expected = causes.get((row["ctx_bucket"], row["task"]), set()) | causes[(C.ALL, C.ALL)]
        assert expected == set(row["causes"])
        assert row["config"]
        assert row["request_id"]
        assert row["per_position"]
        assert "prompt_text" not in row  # not captured: not there
    assert 0 == main(["worst", "--kind", "high", "--limit", "20", "--json", str(path)])
    document = json.loads(capsys.readouterr().out)
    assert rows == document["rows"]
    assert 0 == main(["worst", "--kind", "low", str(path)])
    lows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all(row["kind"] == "low" for row in lows)
    assert [row["alpha"] for row in lows] == sorted(row["alpha"] for row in lows)


async def test_text_is_kept_only_when_asked_for_capped_and_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    off = await cycle_log(tmp_path / "off", None)
    data = off.read_bytes()
    assert b"prompt_text" not in data
    assert b"completion_text" not in data
    assert b"Summarize" not in data  # no word of a prompt at all
    assert b"ranslate" not in data
    on = await cycle_log(
        tmp_path / "on",
        None,
        capture_text=True,
        capture_text_chars=40,
        redact="tests.support.redaction:mask_digits",
    )
    lines = [json.loads(line) for line in on.read_bytes().splitlines()[1:]]
    prompts = [line["prompt_text"] for line in lines if "prompt_text" in line]
    assert len(prompts) == len(lines)
    assert all(len(p) <= 40 for p in prompts)
    assert not any(ch.isdigit() for p in prompts for ch in p)  # the hook ran on every text
    completions = [line["completion_text"] for line in lines if "completion_text" in line]
    assert completions
    assert all(len(c) <= 40 for c in completions)
    capsys.readouterr()
    assert 0 == main(["worst", str(on)])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows
    assert all("prompt_text" in row for row in rows)
