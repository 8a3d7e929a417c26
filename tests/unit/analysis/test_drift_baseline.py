"""The drift model's parameters from a baseline's moments (analysis/drift/baseline.py,
`baseline_of`), each by hand: the wander from the lags where lag 1 stands out, the requests'
correlation from what is left beyond the noise, the constant factor from what is left after."""

from __future__ import annotations

import math

import pytest
from specwatch.analysis.drift.baseline import WANDER_LAGS, Moments, baseline_of


def lags(first: float, ratio: float) -> list[float]:
    return [first * ratio**k for k in range(WANDER_LAGS)]


def test_a_wander_from_lags_that_stand_out_and_decay_by_hand() -> None:
    """100 buckets, square 0.02, noise 0.008; lags 0.008 x 0.75^k: lag 1 is 0.4 of the
    square (past 2 / sqrt(100)); rho = sum(lags[1:]) / sum(lags[:-1]) = 0.75; the wander
    min(0.008 / 0.75, 0.02 - 0.008) = 0.0107; r = (0.02 - wander - noise) / 0.004."""
    found = baseline_of(Moments(100, 0.7, 2.5, 0.008, 0.02, lags(0.008, 0.75), 0.004))
    wander = min(0.008 / 0.75, 0.02 - 0.008)
    assert found.rho == pytest.approx(0.75)
    assert found.wander == pytest.approx(wander)
    icc = (0.02 - wander - 0.008) / 0.004
    assert found.icc == pytest.approx(icc)
    assert found.phi == pytest.approx(max(1.0, (0.02 - wander - icc * 0.004) / 0.008))
    assert (0.7, 100, 2.5) == (found.alpha, found.buckets, found.per_step)


def test_the_wander_is_at_most_what_the_noise_leaves_and_rho_within_its_bounds() -> None:
    """Lags that decay slowly (0.999) put rho at its 0.99 cap; lag 1 at 0.018 of a square of
    0.02 over noise 0.015 caps the wander at 0.005, not 0.018 / 0.99."""
    found = baseline_of(Moments(100, 0.7, 1.0, 0.015, 0.02, lags(0.018, 0.999), 0.0))
    assert found.rho == 0.99
    assert found.wander == pytest.approx(0.005)
    assert 0.0 == found.icc
    assert found.phi == pytest.approx(1.0)


def test_without_a_wander_the_excess_splits_into_r_then_the_factor() -> None:
    """Lags that do not stand out: no wander, rho 0. Excess 0.03 - 0.01 over cluster 0.01:
    r capped at 1; the factor (0.03 - 0.01) / 0.01 = 2. Excess 0.005 over 0.01: r 0.5, no
    factor past 1. No noise: factor 1."""
    flat = [0.0001] * WANDER_LAGS
    capped = baseline_of(Moments(100, 0.7, 1.0, 0.01, 0.03, flat, 0.01))
    assert (0.0, 0.0, 1.0) == (capped.rho, capped.wander, capped.icc)
    assert capped.phi == pytest.approx(2.0)
    half = baseline_of(Moments(100, 0.7, 1.0, 0.01, 0.015, flat, 0.01))
    assert half.icc == pytest.approx(0.5)
    assert half.phi == 1.0
    assert 1.0 == baseline_of(Moments(100, 0.7, 1.0, 0.0, 0.015, flat, 0.01)).phi
    assert math.isfinite(baseline_of(Moments(3, 0.7, 1.0, 0.01, 0.015, flat[:2], 0.0)).phi)
