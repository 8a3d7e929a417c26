"""Leaving a red made by a slower gain (analysis/verdicts/zones.py, `_still_slow`): a gain of
exactly 1 is back; back for `slower_seconds` and the exit streak both; from there acceptance
decides, even where it keeps the slice red a while."""

from __future__ import annotations

from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.speed.speedup import Gain
from specwatch.analysis.verdicts.evidence import Evidence, WindowEvidence
from specwatch.analysis.verdicts.thresholds import Thresholds
from specwatch.analysis.verdicts.zones import ZoneState, next_zone
from specwatch.conventions import Zone
from specwatch.settings import ZoneSettings

SOME = Sums(40, 2000, 4000, 110_000, 200_000, 400_000)


def rules(slower_seconds: float) -> Thresholds:
    return Thresholds(ZoneSettings(min_dwell_seconds=0.0, slower_seconds=slower_seconds))


def evidence(cfg: Thresholds, green: float, red: float) -> Evidence:
    window = WindowEvidence(300.0, True, green, red, SOME, (), green, red)
    return Evidence((window,), cfg.change_evidence)


def zones(cfg: Thresholds, steps: list[tuple[Evidence, Gain]]) -> list[str]:
    """The zone after each evaluation, 10 s apart."""
    state, out = ZoneState(), []
    for t, (seen, gain) in enumerate(steps):
        next_zone(state, seen, float(t * 10), cfg, gain)
        out.append(state.zone)
    return out


SLOW, BACK = Gain(0.8, "measured", 0.7, 0.9), Gain(1.0, "measured", 0.9, 1.1)


def test_a_gain_of_exactly_1_back_for_the_streak_ends_the_red() -> None:
    cfg = rules(0.0)
    green = evidence(cfg, 2 * cfg.bar("green"), 4 * cfg.bar("green"))
    assert [Zone.RED] * 3 + [Zone.GREEN] == zones(cfg, [(green, SLOW)] + [(green, BACK)] * 3)


def test_back_at_1_must_last_slower_seconds_as_well_as_the_streak() -> None:
    """Slower for 30 s: red at t = 30. Back from t = 40: the streak of 3 is there at t = 60,
    the 30 s back at t = 70, which ends the red."""
    cfg = rules(30.0)
    green = evidence(cfg, 2 * cfg.bar("green"), 4 * cfg.bar("green"))
    found = zones(cfg, [(green, SLOW)] * 4 + [(green, BACK)] * 6)
    assert [Zone.GREEN] * 3 + [Zone.RED] * 4 + [Zone.GREEN] * 3 == found


def test_once_back_acceptance_decides_and_may_keep_the_slice_red_then_release_it() -> None:
    """Back at 1 while acceptance is surely below red: red, now on acceptance; acceptance
    back above green: the red is left as any acceptance red is, the gain no longer read."""
    cfg = rules(0.0)
    h = cfg.bar("green")
    red, green = evidence(cfg, -4 * h, -2 * h), evidence(cfg, 2 * h, 4 * h)
    found = zones(cfg, [(green, SLOW)] + [(red, BACK)] * 3 + [(green, BACK)] * 6)
    assert [Zone.RED] * 4 == found[:4]
    assert Zone.RED != found[-1]
