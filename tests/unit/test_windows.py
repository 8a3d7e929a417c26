from __future__ import annotations

from specwatch.analysis.windows import Counts, Histogram, SlidingWindow


def one_step(accepted: int, drafted: int = 4) -> Counts:
    counts = Counts(4)
    counts.add_steps([drafted], [accepted])
    counts.requests = 1
    return counts


def test_the_window_forgets_buckets_older_than_its_length() -> None:
    window: SlidingWindow[str] = SlidingWindow(length=60, bucket=10, max_position=4)
    window.add("s", 0.0, one_step(4))
    window.add("s", 55.0, one_step(1))
    assert 2 == window.totals(59.0)["s"].steps
    assert 1 == window.totals(65.0)["s"].steps  # the bucket [0, 10) left the window
    assert 0 == window.totals(200.0)["s"].steps


def test_memory_is_bounded_by_buckets_not_by_records() -> None:
    window: SlidingWindow[str] = SlidingWindow(length=60, bucket=10, max_position=4)
    for i in range(10_000):
        window.add("s", i * 0.5, one_step(2))
    assert len(window._buckets["s"]) <= 6
    assert 120 == window.totals(4999.5)["s"].requests  # 60 s x 2 records/s


def test_a_late_record_lands_in_its_own_bucket() -> None:
    window: SlidingWindow[str] = SlidingWindow(length=60, bucket=10, max_position=4)
    window.add("s", 30.0, one_step(1))
    window.add("s", 12.0, one_step(1))
    assert 2 == window.totals(40.0)["s"].steps
    assert 1 == window.totals(75.0)["s"].steps


def test_histogram_is_cumulative_with_inf_last() -> None:
    histogram = Histogram((1.0, 2.0))
    for value in (0.5, 1.0, 1.5, 9.0):
        histogram.observe(value)
    assert [("1.0", 2), ("2.0", 3), ("+Inf", 4)] == histogram.cumulative()
    assert 12.0 == histogram.sum
