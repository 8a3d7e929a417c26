from __future__ import annotations

from specwatch.analysis.speedup import Gain
from specwatch.analysis.stats import Interval
from specwatch.analysis.zones import ZoneState, has_evidence, next_zone
from specwatch.conventions import Zone
from specwatch.settings import ZoneSettings

CFG = ZoneSettings(min_dwell_seconds=0.0, slower_seconds=0.0)


def interval(estimate: float, half: float = 0.01) -> Interval:
    return Interval(estimate, estimate - half, estimate + half)


def run(estimates: list[float], cfg: ZoneSettings = CFG, half: float = 0.01) -> list[str]:
    state = ZoneState()
    zones = []
    for t, estimate in enumerate(estimates):
        next_zone(state, interval(estimate, half), True, float(t * 10), cfg)
        zones.append(state.zone)
    return zones


def test_a_slice_below_the_sample_gate_is_insufficient_whatever_its_estimate() -> None:
    state = ZoneState()
    next_zone(state, interval(0.95), False, 0.0, CFG)
    assert Zone.INSUFFICIENT == state.zone
    next_zone(state, interval(0.10), False, 10.0, CFG)
    assert Zone.INSUFFICIENT == state.zone


def test_first_verdicts_follow_the_confidence_bounds() -> None:
    assert [Zone.GREEN] == run([0.80])
    assert [Zone.RED] == run([0.40])
    assert [Zone.YELLOW] == run([0.60])
    # estimate above 0.70 but the lower bound is not: not green yet
    assert [Zone.YELLOW] == run([0.71], half=0.03)


def test_a_series_oscillating_around_the_green_threshold_does_not_flap() -> None:
    zones = run([0.75] + [0.69, 0.71] * 20)
    assert {Zone.GREEN} == set(zones)


def test_a_series_oscillating_around_the_red_threshold_does_not_flap() -> None:
    zones = run([0.40] + [0.49, 0.52] * 20)
    assert {Zone.RED} == set(zones)


def test_green_is_left_after_three_evaluations_at_or_below_the_exit() -> None:
    zones = run([0.80, 0.66, 0.66, 0.66, 0.66])
    assert [Zone.GREEN, Zone.GREEN, Zone.GREEN, Zone.YELLOW, Zone.YELLOW] == zones


def test_red_is_left_after_three_evaluations_at_or_above_the_exit() -> None:
    zones = run([0.40, 0.60, 0.60, 0.60])
    assert [Zone.RED, Zone.RED, Zone.RED, Zone.YELLOW] == zones


def test_a_collapse_from_green_goes_straight_to_red() -> None:
    zones = run([0.80, 0.30, 0.30, 0.30])
    assert Zone.RED == zones[-1]


def test_no_two_verdict_changes_come_closer_than_the_dwell_time() -> None:
    cfg = ZoneSettings(min_dwell_seconds=60.0)
    # evaluations every 10 s: yellow at t=0, could go green at t=10 but must wait until t=60
    zones = run([0.60] + [0.90] * 8, cfg)
    assert Zone.YELLOW == zones[5]
    assert Zone.GREEN == zones[6]


def test_losing_evidence_drops_to_insufficient_at_once() -> None:
    state = ZoneState()
    next_zone(state, interval(0.9), True, 0.0, CFG)
    change = next_zone(state, interval(0.9), False, 10.0, CFG)
    assert change is not None
    assert (Zone.GREEN, Zone.INSUFFICIENT) == (change.previous, change.current)


def test_the_sample_gates_have_hysteresis_so_a_slice_at_the_gate_does_not_flap() -> None:
    cfg = ZoneSettings(min_trials=1000, min_requests=30)
    state = ZoneState()
    assert not has_evidence(state, 5000, 29, cfg)  # entering needs the full gate
    assert has_evidence(state, 1000, 30, cfg)
    next_zone(state, interval(0.6), True, 0.0, cfg)
    assert Zone.YELLOW == state.zone
    assert has_evidence(state, 600, 20, cfg)  # keeping a verdict needs half
    assert not has_evidence(state, 600, 14, cfg)


def gain(ratio: float, half: float, method: str = "measured") -> Gain:
    return Gain(ratio, method, ratio - half, ratio + half)


def run_with_gains(gains: list[Gain | None], estimate: float = 0.80) -> list[str]:
    state = ZoneState()
    zones = []
    for t, g in enumerate(gains):
        next_zone(state, interval(estimate), True, float(t * 10), CFG, g)
        zones.append(state.zone)
    return zones


def test_a_gain_whose_interval_reaches_one_does_not_make_the_slice_red() -> None:
    assert [Zone.GREEN] * 3 == run_with_gains([gain(0.95, 0.08)] * 3)


def test_a_gain_whose_whole_interval_is_below_one_makes_the_slice_red() -> None:
    assert [Zone.GREEN, Zone.RED] == run_with_gains([gain(1.5, 0.1), gain(0.80, 0.1)])
    assert [Zone.RED] == run_with_gains([gain(0.80, 0.1)])  # also as a first verdict


def test_red_for_slowness_is_left_only_on_the_same_kind_of_evidence() -> None:
    slow = gain(0.80, 0.1)
    modelled_fine = gain(2.0, 0.1, "modelled")
    zones = run_with_gains([slow, modelled_fine, None, modelled_fine, modelled_fine])
    assert [Zone.RED] * 5 == zones  # neither a modelled gain nor no gain lifts a measured red


def test_red_for_slowness_ends_after_the_exit_streak_of_a_gain_back_at_one() -> None:
    slow, back = gain(0.80, 0.1), gain(1.02, 0.1)
    zones = run_with_gains([slow, back, back, back, back])
    assert [Zone.RED, Zone.RED, Zone.RED, Zone.GREEN, Zone.GREEN] == zones
    # one evaluation below 1 restarts the streak
    zones = run_with_gains([slow, back, back, gain(0.97, 0.1), back, back, back])
    assert [Zone.RED] * 6 + [Zone.GREEN] == zones


def test_slowness_must_persist_for_slower_seconds_before_the_slice_turns_red() -> None:
    cfg = ZoneSettings(min_dwell_seconds=0.0, slower_seconds=30.0)
    state = ZoneState()
    slow, fine = gain(0.80, 0.1), gain(1.2, 0.1)
    zones = []
    for t, g in enumerate([slow, slow, fine, slow, slow, slow, slow]):  # every 10 s
        next_zone(state, interval(0.80), True, float(t * 10), cfg, g)
        zones.append(state.zone)
    # one fine evaluation restarts the clock: red 30 s after the slowness began again (t=30)
    assert [Zone.GREEN] * 6 + [Zone.RED] == zones


def test_a_measured_red_holds_while_acceptance_evidence_dips_below_the_gate() -> None:
    state = ZoneState()
    slow = gain(0.80, 0.1)
    next_zone(state, interval(0.8), True, 0.0, CFG, slow)
    assert Zone.RED == state.zone
    next_zone(state, interval(0.8), False, 10.0, CFG, slow)  # too few requests for acceptance
    assert Zone.RED == state.zone
    next_zone(state, None, False, 20.0, CFG, None)  # and no gain either: no evidence at all
    assert Zone.INSUFFICIENT == state.zone


def test_a_modelled_gain_needs_the_acceptance_gates_to_make_a_slice_red() -> None:
    state = ZoneState()
    next_zone(state, interval(0.8), False, 0.0, CFG, gain(0.80, 0.1, "modelled"))
    assert Zone.INSUFFICIENT == state.zone


def test_green_holds_inside_its_exit_band_between_the_exit_and_the_entry_threshold() -> None:
    """0.68 is below green's 0.70 but above its exit 0.67: a green slice stays green."""
    assert [Zone.GREEN] * 6 == run([0.80] + [0.68] * 5)
    assert Zone.YELLOW == run([0.80] + [0.665] * 4)[-1]  # at or below 0.67: it leaves


def test_red_holds_inside_its_exit_band_between_the_entry_and_the_exit_threshold() -> None:
    """0.51 is above red's 0.50 but below its exit 0.53: a red slice stays red."""
    assert [Zone.RED] * 6 == run([0.40] + [0.51] * 5)
    assert Zone.YELLOW == run([0.40] + [0.535] * 4)[-1]  # at or above 0.53: it leaves
