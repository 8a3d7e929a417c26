"""The causes that take a pod's time or its step times, black box through a cycle log and
`specwatch replay --json`: an hour of one model's requests written by the sidecar's own
serializers (store/cyclelog.to_line, store/configline.config_line), as a sidecar would have
logged them. Speculation switched off half an hour in (with the engine's gate in the config),
acceptance halving every half hour, K = 0 steps that cost what drafting does; and the healthy
twin of that traffic, where none is named."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from specwatch import conventions as C
from specwatch.cli.main import main
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.sim.truth import accepted_steps, beta_draw
from specwatch.store.configline import config_line
from specwatch.store.cyclelog import to_line
from specwatch.upstream.specconfig import spec_config

Kind = C.CauseKind
HOUR = 3600.0
START = 1.8e9
GATE = {"acceptance_rate_threshold": 0.3, "acceptance_rate_window_size": 64}


def hour(
    seed: int,
    *,
    off_at: float | None = None,
    half_life: float | None = None,
    k0_costs: bool = False,
) -> list[RequestRecord]:
    """A request every 6 s over four slices: per-request acceptance around 0.6 (sd 0.15), K 3
    or 4, 40% of the requests with 8 steps at K = 0 halfway; a plain step 20 ms, 10% more a
    drafted token (a K = 0 step drafting K with `k0_costs`), each request's steps x a
    log-normal factor of sd 0.1."""
    rng = random.Random(seed)
    out = []
    for i in range(int(HOUR / 6)):
        t = 6.0 * i + rng.random()
        k = rng.choice((3, 4))
        alpha = beta_draw(rng, 0.6, 0.15)
        if half_life is not None:
            alpha *= 0.5 ** (t / half_life)
        steps = rng.randint(25, 45)
        accepted = accepted_steps(rng, alpha, steps, k)
        drafted = [k] * steps
        if rng.random() < 0.4:
            half = steps // 2
            accepted = [*accepted[:half], *[0] * 8, *accepted[half:]]
            drafted = [*drafted[:half], *[0] * 8, *drafted[half:]]
        output = sum(accepted) + len(accepted)
        if off_at is not None and t >= off_at:
            accepted, drafted = [], []
        charged = sum(d if d else (k if k0_costs else 0) for d in drafted)
        seconds = 0.02 * (len(drafted) + 0.1 * charged) * rng.lognormvariate(0.0, 0.1)
        if not drafted:
            seconds = 0.02 * output * rng.lognormvariate(0.0, 0.1)
        out.append(
            RequestRecord(
                ts=START + t,
                request_id=f"r{i}",
                model="m",
                task=("chat", "code")[i % 2],
                outcome=C.Outcome.OBSERVED,
                prompt_tokens=(200, 3000)[i // 2 % 2],
                completion_tokens=output,
                spec=SpecDecodeBlock(k, tuple(drafted), tuple(accepted)),
                latency=Latency(ttft=0.05, tpot=seconds / max(1, output - 1), e2e=1.0),
                in_flight=rng.randint(1, 3),
                sampling=C.Sampling.GREEDY,
            )
        )
    return out


def replayed(
    tmp_path: Path, records: list[RequestRecord], capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    config = spec_config(
        {"method": "eagle3", "model": "d", "num_speculative_tokens": 4, **GATE},
        "1.2.0",
        "stable",
        engine="trtllm",
    )
    log = tmp_path / "cycles.jsonl"
    log.write_bytes(config_line(config) + b"".join(to_line(r) for r in records))
    capsys.readouterr()
    assert 0 == main(["replay", "--json", str(log)])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def kinds(document: dict[str, Any]) -> set[str]:
    views = document["models"] + document["slices"]
    return {cause["kind"] for view in views for cause in view["causes"]}


def cause_of(document: dict[str, Any], kind: str) -> dict[str, Any]:
    (model,) = document["models"]
    (found,) = [c for c in model["causes"] if c["kind"] == kind]
    return dict(found)


def test_speculation_switched_off_is_named_with_when_and_the_engines_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = replayed(tmp_path, hour(1, off_at=HOUR / 2), capsys)
    assert {Kind.SPECULATION_SWITCHED_OFF} == kinds(document)
    found = cause_of(document, Kind.SPECULATION_SWITCHED_OFF)
    assert START + HOUR / 2 <= found["stopped_at"] <= START + HOUR / 2 + 7
    assert "acceptance_rate_threshold=0.3, acceptance_rate_window_size=64" == found["gate"]
    assert found["drafting_share_before"] == 1.0
    assert all(
        Kind.SPECULATION_SWITCHED_OFF in {c["kind"] for c in view["causes"]}
        for view in document["slices"]
    )


def test_acceptance_that_halves_every_half_hour_is_a_decay_over_uptime(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = replayed(tmp_path, hour(2, half_life=HOUR / 2), capsys)
    assert {Kind.DECAY_OVER_UPTIME} == kinds(document)
    found = cause_of(document, Kind.DECAY_OVER_UPTIME)
    assert found["ratio"] <= 0.7
    assert found["alpha_late"] < found["alpha_early"]


def test_k0_steps_that_cost_as_drafting_does_are_named_and_free_ones_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = replayed(tmp_path, hour(3, k0_costs=True), capsys)
    assert {Kind.K0_STILL_COSTS} == kinds(document)
    found = cause_of(document, Kind.K0_STILL_COSTS)
    assert found["paid"] > 0.5
    assert found["step_k0"] > found["step_plain"]
    healthy = replayed(tmp_path, hour(3), capsys)
    assert set() == kinds(healthy)
    assert {"greedy"} == set(healthy["sampling"]["m"]["modes"])
