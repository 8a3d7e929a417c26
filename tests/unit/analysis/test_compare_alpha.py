"""Acceptance compared between two sides (analysis/compare/alpha.py), rule by rule: the
difference's interval with Welch's degrees of freedom, the verdicts at their edges, the gates
and the family."""

from __future__ import annotations

import math
import random

import pytest
from specwatch.analysis.compare.alpha import (
    BETTER,
    INSUFFICIENT,
    SAME,
    WORSE,
    Pairs,
    SliceComparison,
    compare_models,
    compare_slices,
    difference,
    family_confidence,
    overall_change,
    passes,
    variance,
    verdict,
)
from specwatch.analysis.counting.stats import Interval, t_quantile
from specwatch.analysis.counting.sums import Sums


def side(rng: random.Random, alpha: float, requests: int) -> Sums:
    """`requests` requests of 20-200 trials, each accepting around `alpha` (its own rate)."""
    out = Sums()
    for _ in range(requests):
        trials = float(rng.randrange(20, 200))
        own = min(1.0, max(0.0, rng.gauss(alpha, 0.15)))
        out.add(round(own * trials), trials)
    return out


def test_the_difference_has_the_sum_of_both_variances_and_welchs_df() -> None:
    """after - before, half-width t(df) x sqrt(v_b + v_a), df = (v_b + v_a)^2 over
    v_b^2 / (n_b - 1) + v_a^2 / (n_a - 1): by hand, on two thin sides of unequal size."""
    rng = random.Random(41)
    before, after = side(rng, 0.7, 4), side(rng, 0.6, 9)
    got = difference(before, after, 0.95)
    assert got is not None
    v_b, v_a = variance(before), variance(after)
    df = (v_b + v_a) ** 2 / (v_b**2 / 3 + v_a**2 / 8)
    half = t_quantile(0.95, df) * math.sqrt(v_b + v_a)
    estimate = after.x / after.y - before.x / before.y
    assert got.estimate == pytest.approx(estimate, rel=1e-12)
    assert got.upper - got.estimate == pytest.approx(half, rel=1e-9)
    assert got.estimate - got.lower == pytest.approx(half, rel=1e-9)
    assert difference(Sums(), after, 0.95) is None
    assert difference(before, Sums(), 0.95) is None


def test_a_side_without_per_request_data_has_the_binomial_variance() -> None:
    tokens = Sums(0, 70.0, 100.0)  # totals only: no request's moments
    assert variance(tokens) == pytest.approx(0.7 * 0.3 / 100)
    # with them, never below the binomial floor
    rng = random.Random(43)
    s = side(rng, 0.5, 30)
    p = s.x / s.y
    assert variance(s) >= p * (1 - p) / s.y


def test_verdicts_at_their_edges() -> None:
    assert WORSE == verdict(Interval(-0.1, -0.2, -1e-9), 0.02)
    assert INSUFFICIENT == verdict(Interval(-0.1, -0.2, 0.0), 0.02)  # reaches 0: not sure
    assert BETTER == verdict(Interval(0.1, 1e-9, 0.2), 0.02)
    assert INSUFFICIENT == verdict(Interval(0.1, 0.0, 0.2), 0.02)
    assert SAME == verdict(Interval(0.0, -0.02, 0.02), 0.02)  # the margin's edge is inside
    assert INSUFFICIENT == verdict(Interval(0.0, -0.021, 0.02), 0.02)
    assert INSUFFICIENT == verdict(Interval(0.0, -0.02, 0.021), 0.02)
    assert INSUFFICIENT == verdict(None, 0.02)


def test_the_gates_are_met_at_exactly_their_values_and_the_family_splits_the_error() -> None:
    assert passes(Sums(30, 500.0, 1000.0), 1000, 30)
    assert not passes(Sums(29, 500.0, 1000.0), 1000, 30)
    assert not passes(Sums(30, 500.0, 999.0), 1000, 30)
    assert family_confidence(0.95, 1) == pytest.approx(0.95)
    assert family_confidence(0.95, 5) == pytest.approx(0.99)
    assert family_confidence(0.95, 0) == pytest.approx(0.95)


def test_each_slice_is_judged_at_its_models_family_over_the_slices_compared() -> None:
    """Model m: two slices past the gates and one below (not in the family); model n: one.
    m's intervals are at 1 - 0.05 / 2, n's at 0.95, whatever the other model holds."""
    rng = random.Random(47)
    a, b = side(rng, 0.7, 40), side(rng, 0.66, 40)
    thin = side(rng, 0.7, 5)
    rows = [
        (("m", "0-512", "chat"), a, b),
        (("m", "0-512", "code"), b, a),
        (("m", "32k+", "chat"), thin, thin),
        (("n", "0-512", "chat"), a, b),
    ]
    got = {row.key: row for row in compare_slices(rows, 0.95, 0.02, 1000, 30)}
    assert got["m", "32k+", "chat"].difference is None
    assert INSUFFICIENT == got["m", "32k+", "chat"].verdict
    assert got["m", "0-512", "chat"].difference == difference(a, b, 0.975)
    assert got["m", "0-512", "code"].difference == difference(b, a, 0.975)
    assert got["n", "0-512", "chat"].difference == difference(a, b, 0.95)


def test_the_overall_change_splits_into_rate_and_mix_by_hand() -> None:
    """Two slices: 0.5 -> 0.6 on a share 1/2 -> 1/4, 0.8 -> 0.8 on 1/2 -> 3/4; a slice one side
    did not see takes no part. rate = 1/4 x 0.1; mix = (1/4 - 1/2) 0.5 + (3/4 - 1/2) 0.8."""
    rows = [
        SliceComparison(("m", "a"), Sums(10, 50.0, 100.0), Sums(10, 60.0, 100.0), None, SAME),
        SliceComparison(("m", "b"), Sums(10, 80.0, 100.0), Sums(10, 240.0, 300.0), None, SAME),
        SliceComparison(("m", "c"), Sums(), Sums(10, 0.0, 500.0), None, SAME),
        SliceComparison(("m", "d"), Sums(10, 0.0, 500.0), Sums(), None, SAME),
    ]
    found = overall_change(rows)
    assert found is not None
    assert found.rate == pytest.approx(0.25 * 0.1)
    assert found.mix == pytest.approx(-0.25 * 0.5 + 0.25 * 0.8)
    assert found.total == pytest.approx(found.rate + found.mix)
    assert overall_change(rows[2:]) is None


def test_a_model_whose_mix_moved_says_so_word_for_word() -> None:
    """The finer slices' shares move from 1/2, 1/2 to 1/82, 81/82 (PSI 2.14): the caveat, its
    PSI; the same shares on both sides: PSI 0, none."""
    rng = random.Random(53)
    a, b = side(rng, 0.7, 40), side(rng, 0.7, 40)
    scale = b.y / a.y
    heavy = Sums(a.requests * 9, a.x * 9 * scale, a.y * 9 * scale)
    rollup: Pairs = [(("m",), a, b)]
    moved: Pairs = [(("m", "x"), a, Sums(b.requests, b.x / 9, b.y / 9)), (("m", "y"), a, heavy)]
    _, (model,) = compare_models(rollup, moved, 0.95, 0.02, 1000, 30)
    assert model.mix_psi is not None
    assert model.caveat == (
        f"the traffic mix moved (PSI {model.mix_psi:.2f}): the overall change mixes the "
        "config's part with the traffic's; judge by slice"
    )
    x, y = 1 / 82, 81 / 82  # b's trials / 9 and 9 x b's
    want = (x - 0.5) * math.log(x / 0.5) + (y - 0.5) * math.log(y / 0.5)
    assert model.mix_psi == pytest.approx(want, rel=1e-9)
    alike: Pairs = [(("m", "x"), a, b), (("m", "y"), a, b)]
    _, (still,) = compare_models(rollup, alike, 0.95, 0.02, 1000, 30)
    assert (0.0, None) == (still.mix_psi, still.caveat)


def test_two_sides_that_accept_everything_differ_by_exactly_nothing() -> None:
    """No variance on either side (every token accepted): a difference of 0, interval [0, 0]."""
    every = Sums(10, 100.0, 100.0, 1000.0, 1000.0, 1000.0)
    found = difference(every, every, 0.95)
    assert found is not None
    assert (0.0, 0.0, 0.0) == (found.estimate, found.lower, found.upper)


def test_welchs_df_with_a_side_of_two_requests_and_below_two_degrees() -> None:
    """Two requests a side, the before side's far more variable: n - 1 = 1 for each, and a df
    between 1 and 2 read as it is (Student's t at 1.3 degrees, not 2); sides of one trial are
    compared too."""
    before, after = Sums(), Sums()
    for a, t in ((2, 20), (18, 20)):
        before.add(a, t)
    for a, t in ((10, 20), (11, 20)):
        after.add(a, t)
    v_b, v_a = variance(before), variance(after)
    df = (v_b + v_a) ** 2 / (v_b**2 / 1 + v_a**2 / 1)
    assert 1.0 < df < 2.0
    got = difference(before, after, 0.95)
    assert got is not None
    assert got.upper - got.estimate == pytest.approx(t_quantile(0.95, df) * math.sqrt(v_b + v_a))
    assert difference(Sums(1, 1, 1), Sums(1, 0, 1), 0.95) is not None  # one trial a side
