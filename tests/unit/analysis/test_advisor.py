from __future__ import annotations

import pytest
from specwatch.analysis.speed.advisor import advise


@pytest.mark.parametrize(
    ("alpha", "best_k", "speedup"),
    [(0.5, 3, 1.63), (0.6, 4, 1.92), (0.7, 6, 2.35), (0.8, 8, 3.09), (0.9, 13, 4.67)],
)
def test_iid_acceptance_reproduces_the_reference_optimal_k_table(
    alpha: float, best_k: int, speedup: float
) -> None:
    # i.i.d. acceptance: position i is accepted with probability alpha^i; K large enough
    per_position = tuple(alpha**i for i in range(1, 31))
    advice = advise(per_position, current_k=30, cost_ratio=0.05)
    assert advice is not None
    assert (best_k, speedup) == (advice.best_k, round(advice.best_speedup, 2))
    low, high = advice.range
    assert low <= best_k <= high  # the optimum is flat: a range around it


def test_when_the_best_is_the_current_k_it_suggests_one_more_on_a_canary() -> None:
    advice = advise((0.9, 0.8, 0.7), current_k=3, cost_ratio=0.05)
    assert advice is not None
    assert 3 == advice.best_k
    assert "try K=4 on a canary" in advice.note


def test_low_acceptance_advises_a_shorter_draft_or_none() -> None:
    shorter = advise((0.5, 0.1, 0.02, 0.0), current_k=4, cost_ratio=0.1)
    assert shorter is not None
    assert (1, "lower num_speculative_tokens from 4 to 1") == (shorter.best_k, shorter.note)
    none = advise((0.04, 0.0), current_k=2, cost_ratio=0.1)
    assert none is not None
    assert 0 == none.best_k
    assert "does not pay" in none.note


def test_no_per_position_data_no_advice() -> None:
    assert advise((), current_k=4, cost_ratio=0.05) is None


def test_a_k_past_the_positions_counted_is_not_advised_down_on_half_its_data() -> None:
    """K = 20 with 16 positions counted (limits.max_position): the table stops at 16, so
    its best, 16, says nothing against 20; the note says what is missing, not "lower K"."""
    per_position = tuple(0.95**i for i in range(1, 17))
    advice = advise(per_position, current_k=20, cost_ratio=0.02)
    assert advice is not None
    assert (16, 16) == (advice.best_k, advice.table[-1][0])
    assert "lower" not in advice.note
    assert "K=20 drafts past the 16 positions counted" in advice.note
    assert "raise limits.max_position" in advice.note
    inside = advise(per_position, current_k=16, cost_ratio=0.02)
    assert inside is not None
    assert "try K=17 on a canary" in inside.note
