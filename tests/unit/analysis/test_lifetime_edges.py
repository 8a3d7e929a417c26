"""decay_over_uptime's thirds (analysis/causes/lifetime.py) by hand: the ratio of accepted to
what each slice's own rate expects, at its gates, and the robust variance of its log."""

from __future__ import annotations

import pytest
from specwatch.analysis.causes.lifetime import DECAY_MIN_REQUESTS, _Third


def third(requests: float, accepted: float, expected: float) -> _Third:
    found = _Third()
    found.requests, found.accepted, found.expected = requests, accepted, expected
    return found


def test_the_ratio_from_the_minimum_of_requests_one_accepted_token_and_under_one_expected() -> None:
    assert third(DECAY_MIN_REQUESTS, 1.0, 0.5).ratio() == 2.0
    assert third(DECAY_MIN_REQUESTS - 1, 1.0, 0.5).ratio() is None
    assert third(DECAY_MIN_REQUESTS, 0.0, 0.5).ratio() is None
    assert third(DECAY_MIN_REQUESTS, 1.0, 0.0).ratio() is None


def test_the_log_variance_by_hand_from_two_requests() -> None:
    """Requests (a, t, p): (3, 10, 0.5) and (8, 10, 0.5): E = 10, R = 1.1; sum (a - R p t)^2
    = (3 - 5.5)^2 + (8 - 5.5)^2 = 12.5; / E^2 x n / (n - 1) / R^2."""
    found = _Third()
    for a, t, p in ((3.0, 10.0, 0.5), (8.0, 10.0, 0.5)):
        found.add([1.0, a, t, a * a, a * t, t * t], p)
    r = found.accepted / found.expected
    assert r == pytest.approx(1.1)
    assert found.log_variance(r) == pytest.approx(12.5 / 100.0 * 2.0 / r**2)
    # where R fits every request, no residual: 0, never below
    exact = _Third()
    for a, t in ((5.0, 10.0), (5.0, 10.0)):
        exact.add([1.0, a, t, a * a, a * t, t * t], 0.5)
    assert exact.log_variance(1.0) == 0.0
