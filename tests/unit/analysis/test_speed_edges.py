"""The speed rules at their edges (analysis/speed/goodput.py, speedup.py): a request's engine
steps by hand, the TPOT interval and the measured gain at their gates (two requests, under a
second of decode time, a single decode token), the cost from times, the modelled gain's bounds
at an estimated cost's interval, and a gain's equality where a field is NaN."""

from __future__ import annotations

import math

import pytest
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import Interval
from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.speed.goodput import decode_steps, tpot_interval
from specwatch.analysis.speed.speedup import (
    MEASURED,
    Cost,
    Gain,
    cost_from_times,
    measured_gain,
    modelled_gain,
)
from specwatch.core.records import SpecDecodeBlock


def two(x: float, y: float) -> Sums:
    """Two requests of x / 2 seconds over y / 2 tokens each, one 20% slower."""
    out = Sums()
    out.add(0.4 * x, 0.5 * y)
    out.add(0.6 * x, 0.5 * y)
    return out


def test_a_requests_steps_are_those_listed_and_the_plain_ones_its_tokens_leave() -> None:
    """Three listed steps accepting 2, 1, 0 emit 3 + 3 tokens: of 10 decode tokens, 4 more
    came one a step; of 5, none (never fewer than those listed)."""
    spec = SpecDecodeBlock(3, (3, 3, 3), (2, 1, 0))
    assert 7 == decode_steps(spec, 10)
    assert 3 == decode_steps(spec, 5)
    assert 3 == decode_steps(spec, 6)


def test_the_tpot_interval_from_two_requests_under_a_second_of_one_token_each() -> None:
    for sums in (two(0.5, 2.0), two(2.0, 1.0)):
        found = tpot_interval(sums, 0.95)
        assert found is not None
        assert found.estimate == pytest.approx(sums.x / sums.y)
    one = Sums()
    one.add(0.5, 1.0)
    assert tpot_interval(one, 0.95) is None
    assert tpot_interval(two(0.0, 2.0), 0.95) is None
    assert tpot_interval(two(1.0, 0.0), 0.95) is None
    assert tpot_interval(two(5e-324, 1e10), 0.95) is None  # a TPOT that underflows to 0


def test_the_measured_gain_at_its_gates_on_either_side() -> None:
    spec, base = two(0.5, 2.0), two(0.8, 2.0)
    gain = measured_gain(spec, base, 0.95)
    assert gain is not None
    assert MEASURED == gain.method
    assert gain.ratio == pytest.approx(1.6)
    assert measured_gain(two(0.5, 1.0), two(0.8, 1.0), 0.95) is not None  # one token a side
    assert measured_gain(spec, two(0.0, 2.0), 0.95) is None  # a baseline without time
    one = Sums()
    one.add(0.5, 1.0)
    assert measured_gain(one, base, 0.95) is None
    assert measured_gain(spec, None, 0.95, baseline_seconds_per_token=0.4) is not None
    assert measured_gain(spec, None, 0.95) is None


def counts(accepted: int, steps: int, max_drafted: int) -> Counts:
    out = Counts(8)
    out.accepted, out.steps, out.max_drafted = accepted, steps, max_drafted
    return out


def test_the_cost_from_times_by_hand_and_none_without_steps_a_k_or_a_baseline() -> None:
    """tau = 1 + 30 / 20 = 2.5; c = (0.012 x 2.5 / 0.024 - 1) / 4 = 0.0625."""
    found = counts(30, 20, 4)
    assert cost_from_times(0.012, 0.024, found) == pytest.approx(0.0625)
    assert cost_from_times(0.001, 0.024, found) == 0.0  # never below 0
    assert cost_from_times(0.012, 0.0, found) is None
    assert cost_from_times(0.012, 0.024, counts(30, 20, 0)) is None
    assert cost_from_times(0.012, 0.024, counts(0, 0, 4)) is None


def test_the_modelled_gain_reads_the_slowest_tau_at_the_dearest_cost() -> None:
    tau, k = Interval(2.0, 1.8, 2.2), 4
    cost = Cost(0.05, "estimated", 0.02, 0.1)
    gain = modelled_gain(tau, k, cost)
    assert gain.ratio == pytest.approx(2.0 / 1.2)
    assert gain.lower == pytest.approx(1.8 / 1.4)
    assert gain.upper == pytest.approx(2.2 / 1.08)
    assert (gain.cost_lower, gain.cost_upper) == (0.02, 0.1)


def test_gains_equal_field_by_field_with_nan_equal_only_to_nan() -> None:
    nan_a, nan_b = float("nan"), float("inf") - float("inf")  # two NaN objects
    assert Gain(nan_a, MEASURED, 1.0, 1.0) == Gain(nan_b, MEASURED, 1.0, 1.0)
    assert hash(Gain(nan_a, MEASURED, 1.0, 1.0)) == hash(Gain(nan_b, MEASURED, 1.0, 1.0))
    assert Gain(nan_a, MEASURED, 1.0, 1.0) != Gain(1.0, MEASURED, 1.0, 1.0)
    assert Gain(1.0, MEASURED, 1.0, 1.0) != Gain(nan_a, MEASURED, 1.0, 1.0)
    assert math.isnan(Gain.insufficient(60.0).ratio)


def test_a_gain_between_sides_of_identical_requests_is_exact() -> None:
    """Every request at one TPOT on each side: no variance, the gain's interval is the ratio."""
    spec, base = Sums(), Sums()
    for _ in range(3):
        spec.add(0.5, 10.0)
        base.add(1.0, 10.0)
    gain = measured_gain(spec, base, 0.95)
    assert gain is not None
    assert 2.0 == gain.ratio
    assert gain.lower == pytest.approx(2.0)
    assert gain.upper == pytest.approx(2.0)


def test_a_gain_keeps_its_window_and_moments_that_overflow_together_give_none() -> None:
    tau, cost = Interval(2.0, 1.8, 2.2), Cost(0.05, "configured")
    assert 300.0 == modelled_gain(tau, 4, cost, window_seconds=300.0).window_seconds
    huge = Sums(2, 4e307, 4e307, 4e307, 4e307, 4e307)  # each finite, their sum not
    assert measured_gain(huge, two(0.8, 2.0), 0.95) is None
    assert measured_gain(two(0.5, 2.0), huge, 0.95) is None
    assert measured_gain(two(0.5, 0.0), two(0.8, 2.0), 0.95) is None  # no decode tokens
