from __future__ import annotations

import numpy as np
import pytest
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import (
    SliceStats,
    cornish_fisher_t,
    proportion_interval,
    robust_variance,
    t_quantile,
    t_table_df,
    tail_confidence,
    wilson,
)


def counts_of(steps: list[tuple[int, int]], max_position: int = 8) -> Counts:
    counts = Counts(max_position)
    counts.add_steps([d for d, _ in steps], [a for _, a in steps])
    return counts


def test_wilson_matches_the_textbook_value_for_8_of_10() -> None:
    lower, upper = wilson(8, 10, 0.95)
    assert (0.4902, 0.9433) == (round(lower, 4), round(upper, 4))


def test_wilson_without_trials_is_the_whole_unit_interval() -> None:
    assert (0.0, 1.0) == wilson(0, 0)


def test_wilson_stays_inside_zero_and_one_at_the_edges() -> None:
    assert 0.0 == wilson(0, 50)[0]
    assert 1.0 == wilson(50, 50)[1]


def test_counts_follow_the_definitions_on_a_hand_computed_example() -> None:
    # steps (drafted, accepted): trials = accepted + 1 for each step that ended in a rejection
    counts = counts_of([(3, 3), (3, 1), (3, 0), (3, 2)])
    assert {
        "requests": 0,
        "spec_steps": 4,
        "draft_tokens": 12,
        "accepted_tokens": 6,
        "trials": 9,
    } == counts.as_dict()
    assert [3, 2, 1, 0, 0, 0, 0, 0] == counts.by_position


def test_slice_stats_compute_alpha_rate_tau_and_per_position() -> None:
    stats = SliceStats.of(counts_of([(3, 3), (3, 1), (3, 0), (3, 2)]), 0.95)
    assert stats.alpha is not None
    assert stats.rate is not None
    assert pytest.approx(6 / 9) == stats.alpha.estimate
    assert pytest.approx(0.5) == stats.rate.estimate
    assert stats.tau is not None
    assert pytest.approx(2.5) == stats.tau.estimate
    assert pytest.approx((0.75, 0.5, 0.25)) == stats.per_position
    assert stats.alpha.lower < stats.alpha.estimate < stats.alpha.upper


def test_alpha_is_comparable_across_k_where_the_rate_is_not() -> None:
    # The same draft (every step accepts 2, then rejects) measured at K=3 and K=7.
    k3 = SliceStats.of(counts_of([(3, 2)] * 100), 0.95)
    k7 = SliceStats.of(counts_of([(7, 2)] * 100), 0.95)
    assert k3.alpha is not None
    assert k7.alpha is not None
    assert k3.rate is not None
    assert k7.rate is not None
    assert k3.alpha.estimate == k7.alpha.estimate
    assert k3.rate.estimate > k7.rate.estimate


def test_empty_counts_give_no_statistics() -> None:
    stats = SliceStats.of(Counts(4), 0.95)
    assert (None, None, None, ()) == (stats.alpha, stats.rate, stats.tau, stats.per_position)


def requests_of(per_request: list[list[tuple[int, int]]], max_position: int = 8) -> Counts:
    """A slice's counts from requests, each a list of (drafted, accepted) steps."""
    total = Counts(max_position)
    for steps in per_request:
        total.merge(Counts.of_request([d for d, _ in steps], [a for _, a in steps], max_position))
    return total


def test_the_robust_variance_is_the_sandwich_computed_by_hand() -> None:
    # three requests (accepted, trials): (3, 4), (1, 4), (8, 8); ratio 12/16 = 0.75
    residuals = [3 - 0.75 * 4, 1 - 0.75 * 4, 8 - 0.75 * 8]
    by_hand = 3 / 2 * sum(r * r for r in residuals) / 16**2
    xx, xy, yy = 9 + 1 + 64, 12 + 4 + 64, 16 + 16 + 64
    assert pytest.approx(by_hand) == robust_variance(3, 12, 16, xx, xy, yy)


def test_per_request_moments_add_up_across_requests_and_merges() -> None:
    counts = requests_of([[(3, 3), (3, 0)], [(3, 1)]])
    # request 1: accepted 3, trials 4; request 2: accepted 1, trials 2
    assert (2, 3 * 3 + 1 * 1, 3 * 4 + 1 * 2, 4 * 4 + 2 * 2) == (
        counts.requests,
        counts.aa,
        counts.at,
        counts.tt,
    )


def test_t_quantiles_match_the_tables_where_verdicts_are_given() -> None:
    for df, exact in ((1, 12.7062), (2, 4.3027), (14, 2.1448), (29, 2.0452), (99, 1.9842)):
        assert pytest.approx(exact, abs=5e-5) == t_quantile(0.95, df)
    assert t_quantile(0.95, 14) > t_quantile(0.95, 29) > 1.96


@pytest.mark.parametrize("confidence", [0.6, 0.9, 0.95, 0.99, tail_confidence(16.0)])
def test_t_quantiles_are_scipys_for_any_degrees_of_freedom(confidence: float) -> None:
    """Exact where the Cornish-Fisher polynomial is not (24% short at 1 degree of freedom),
    and for the non-integer degrees of freedom of Welch's gain interval."""
    from scipy import stats as reference  # a dev dependency: the sidecar does without

    for df in [*range(1, 121), 1.5, 2.7, 13.3, 250.0, 1e5]:
        expected = float(reference.t.ppf(0.5 + confidence / 2, df))
        assert pytest.approx(expected, rel=1e-9) == t_quantile(confidence, df), df


@pytest.mark.parametrize("confidence", [0.95, tail_confidence(16.0)])
def test_the_rules_polynomial_is_within_4e6_of_t_past_their_table(confidence: float) -> None:
    top = t_table_df(confidence)
    worst = max(
        abs(cornish_fisher_t(confidence, df) / t_quantile(confidence, df) - 1.0)
        for df in range(top + 1, 2000)
    )
    assert worst < 4e-6
    assert cornish_fisher_t(confidence, 1) < 0.9 * t_quantile(confidence, 1)  # why the table


def test_identical_requests_pay_little_for_the_request_level_interval() -> None:
    # 40 requests alike: 30 steps each accepting 2 of 4, i.e. a binomial design effect of 1
    counts = requests_of([[(4, 2), (4, 3), (4, 1)] * 10 for _ in range(40)])
    stats = SliceStats.of(counts, 0.95)
    assert stats.alpha is not None
    lower, upper = wilson(counts.accepted, counts.trials)
    assert stats.alpha.design_effect == 1.0
    assert (stats.alpha.upper - stats.alpha.lower) <= 1.05 * (upper - lower)


def test_requests_that_differ_widen_the_interval_by_their_design_effect() -> None:
    good = [[(4, 4)] * 20] * 20  # every draft accepted
    bad = [[(4, 0)] * 20] * 20  # every draft rejected
    counts = requests_of(good + bad)
    stats = SliceStats.of(counts, 0.95)
    assert stats.alpha is not None
    assert stats.alpha.design_effect is not None
    assert stats.alpha.design_effect > 10
    lower, upper = wilson(counts.accepted, counts.trials)
    assert stats.alpha.upper - stats.alpha.lower > 3 * (upper - lower)


def test_counts_without_per_request_data_get_token_level_bounds_marked_as_such() -> None:
    counts = counts_of([(3, 3), (3, 1), (3, 0), (3, 2)] * 50)
    counts.requests = 20  # vLLM's engine counters: requests, but no per-request sums
    interval = proportion_interval(counts.requests, counts.accepted, counts.trials, 0, 0, 0, 0.95)
    assert interval is not None
    assert interval.design_effect is None


def simulate_slice(
    rng: np.random.Generator, requests: int, mean: float, sd: float, k: int = 4
) -> Counts:
    """Requests of 25-50 steps, each with its own acceptance drawn from Beta(mean, sd)."""
    if sd > 0:
        shape = mean * (1 - mean) / sd**2 - 1
        alphas = rng.beta(mean * shape, (1 - mean) * shape, requests)
    else:
        alphas = np.full(requests, mean)
    total = Counts(k)
    for alpha in alphas:
        steps = int(rng.integers(25, 51))
        draws = rng.random((steps, k)) < alpha
        accepted = np.cumprod(draws, axis=1).sum(axis=1).tolist()
        total.merge(Counts.of_request([k] * steps, accepted, k))
    return total


def large_sample_alpha(rng: np.random.Generator, mean: float, sd: float, k: int = 4) -> float:
    """The ratio estimator's limit: E[accepted per step] / E[trials per step] over requests."""
    shape = mean * (1 - mean) / sd**2 - 1
    alphas = rng.beta(mean * shape, (1 - mean) * shape, 400_000)
    accepted = np.sum([alphas**i for i in range(1, k + 1)], axis=0)
    return float(accepted.mean() / (accepted + 1 - alphas**k).mean())


def test_the_interval_covers_the_truth_on_overdispersed_requests_where_wilson_does_not() -> None:
    """The issue's case: per-request alpha ~ Beta(0.68, sd 0.08), 40 requests per slice."""
    rng = np.random.default_rng(11)
    truth = large_sample_alpha(rng, 0.68, 0.08)
    robust = token = 0
    runs = 300
    for _ in range(runs):
        counts = simulate_slice(rng, 40, 0.68, 0.08)
        alpha = SliceStats.of(counts, 0.95).alpha
        assert alpha is not None
        robust += alpha.lower <= truth <= alpha.upper
        lower, upper = wilson(counts.accepted, counts.trials)
        token += lower <= truth <= upper
    assert robust / runs >= 0.90
    assert token / runs < 0.80  # what the token-level interval claimed as 95%


def test_few_requests_widen_the_interval_by_students_t_not_the_normal_z() -> None:
    """Five alike requests: t on 4 degrees of freedom is 2.776 (tables), not 1.96."""
    counts = requests_of([[(4, 2), (4, 3), (4, 1)] * 10 for _ in range(5)])
    alpha = SliceStats.of(counts, 0.95).alpha
    assert alpha is not None
    p, n = counts.accepted / counts.trials, counts.trials
    by_hand = [
        (p + t * t / (2 * n) + sign * t * (p * (1 - p) / n + t * t / (4 * n * n)) ** 0.5)
        / (1 + t * t / n)
        for t in (2.776,)
        for sign in (-1, 1)
    ]
    assert pytest.approx(by_hand, abs=2e-3) == [alpha.lower, alpha.upper]
