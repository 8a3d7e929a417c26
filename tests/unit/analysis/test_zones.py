from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.speed.speedup import Gain
from specwatch.analysis.verdicts.evidence import Evidence, WindowEvidence, gathered, log_ratio
from specwatch.analysis.verdicts.thresholds import Thresholds
from specwatch.analysis.verdicts.zones import ZoneState, entering, next_zone, settled
from specwatch.conventions import Zone
from specwatch.settings import ZoneSettings


def rules(**settings: Any) -> Thresholds:
    """The zone settings as the rules read them (analysis/verdicts/thresholds.py)."""
    return Thresholds(ZoneSettings(**settings))


CFG = rules(min_dwell_seconds=0.0, slower_seconds=0.0)
H, EXIT = CFG.bar("green"), CFG.exit_bar("green")
RED_H, RED_EXIT = CFG.bar("red"), CFG.exit_bar("red")


SOME = Sums(40, 2000, 4000, 110_000, 200_000, 400_000)  # what the rules here do not read


def evidence(green: float = 0.0, red: float = 0.0, full: bool = True) -> Evidence:
    """One window's evidence (positive: above the threshold, negative: below)."""
    window = WindowEvidence(300.0, full, green, red, SOME, (), green, red)
    return Evidence((window,), CFG.change_evidence)


def windows(*parts: tuple[float, float, float] | tuple[float, float, float, bool]) -> Evidence:
    """Windows (seconds, green, red[, changed]), all past the whole gates; a `changed` window's
    data differ from the rest of every longer one at the change bar."""
    out = []
    ordered = sorted(parts)
    for i, (seconds, green, red, *changed) in enumerate(ordered):
        value = CFG.change_evidence if changed and changed[0] else 0.0
        changes = tuple((longer[0], value) for longer in ordered[i + 1 :])
        out.append(WindowEvidence(seconds, True, green, red, SOME, changes, green, red))
    return Evidence(tuple(out), CFG.change_evidence)


GREEN = evidence(green=2 * H, red=4 * H)  # far above both thresholds
YELLOW = evidence(green=-2 * H, red=2 * H)  # surely between them
RED = evidence(green=-4 * H, red=-2 * H)
UNSURE = evidence(green=-1.0, red=1.0)  # neither way far enough


def run(seen: Sequence[Evidence | None], cfg: Thresholds = CFG) -> list[str]:
    state = ZoneState()
    zones = []
    for t, e in enumerate(seen):
        next_zone(state, e, float(t * 10), cfg)
        zones.append(state.zone)
    return zones


def test_a_slice_without_a_window_past_the_gates_is_insufficient() -> None:
    assert [Zone.INSUFFICIENT, Zone.INSUFFICIENT] == run([None, None])


def test_first_verdicts_follow_the_evidence() -> None:
    assert [Zone.GREEN] == run([GREEN])
    assert [Zone.RED] == run([RED])
    assert [Zone.YELLOW] == run([YELLOW])
    assert [Zone.YELLOW] == run([UNSURE])  # not sure of either: yellow, never green or red


def test_a_verdict_is_entered_at_exactly_the_evidence_it_needs_and_not_below() -> None:
    """The edge: zones and the alert rules (SpecDecodeSliceRed) both enter at >=."""
    assert [Zone.RED] == run([evidence(green=-2 * H, red=-RED_H)])
    assert [Zone.YELLOW] == run([evidence(green=-2 * H, red=-RED_H + 1e-9)])
    assert [Zone.GREEN] == run([evidence(green=H, red=2 * H)])
    assert [Zone.YELLOW] == run([evidence(green=H - 1e-9, red=2 * H)])


def test_the_longest_window_decides_unless_a_shorter_ones_newer_data_differ() -> None:
    """A collapse: the hour still says above green, the last 5 minutes say below red and
    differ from the rest of the hour. A recovery the other way round. The newer data win
    only where they differ: a short window that is sure but agrees with the rest of the
    hour is noise the hour already holds."""
    collapse = windows((300.0, -3 * H, -2 * H, True), (3600.0, 2 * H, 4 * H))
    assert [Zone.RED] == run([collapse])
    assert [Zone.GREEN, Zone.RED] == run([GREEN, collapse])
    assert [Zone.GREEN] == run([windows((300.0, -3 * H, -2 * H), (3600.0, 2 * H, 4 * H))])
    recovery = windows((300.0, -H, 2 * H, True), (3600.0, -4 * H, -2 * H))
    assert [Zone.RED, Zone.YELLOW, Zone.YELLOW] == run([RED, recovery, recovery])
    # a deciding window that cannot tell holds the verdict: no longer window speaks for it
    unsure = windows((300.0, 1.0, 3 * H, True), (3600.0, 1.2 * H, 6 * H))
    assert [Zone.YELLOW] == run([unsure])
    # a change long ago: the 30 minutes after it differ from the hour's rest, the last 5
    # minutes do not differ from those 30: the 30-minute window decides
    chain = windows((300.0, 0.5 * H, 3 * H), (1800.0, 2 * H, 4 * H, True), (3600.0, -H, H))
    deciding = chain.deciding(full=True)
    assert deciding is not None
    assert 1800.0 == deciding.seconds
    assert [Zone.GREEN] == run([chain])


def test_a_verdict_left_on_one_window_is_not_entered_again_on_another_within_the_dwell() -> None:
    """The flap of a slice at its threshold: red on the hour, left on the last 5 minutes
    (which differed then), and the hour says red again a minute later. After a change on the
    5 minutes' news only windows that hold nothing older decide: the hour, which mixes the
    time before, brings red back only once it is that new (at 3,600 - 300 s after the exit);
    a collapse seen by the window that decided the exit is news and enters at once."""
    cfg = rules(min_dwell_seconds=60.0)
    red_hour = windows((300.0, -2 * H, -0.5 * RED_H), (3600.0, -4 * H, -2 * RED_H))
    left_short = windows((300.0, -H, RED_EXIT, True), (3600.0, -4 * H, -2 * RED_H))
    zones = run([red_hour] * 7 + [left_short] + [red_hour] * 340, cfg)
    assert [Zone.RED] * 7 + [Zone.YELLOW] * 330 == zones[:337]  # t = 0 .. 3,360 s
    assert [Zone.RED] * 11 == zones[337:]  # from t = 3,370 s on the hour is that new
    collapse_short = windows((300.0, -4 * H, -2 * RED_H, True), (3600.0, -H, RED_EXIT))
    zones = run([red_hour] * 7 + [left_short, collapse_short], cfg)
    assert [Zone.RED] * 7 + [Zone.YELLOW, Zone.RED] == zones


def test_acceptance_surely_below_red_minus_the_margin_is_red_at_once_whatever_the_window() -> None:
    """Left on the 5-minute window, the hour then says red: within the dwell and the horizon
    only if it is surely below red - collapse_margin (0.45), not merely below 0.50."""
    cfg = rules(min_dwell_seconds=600.0)
    low = sums(480, 16_000, 48_000, spread=6.0)  # 0.33: far below 0.45
    near = sums(480, 23_000, 48_000, spread=6.0)  # 0.479: below 0.50, not below 0.45
    for hour, expected in ((low, Zone.RED), (near, Zone.YELLOW)):
        state = ZoneState(zone=Zone.YELLOW, last_verdict_change=0.0, decided_by=300.0)
        red = log_ratio(hour, cfg.red, cfg.indifference, cfg.bar("red"))
        deciding = WindowEvidence(3600.0, True, -4 * H, red, hour, (), -4 * H, red)
        next_zone(state, Evidence((deciding,), cfg.change_evidence), 60.0, cfg)
        assert expected == state.zone


def test_green_stands_until_the_evidence_turns_against_it() -> None:
    """Unsure evidence (a lucky or unlucky window) keeps green; the deciding window below
    green at the exit bar, exactly, ends it."""
    assert [Zone.GREEN] * 6 == run([GREEN] + [UNSURE] * 5)
    assert [Zone.GREEN, Zone.GREEN] == run([GREEN, evidence(green=-EXIT + 1e-9, red=H)])
    assert [Zone.GREEN, Zone.YELLOW] == run([GREEN, evidence(green=-EXIT, red=H)])
    # leaving looks at windows past half the gates too
    assert [Zone.GREEN, Zone.YELLOW] == run([GREEN, evidence(-EXIT, H, full=False)])


def test_red_stands_until_the_evidence_turns_against_it() -> None:
    assert [Zone.RED] * 6 == run([RED] + [UNSURE] * 5)
    assert [Zone.RED, Zone.RED] == run([RED, evidence(green=-H, red=RED_EXIT - 1e-9)])
    assert [Zone.RED, Zone.YELLOW] == run([RED, evidence(green=-H, red=RED_EXIT)])
    assert [Zone.RED, Zone.GREEN] == run([RED, GREEN])  # a recovery past green at once


def test_yellow_takes_the_full_evidence_to_become_green_or_red() -> None:
    assert [Zone.YELLOW, Zone.YELLOW] == run([YELLOW, evidence(green=H - 0.01, red=H)])
    assert [Zone.YELLOW, Zone.GREEN] == run([YELLOW, GREEN])
    assert [Zone.YELLOW, Zone.RED] == run([YELLOW, RED])
    # windows past only half the gates keep or end a verdict, never enter one
    assert [Zone.YELLOW, Zone.YELLOW] == run([YELLOW, evidence(-2 * H, -2 * H, full=False)])


def test_no_two_verdict_changes_come_closer_than_the_dwell_time_but_for_red() -> None:
    cfg = rules(min_dwell_seconds=60.0)
    # evaluations every 10 s: yellow at t=0, could go green at t=10 but must wait until t=60
    zones = run([YELLOW] + [GREEN] * 8, cfg)
    assert Zone.YELLOW == zones[5]
    assert Zone.GREEN == zones[6]
    # bad news is not held back: green at t=0, red at t=10, then no way out before t=70
    zones = run([GREEN, RED] + [GREEN] * 6, cfg)
    assert [Zone.GREEN] + [Zone.RED] * 6 + [Zone.GREEN] == zones


def test_losing_evidence_drops_to_insufficient_at_once() -> None:
    state = ZoneState()
    next_zone(state, GREEN, 0.0, CFG)
    change = next_zone(state, None, 10.0, CFG)
    assert change is not None
    assert (Zone.GREEN, Zone.INSUFFICIENT) == (change.previous, change.current)


def sums(requests: int, accepted: int, trials: int, spread: float = 0.0) -> Sums:
    """Requests of equal size; `spread` their acceptance's spread around the mean, in tokens."""
    each = trials // requests
    a = accepted / requests
    aa = requests * (a * a + spread * spread)
    return Sums(requests, accepted, trials, round(aa), round(a * each * requests), each * trials)


def test_the_sample_gates_have_hysteresis_so_a_slice_at_the_gate_does_not_flap() -> None:
    cfg = rules(min_trials=1000, min_requests=30)
    state = ZoneState()
    assert entering(state)
    assert gathered([(300.0, sums(29, 3500, 5000))], cfg, entering(state)) is None
    seen = gathered([(300.0, sums(30, 600, 1000))], cfg, entering(state))
    next_zone(state, seen, 0.0, cfg)
    assert Zone.YELLOW == state.zone
    assert not entering(state)  # keeping a verdict needs half the gates
    assert gathered([(300.0, sums(20, 360, 600))], cfg, entering(state)) is not None
    assert gathered([(300.0, sums(14, 360, 600))], cfg, entering(state)) is None
    assert gathered([(300.0, sums(20, 300, 499))], cfg, entering(state)) is None


def test_evidence_holds_every_window_past_half_the_gates_shortest_first() -> None:
    short = sums(40, 2880, 4000, spread=6.0)  # 0.72 on few requests: not sure
    hour = sums(480, 34560, 48000, spread=6.0)  # 0.72 on many: stronger evidence
    half = sums(20, 1330, 1900)  # 0.70 past half the gates only
    thin = sums(10, 950, 1000)  # 0.95, but too few requests to count at all
    seen = gathered([(3600.0, hour), (1800.0, thin), (300.0, short), (900.0, half)], CFG, True)
    assert seen is not None
    assert [300.0, 900.0, 3600.0] == [w.seconds for w in seen.windows]
    assert [True, False, True] == [w.full for w in seen.windows]
    bar = CFG.bar("green")
    for window, source in zip(seen.windows, (short, half, hour), strict=True):
        assert log_ratio(source, 0.70, CFG.indifference, bar) == window.green
        assert log_ratio(source, 0.50, CFG.indifference, CFG.bar("red")) == window.red
        assert source == window.sums
    assert seen.windows[0].green < bar < seen.windows[2].green  # only the hour is sure
    assert seen.windows[2].green == seen.decided("green", bar, full=True)
    assert 0.0 == seen.decided("green", 20 * bar, full=True)  # none sure that far


def test_the_log_ratio_is_the_normal_likelihood_ratio_with_the_request_level_variance() -> None:
    """Inside the indifference zone Wald's 2 delta (p - c) / v, outside the squared distance
    from the nearer hypothesis over 2 v; v = design effect x (t/z)^2 x c (1 - c) / trials,
    t and z at the tail where the bar sits."""
    n, x, y, xx, xy, yy = 40, 2800, 4000, 210_000, 284_000, 400_000
    deff = (n / (n - 1) * (xx - 2 * 0.7 * xy + 0.49 * yy) / y**2) / (0.7 * 0.3 / y)
    # Student's t on 39 degrees of freedom at the tail of the bar 16 (z = sqrt(32))
    t, z = 7.1043265794206105, 32**0.5
    window = Sums(n, x, y, xx, xy, yy)
    cases: list[tuple[float, Callable[[float], float]]] = [
        (0.69, lambda v: 2 * 0.02 * (0.7 - 0.69) / v),  # inside: p = 0.70 within 0.69 +- 0.02
        (0.71, lambda v: 2 * 0.02 * (0.7 - 0.71) / v),
        (0.60, lambda v: (0.7 - 0.58) ** 2 / (2 * v)),  # above c + delta: from c - delta
        (0.75, lambda v: -((0.77 - 0.7) ** 2) / (2 * v)),  # below c - delta: from c + delta
    ]
    for c, expected in cases:
        variance = deff * (t / z) ** 2 * c * (1 - c) / y
        assert expected(variance) == pytest.approx(log_ratio(window, c, 0.02, 16.0))
    # at the threshold: no evidence either way; more trials at the same mean: more evidence
    assert 0.0 == log_ratio(window, 0.7, 0.02, 16.0)
    alike = Sums(n, x, y, 4 * 4900, 4 * 7000, 4 * 10000)  # requests alike: deff 1
    twice = Sums(2 * n, 2 * x, 2 * y, 2 * alike.xx, 2 * alike.xy, 2 * alike.yy)
    assert log_ratio(twice, 0.6, 0.02, 16.0) > 1.9 * log_ratio(alike, 0.6, 0.02, 16.0)


def gain(ratio: float, half: float, method: str = "measured") -> Gain:
    return Gain(ratio, method, ratio - half, ratio + half)


def run_with_gains(gains: list[Gain | None], seen: Evidence | None = GREEN) -> list[str]:
    state = ZoneState()
    zones = []
    for t, g in enumerate(gains):
        next_zone(state, seen, float(t * 10), CFG, g)
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
    cfg = rules(min_dwell_seconds=0.0, slower_seconds=30.0)
    state = ZoneState()
    slow, fine = gain(0.80, 0.1), gain(1.2, 0.1)
    zones = []
    for t, g in enumerate([slow, slow, fine, slow, slow, slow, slow]):  # every 10 s
        next_zone(state, GREEN, float(t * 10), cfg, g)
        zones.append(state.zone)
    # one fine evaluation restarts the clock: red 30 s after the slowness began again (t=30)
    assert [Zone.GREEN] * 6 + [Zone.RED] == zones


def test_a_measured_red_holds_while_acceptance_evidence_dips_below_the_gate() -> None:
    state = ZoneState()
    slow = gain(0.80, 0.1)
    next_zone(state, GREEN, 0.0, CFG, slow)
    assert Zone.RED == state.zone
    next_zone(state, None, 10.0, CFG, slow)  # too few requests for acceptance
    assert Zone.RED == state.zone
    next_zone(state, None, 20.0, CFG, None)  # and no gain either: no evidence at all
    assert Zone.INSUFFICIENT == state.zone


def test_a_modelled_gain_needs_the_acceptance_gates_to_make_a_slice_red() -> None:
    state = ZoneState()
    next_zone(state, None, 0.0, CFG, gain(0.80, 0.1, "modelled"))
    assert Zone.INSUFFICIENT == state.zone


def test_zone_settings_refuse_overlapping_indifference_zones_and_a_higher_exit_bar() -> None:
    with pytest.raises(ValueError, match="must not overlap"):
        ZoneSettings(green=0.6, red=0.55, indifference=0.03)
    with pytest.raises(ValueError, match="exit evidence of green"):
        ZoneSettings(evidence=5.0, exit_evidence=6.0)
    with pytest.raises(ValueError, match="exit evidence of red"):
        ZoneSettings(red_evidence=5.0, red_exit_evidence=6.0)


def test_within_a_long_dwell_red_returns_only_on_news_not_on_a_window_the_horizon_admits() -> None:
    """With a dwell of 2,000 s, 1,600 s after leaving red on the 5 minutes' news the 30-minute
    window is new enough to decide (300 + 1,600 >= 1,800) but older than that news: its red
    waits for the dwell; the 5 minutes' own red would not."""
    red_hour = windows((300.0, -2 * H, -0.5 * RED_H), (1800.0, -2 * H, -2 * RED_H))
    state, cfg = left_red_on_the_five_minutes(red_hour)
    assert Zone.YELLOW == state.zone
    next_zone(state, red_hour, 3600.0, cfg)  # 1,600 s later: the 30 minutes say red
    assert Zone.YELLOW == state.zone
    next_zone(state, red_hour, 4000.0, cfg)  # past the dwell
    assert Zone.RED == state.zone


def test_within_the_dwell_the_news_windows_own_red_enters_at_once() -> None:
    """The other half of the rule above: 10 s after leaving red on the 5 minutes' news, only
    that window is new enough (horizon 310 s); it says red again: red at once, although the
    30-minute window (older than the news) would decide were the horizon not read."""
    red_both = windows((300.0, -2 * H, -2 * RED_H), (1800.0, -2 * H, -2 * RED_H))
    state, cfg = left_red_on_the_five_minutes(red_both)
    assert Zone.YELLOW == state.zone
    next_zone(state, red_both, 2010.0, cfg)
    assert Zone.RED == state.zone


def left_red_on_the_five_minutes(red: Evidence) -> tuple[ZoneState, Thresholds]:
    """With a dwell of 2,000 s: red on `red` at 0, left at 2,000 s on the 5 minutes' news (that
    window's data differ from the 30 minutes' older rest)."""
    cfg = rules(min_dwell_seconds=2000.0)
    left_short = windows((300.0, -H, RED_EXIT, True), (1800.0, -4 * H, -2 * RED_H))
    state = ZoneState()
    next_zone(state, red, 0.0, cfg)
    next_zone(state, left_short, 2000.0, cfg)
    return state, cfg


def test_a_verdict_is_left_past_its_threshold_moved_by_the_exit_margin() -> None:
    """Red, then an hour of 4,800 requests at 0.505: surely above 0.50 at the exit bar, not
    surely above 0.51 (red + exit_margin): red stays. At 0.53 it is left."""
    cfg = rules(min_dwell_seconds=0.0)
    for accepted, expected in ((24_240, Zone.RED), (25_440, Zone.YELLOW)):
        hour = sums(4800, accepted, 48_000, spread=2.0)
        evidence = gathered([(3600.0, hour)], cfg, False)
        assert evidence is not None
        (window,) = evidence.windows
        if expected == Zone.RED:
            assert window.red >= cfg.exit_bar("red") > window.red_exit  # the margin decides
        state = ZoneState(zone=Zone.RED, last_verdict_change=0.0, decided_by=3600.0)
        next_zone(state, evidence, 60.0, cfg)
        assert expected == state.zone


def _random_evidence(rng: random.Random) -> Evidence | None:
    """Up to three windows (some past only half the gates), each sure or unsure either way
    about each threshold, some with newer data that differ from the longer ones'."""
    lengths = sorted(rng.sample((300.0, 1800.0, 3600.0), rng.randint(0, 3)))
    if not lengths:
        return None
    figures = (-4 * H, -2 * H, -1.0, 1.0, 2 * H, 4 * H)
    out = []
    for i, seconds in enumerate(lengths):
        green, red = sorted((rng.choice(figures), rng.choice(figures)))
        changed = CFG.change_evidence if rng.random() < 0.3 else 0.0
        changes = tuple((longer, changed) for longer in lengths[i + 1 :])
        full = rng.random() < 0.7
        out.append(WindowEvidence(seconds, full, green, red, SOME, changes, green, red))
    return Evidence(tuple(out), CFG.change_evidence)


@pytest.mark.parametrize("dwell", [0.0, 120.0])
def test_a_settled_state_is_a_fixed_point_of_the_rules_on_the_same_evidence(dwell: float) -> None:
    """What the analyzer passes a quiet slice over on (analysis/analyzer.py): judged again at
    any later time on the same evidence and gain, a state `settled` says is fixed gives no
    change and stays as it is. Random evidence and gains (slower, not, measured, modelled)
    through random sequences of evaluations; every zone is met settled, and not settled."""
    cfg = rules(min_dwell_seconds=dwell, slower_seconds=60.0)
    gains = [None, gain(1.5, 0.1), gain(0.8, 0.1), gain(0.8, 0.1, "modelled")]
    rng = random.Random(20261205)
    met: Counter[tuple[str, bool]] = Counter()
    for _ in range(400):
        state, now = ZoneState(), 0.0
        for _ in range(12):
            seen, worth = _random_evidence(rng), rng.choice(gains)
            for _ in range(rng.randint(1, 3)):  # the same evidence a few times in a row
                now += rng.choice((10.0, 60.0, 400.0))
                change = next_zone(state, seen, now, cfg, worth)
                fixed = settled(state, change is not None, now, cfg, 3600.0, worth)
                met[state.zone, fixed] += 1
                if not fixed:
                    continue
                later = copy.copy(state)
                for after in (10.0, 200.0, 4000.0):
                    assert next_zone(later, seen, now + after, cfg, worth) is None
                    assert later == state
    zones = (Zone.INSUFFICIENT, Zone.GREEN, Zone.YELLOW, Zone.RED)
    assert all(met[zone, True] and met[zone, False] for zone in zones[1:]), met
    assert met[Zone.INSUFFICIENT, True]


def test_after_an_old_change_the_window_of_only_the_new_data_decides_not_the_shortest() -> None:
    """Tried from the longest down: the 30 minutes differ from the hour's rest, the last 5
    minutes differ from the hour's rest too but not from those 30. The 30-minute window holds
    six times the new data and decides; read shortest-first, the 5 minutes would."""
    bar = CFG.change_evidence
    short = WindowEvidence(300.0, True, 0.5 * H, 3 * H, SOME, ((1800.0, 0.0), (3600.0, bar)))
    mid = WindowEvidence(1800.0, True, 2 * H, 4 * H, SOME, ((3600.0, bar),))
    hour = WindowEvidence(3600.0, True, -H, H, SOME)
    deciding = Evidence((short, mid, hour), bar).deciding(full=True)
    assert deciding is not None
    assert 1800.0 == deciding.seconds


def test_a_collapse_is_read_on_a_window_past_the_whole_gates_not_half_of_them() -> None:
    """Red at once within the dwell needs the deciding window past the whole sample gates:
    20 requests far below red keep yellow until then; 40 make it red at once."""
    cfg = rules(min_dwell_seconds=600.0)
    for requests, expected in ((20, Zone.YELLOW), (40, Zone.RED)):
        low = sums(requests, 10 * requests, 30 * requests, spread=1.0)  # 0.33, below 0.45
        seen = gathered([(300.0, low)], cfg, entering=False)
        assert seen is not None
        assert (requests == 40) == seen.windows[0].full
        state = ZoneState(zone=Zone.YELLOW, last_verdict_change=0.0, decided_by=300.0)
        next_zone(state, seen, 60.0, cfg)
        assert expected == state.zone


def test_a_window_short_of_half_the_trials_is_no_evidence_whatever_its_requests() -> None:
    """The trials gate on its own: 40 requests (past the requests gate) of 499 trials (short
    of half of 1,000) give nothing to keep a verdict on; 500 do."""
    cfg = rules(min_trials=1000, min_requests=30)
    assert gathered([(300.0, sums(40, 200, 499))], cfg, False) is None
    assert gathered([(300.0, sums(40, 200, 520))], cfg, False) is not None
    assert gathered([(300.0, sums(40, 600, 999))], cfg, True) is None  # entering: the whole
