from __future__ import annotations

import math
import random
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specwatch.analysis import baseline
from specwatch.analysis.baseline import BaselineWindow
from specwatch.analysis.drift import (
    WANDER_LAGS,
    DriftDetector,
    baseline_of,
    cusum_step,
    cusum_threshold,
    estimate_baseline,
    moments_of,
    siegmund_arl,
)
from specwatch.model import SliceKey
from specwatch.settings import DriftSettings

KEY = SliceKey("m", "0-512", "code")


def test_the_threshold_for_one_false_alarm_a_week_of_minutes_is_the_reference_7_4() -> None:
    h = cusum_threshold(arl0=7 * 24 * 60, k=0.5)
    assert 7.4 == round(h, 1)
    assert pytest.approx(10080, rel=1e-6) == siegmund_arl(h, 0.5)


def test_thirty_slices_sharing_one_false_alarm_a_week_need_a_higher_threshold() -> None:
    assert 10.8 == round(cusum_threshold(arl0=30 * 7 * 24 * 60, k=0.5), 1)


def test_cusum_steps_by_hand() -> None:
    # residuals -2, -1, +3, -0.2 with k = 0.5: 1.5, 2.0, 0 (floored), 0 (-0.2 + 0.5 < 0.5... )
    s = 0.0
    trail = []
    for residual in (-2.0, -1.0, 3.0, -0.2, -0.7):
        s = cusum_step(s, residual, 0.5)
        trail.append(round(s, 6))
    assert [1.5, 2.0, 0.0, 0.0, 0.2] == trail


def test_the_baseline_estimates_mean_overdispersion_and_autocorrelation() -> None:
    # equal trials, alternating above and below the mean: strong negative autocorrelation,
    # clipped to 0; residuals +-2 standard errors give phi = 4 * n / (n - 1)
    n = 400
    p0 = 0.5
    se = math.sqrt(p0 * (1 - p0) / n)
    high, low = round((p0 + 2 * se) * n), round((p0 - 2 * se) * n)
    buckets = [(high, n), (low, n)] * 10
    baseline = estimate_baseline(buckets, min_buckets=10)
    assert baseline is not None
    assert (0.5, 0.0) == (round(baseline.alpha, 6), baseline.rho)
    assert pytest.approx(4 * 20 / 19, rel=1e-6) == baseline.phi
    assert estimate_baseline(buckets[:5], min_buckets=10) is None


def stream(
    detector: DriftDetector,
    rng: random.Random,
    alpha: float,
    start: int,
    minutes: int,
    wander: list[float] | None = None,
) -> None:
    """Overdispersed minutes: 20 requests a minute, each with its own alpha around the mean
    (plus the minute's wander, when given: one value per minute)."""
    for minute in range(start, start + minutes):
        accepted = trials = 0
        mean = alpha + (wander[minute] if wander else 0.0)
        for _ in range(20):
            a = min(0.99, max(0.01, rng.gauss(mean, 0.08)))
            n = 60
            k = sum(rng.random() < a for _ in range(n))
            accepted, trials = accepted + k, trials + n
        detector.add(KEY, minute * 60.0 + 1, accepted, trials)
        detector.evaluate((minute + 1) * 60.0 + 1)


def test_a_stationary_overdispersed_day_raises_no_alarm() -> None:
    detector = DriftDetector(DriftSettings())
    stream(detector, random.Random(1), 0.7, 0, 24 * 60)
    view = detector.view(KEY)
    assert view is not None
    assert view.statistic is not None
    assert not view.alarm


def test_a_drop_of_ten_points_raises_the_alarm_within_minutes_and_it_ends_after_recovery() -> None:
    detector = DriftDetector(DriftSettings())
    rng = random.Random(2)
    stream(detector, rng, 0.7, 0, 400)
    stream(detector, rng, 0.6, 400, 10)
    view = detector.view(KEY)
    assert view is not None
    assert view.alarm
    assert view.baseline_alpha is not None
    assert view.recent_alpha is not None
    assert view.baseline_alpha - view.recent_alpha >= 0.03
    stream(detector, rng, 0.7, 410, 30)
    after = detector.view(KEY)
    assert after is not None
    assert not after.alarm


def test_a_drop_below_the_effect_size_gate_raises_nothing() -> None:
    detector = DriftDetector(DriftSettings(min_delta=0.2))
    rng = random.Random(3)
    stream(detector, rng, 0.7, 0, 400)
    stream(detector, rng, 0.6, 400, 30)
    view = detector.view(KEY)
    assert view is not None
    assert not view.alarm


def test_a_slice_with_too_little_baseline_has_no_verdict() -> None:
    detector = DriftDetector(DriftSettings())
    stream(detector, random.Random(4), 0.7, 0, 50)  # fewer than 60 baseline minutes
    view = detector.view(KEY)
    assert view is not None
    assert view.statistic is None
    assert not view.alarm


def ar1(rng: random.Random, minutes: int, rho: float = 0.95, sd: float = 0.015) -> list[float]:
    """A slowly wandering minute-level mean: AR(1) with stationary sd `sd`."""
    out, level = [], 0.0
    for _ in range(minutes):
        level = rho * level + rng.gauss(0.0, sd * math.sqrt(1 - rho * rho))
        out.append(level)
    return out


def test_the_baseline_finds_a_slow_wander_and_none_in_stationary_traffic() -> None:
    rng = random.Random(5)
    wander = ar1(rng, 400)
    buckets = [(round((0.7 + w) * 20000), 20000) for w in wander[:360]]  # no binomial noise
    found = estimate_baseline(buckets, 60)
    assert found is not None
    assert found.rho > 0.8
    assert 0.010 < math.sqrt(found.wander) < 0.020
    still = estimate_baseline([(14000 + rng.choice((-60, 60)), 20000) for _ in range(360)], 60)
    assert still is not None
    assert (0.0, 0.0) == (still.wander, still.rho)


def test_a_slowly_wandering_slice_raises_no_alarm_but_a_real_drop_in_it_does() -> None:
    """The mean wanders (AR(1), rho 0.95, sd 0.015: dips of 0.03 below it several times a
    day): no alarm over two days; a drop of 0.08 on top of the wander is caught in minutes."""
    rng = random.Random(6)
    days = 2 * 24 * 60
    wander = ar1(rng, days + 40)
    quiet = DriftDetector(DriftSettings())
    stream(quiet, rng, 0.7, 0, days, wander)
    view = quiet.view(KEY)
    assert view is not None
    assert 0 == view.alarms_raised
    dropped = [w - (0.08 if minute >= days else 0.0) for minute, w in enumerate(wander)]
    stream(quiet, rng, 0.7, days, 15, dropped)
    caught = quiet.view(KEY)
    assert caught is not None
    assert caught.alarm


def test_a_baseline_shorter_than_the_wander_lags_is_plain_noise() -> None:
    """The demo's 8-bucket baselines once divided by zero here."""
    for count in range(2, 14):
        found = estimate_baseline([(70 + (i % 3), 100) for i in range(count)], 2)
        assert found is not None
        assert 0.0 == found.wander


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.tuples(st.integers(0, 200), st.integers(1, 200))),
        min_size=1,
        max_size=300,
    ),
    st.integers(3, 40),  # baseline length in buckets
    st.integers(0, 3),  # gap
    st.integers(1, 30),  # min trials per bucket
    st.integers(1, 4),  # buckets between judgements
    st.sampled_from([5, baseline.REFRESH]),  # slides between exact re-summations
)
def test_the_sliding_baseline_has_the_moments_of_the_window_summed_afresh(
    raw: list[tuple[int, int] | None],
    length: int,
    gap: int,
    min_trials: int,
    stride: int,
    refresh: int,
) -> None:
    """At every judgement the window kept by entering and leaving buckets (with its periodic
    exact re-summation) gives the baseline estimate_baseline gives on the window built anew."""
    buckets = {i: [min(a, n), n] for i, pair in enumerate(raw) if pair for a, n in [pair]}
    window = BaselineWindow(WANDER_LAGS)
    with mock.patch.object(baseline, "REFRESH", refresh):
        _slide_and_compare(window, buckets, len(raw), length, gap, min_trials, stride)


def _slide_and_compare(
    window: BaselineWindow,
    buckets: dict[int, list[int]],
    last: int,
    length: int,
    gap: int,
    min_trials: int,
    stride: int,
) -> None:
    for index in range(0, last + gap, stride):
        end = index - gap
        window.slide(buckets, end - length, end, min_trials)
        fresh = [
            (a, n) for i, (a, n) in sorted(buckets.items())
            if end - length <= i < end and n >= min_trials
        ]  # fmt: skip
        expected = moments_of(fresh)
        got = window.moments()
        assert (expected is None) == (got is None)
        if expected is not None and got is not None:
            count, p0, noise, square, lags = expected
            assert got[0] == count
            assert got[1] == pytest.approx(p0, rel=1e-12)
            assert got[2] == pytest.approx(noise, rel=1e-9)
            assert got[3] == pytest.approx(square, rel=1e-6, abs=1e-9)
            assert got[4] == pytest.approx(lags, rel=1e-6, abs=1e-9)
            assert estimate_baseline(fresh, 2) == baseline_of(*expected)
