"""Zones over an hour of continuous evaluation, black box through `specwatch replay --json`:
slices whose truth sits just inside a threshold's indifference zone are not called across it
by one lucky look among the ~360, and slices just outside it get their verdict (the committed
benchmarks/zone_verdicts.py runs the same on 192 slices a truth)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from specwatch.sim.truth import verdicts, write_log

from tests.support.analysis import replay_zone_changes

MODELS = ("m0", "m1")
TASKS = ("chat", "code", "summarization", "translation")  # x 6 ctx buckets x 2 models: 48


def replay(path: Path) -> dict[str, float]:
    return verdicts(*replay_zone_changes(path))


@pytest.mark.parametrize(
    ("truth", "check"),
    [
        (0.69, lambda s: s["ever_green"] <= 1 / 48),  # just below green: never green
        (0.72, lambda s: s["end_green"] >= 0.8),  # just above: green by the end of the hour
        (0.52, lambda s: s["ever_red"] <= 1 / 48),  # just above red: never red
        (0.48, lambda s: s["end_red"] >= 0.9),
    ],
)
def test_an_hour_of_evaluations_keeps_its_verdicts_honest(
    tmp_path: Path, truth: float, check: Any
) -> None:
    path = tmp_path / "hour.jsonl"
    write_log(path, lambda _t: truth, models=MODELS, tasks=TASKS, seed=11)
    summary = replay(path)
    assert 48 == summary["slices"]
    assert check(summary), summary
    assert summary["changes"] <= 2.0, summary  # per slice-hour
