"""The load table's rules at their edges (analysis/speed/load.py): what one request adds, by
hand; the cost measured over every load and its cap; a bucket measured at exactly the minimum
on both sides, and at a gain of exactly 1; K 1 is speculation; a bucket without traffic shows
none; the load window's periods, one table each, forgotten past the window."""

from __future__ import annotations

import pytest
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.slicing import LoadBuckets
from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.speed.load import LoadTable, WindowedLoad

BUCKETS = (1, 4, 8, 16)


def table() -> LoadTable:
    return LoadTable(LoadBuckets(BUCKETS), max_position=4)


def test_a_request_adds_its_decode_seconds_and_tokens_after_the_first() -> None:
    """TPOT 0.01 over 11 tokens: 0.1 s over 10 decode tokens; 2 tokens: one; 1 token: none."""
    made = table()
    made.add("m", 1, None, False, 0.01, 11)
    made.add("m", 1, None, True, 0.02, 2)
    made.add("m", 1, None, False, 0.01, 1)
    ((counts, spec, baseline),) = made.cells("m").values()
    assert (1, 10.0) == (spec.requests, spec.y)
    assert spec.x == pytest.approx(0.1)
    assert (1, 1.0) == (baseline.requests, baseline.y)
    assert baseline.x == pytest.approx(0.02)
    assert 0 == counts.steps


def test_the_cost_measured_over_every_load_by_hand_capped_below_1() -> None:
    """Both sides at exactly the minimum (2 requests): tau = 1 + 20 / 10 = 3, spec TPOT 0.01,
    baseline 0.02: c = (0.01 x 3 / 0.02 - 1) / 4 = 0.125, across two load buckets."""
    made = table()
    steps = Counts.of_request((4,) * 10, (2,) * 10, 4)
    made.add("m", 1, steps, False, 0.01, 31)
    made.add("m", 9, None, False, 0.01, 31)
    made.add("m", 1, None, True, 0.02, 31)
    made.add("m", 9, None, True, 0.02, 31)
    assert made.measured_cost("m", 2) == pytest.approx(0.125)
    assert made.measured_cost("m", 3) is None
    dear = table()
    dear.add("m", 1, steps, False, 0.5, 31)
    dear.add("m", 1, None, True, 0.02, 31)
    assert dear.measured_cost("m", 1) == 0.99  # kept below 1


def test_a_bucket_at_exactly_the_minimum_a_side_and_a_gain_of_exactly_1_keeps_its_k() -> None:
    """20 a side, the same times on both: gain 1.0, not slower: the K it ran (1) kept; a
    bucket between the two with no traffic shows none, and takes the K below it."""
    made = table()
    one = Counts.of_request((1,) * 10, (1,) * 10, 4)
    for load in (1, 5):
        for i in range(20):
            made.add("m", load, one, False, 0.01 * (1 + i % 2), 11)
            made.add("m", load, None, True, 0.01 * (1 + i % 2), 11)
    k_table = made.k_table("m", cost_ratio=0.05, confidence=0.95, min_requests=20)
    assert k_table is not None
    assert 1 == k_table.k_in_use
    first, gap, third = k_table.ranges
    assert ("measured", 1) == (first.method, first.k)
    assert first.gain == pytest.approx(1.0)
    assert (None, 1, 0, 0) == (gap.method, gap.k, gap.spec_requests, gap.baseline_requests)
    assert ("measured", 1, 20, 20) == (
        third.method,
        third.k,
        third.spec_requests,
        third.baseline_requests,
    )


def test_the_load_window_keeps_one_table_a_period_and_forgets_those_past_it() -> None:
    """60 s in 6 periods of 10: records of one period share its table; once the window has
    moved 6 periods on, a late record for the first has no table."""
    window = WindowedLoad(LoadBuckets(BUCKETS), 4, length=60.0, periods=6)
    first = window.table_at(5.0)
    assert first is not None
    assert first is window.table_at(9.0)
    assert window.table_at(15.0) is not first
    assert window.table_at(65.0) is not None  # period 6: period 0 is past the window
    assert window.table_at(5.0) is None
    assert window.table_at(15.0) is not None  # period 1 still in it


def test_a_table_set_cell_by_cell_is_the_one_add_builds() -> None:
    """Fleet analysis sums the cells in SQL and sets them: the same K table and cost as the
    requests added one by one; a model set without cells has none, and its largest load."""
    steps = Counts.of_request((4,) * 10, (2,) * 10, 4)
    added = table()
    for load in (1, 5):
        for _ in range(3):
            added.add("m", load, steps, False, 0.01, 31)
            added.add("m", load, None, True, 0.02, 31)
    made = table()
    for index, (counts, spec, baseline) in added.cells("m").items():
        made.set_cell("m", index, counts, spec, baseline)
    made.set_largest("m", 5)
    assert added.cells("m") == made.cells("m")
    assert ["m"] == made.models()
    assert added.k_table("m", 0.05, 0.95, 3) == made.k_table("m", 0.05, 0.95, 3)
    assert added.measured_cost("m", 3) == made.measured_cost("m", 3)
    quiet = table()
    quiet.set_cell("q", 0, Counts(4), Sums(), Sums())
    assert ["q"] == quiet.models()


def test_a_k_table_only_where_the_model_speculated_and_each_bucket_at_the_k_it_ran() -> None:
    """No table for a model never seen, nor for one with baseline requests only; under a
    schedule each measured bucket keeps the K it ran (4 at load 1, 2 at load 5), and a bucket
    with baseline requests only takes the K below it."""
    made = table()
    assert made.k_table("m", 0.05, 0.95, 3) is None
    made.add("b", 1, None, True, 0.02, 31)
    assert made.k_table("b", 0.05, 0.95, 3) is None
    for load, k in ((1, 4), (5, 2)):
        steps = Counts.of_request((k,) * 10, (k,) * 10, 4)
        for i in range(3):
            made.add("m", load, steps, False, 0.01 * (1 + i % 2), 31)
            made.add("m", load, None, True, 0.02 * (1 + i % 2), 31)
    made.add("m", 9, None, True, 0.02, 31)  # load 9: a baseline request only
    k_table = made.k_table("m", 0.05, 0.95, 3)
    assert k_table is not None
    assert [(4, "measured"), (4, None), (2, "measured"), (2, None)] == [
        (row.k, row.method) for row in k_table.ranges
    ]
