from __future__ import annotations

import pytest
from specwatch.analysis.stats import SliceStats, wilson
from specwatch.analysis.windows import Counts


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
    assert pytest.approx(2.5) == stats.tau
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
