from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import SliceStats
from specwatch.analysis.counting.windows import SlidingWindow
from specwatch.core.histogram import Histogram

from tests.support import examples


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
    assert len(window._rings["s"].buckets) <= 6
    assert 120 == window.totals(4999.5)["s"].requests  # 60 s x 2 records/s


def test_a_late_record_lands_in_its_own_bucket() -> None:
    window: SlidingWindow[str] = SlidingWindow(length=60, bucket=10, max_position=4)
    window.add("s", 30.0, one_step(1))
    window.add("s", 12.0, one_step(1))
    assert 2 == window.totals(40.0)["s"].steps
    assert 1 == window.totals(75.0)["s"].steps
    assert 2 == window.since_start("s").steps


def test_a_record_older_than_the_window_counts_since_start_only() -> None:
    window: SlidingWindow[str] = SlidingWindow(length=60, bucket=10, max_position=4)
    window.add("s", 100.0, one_step(1))
    window.add("s", 10.0, one_step(2))  # 90 s before the newest: outside the window
    assert (1, 2) == (window.totals(100.0)["s"].steps, window.since_start("s").steps)
    assert 3 == window.since_start("s").accepted
    before = window.version("s")
    window.add("s", 5.0, one_step(1))  # since start changed: what a snapshot keys its copy on
    assert window.version("s") != before


def test_the_window_keeps_the_largest_k_of_what_is_left() -> None:
    """When the bucket that held the window's K leaves, the K is the largest of the settled
    buckets left, not the newest's."""
    window: SlidingWindow[str] = SlidingWindow(length=60, bucket=10, max_position=4)
    for ts, k in ((0.0, 4), (10.0, 3), (20.0, 2), (30.0, 1)):
        window.add("s", ts, one_step(0, drafted=k))
    assert 4 == window.current(35.0)["s"].max_drafted
    assert 3 == window.current(65.0)["s"].max_drafted  # the K = 4 bucket left


def test_histogram_is_cumulative_with_inf_last() -> None:
    histogram = Histogram((1.0, 2.0))
    for value in (0.5, 1.0, 1.5, 9.0):
        histogram.observe(value)
    assert [("1.0", 2), ("2.0", 3), ("+Inf", 4)] == histogram.cumulative()
    assert 12.0 == histogram.sum


@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=30),
    st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=8, unique=True),
)
def test_histogram_buckets_are_prometheus_le_buckets(
    values: list[float], bounds: list[float]
) -> None:
    """Each value in the first bucket whose bound it does not exceed; past every bound, or
    NaN, in +Inf: the definition, counted by hand."""
    histogram = Histogram(sorted(bounds))
    expected = [0] * (len(bounds) + 1)
    for value in values:
        histogram.observe(value)
        fits = [i for i, bound in enumerate(sorted(bounds)) if value <= bound]
        expected[fits[0] if fits else len(bounds)] += 1
    assert expected == histogram.buckets


def _request(drafted: int, accepted: list[int]) -> Counts:
    counts = Counts(3)
    counts.add_steps([drafted] * len(accepted), [min(a, drafted) for a in accepted])
    return counts.as_request()


records = st.lists(
    st.tuples(
        st.sampled_from("ab"),
        st.floats(0, 20, allow_nan=False),  # seconds after the previous record
        st.sampled_from([0.0, 40.0, 90.0]),  # late: stamped this long before the newest
        st.integers(1, 6),
        st.lists(st.integers(0, 6), min_size=1, max_size=5),
        # 0: read the window after this record; others pile up unread, as between two
        # evaluations of a live sidecar
        st.integers(0, 7),
    ),
    max_size=60,
)


@settings(max_examples=examples(200), deadline=None)
@given(records)
def test_running_totals_equal_the_window_summed_afresh(rows: list) -> None:  # type: ignore[type-arg]
    """The window's total (settled buckets plus the newest, summed when read; reads come
    after some records only) is the sum of the records whose
    bucket is inside the window, late ones included, and `max_drafted` is theirs;
    since-start is the sum of every record, however late."""
    length, bucket = 60.0, 10.0
    window: SlidingWindow[str] = SlidingWindow(length, bucket, max_position=3)
    kept: list[tuple[str, int, Counts]] = []
    every: list[tuple[str, Counts]] = []
    newest: dict[str, int] = {}
    now = 0.0
    for key, step, late, drafted, accepted, unread in rows:
        now += step
        ts = max(0.0, now - late)  # 90 s: older than the window, counted since start only
        counts = _request(drafted, accepted)
        index = int(ts // bucket)
        top = newest.get(key, index)
        if index > top - 6:  # inside the window of its key's newest bucket: counted
            kept.append((key, index, counts))
        newest[key] = max(top, index)
        every.append((key, counts))
        window.add(key, ts, counts)
        if unread:
            continue
        got = window.current(now)
        for name in got:
            first = max(int(now // bucket), newest[name]) - 6 + 1
            expected = Counts.total((c for k, i, c in kept if k == name and i >= first), 3)
            assert expected == got[name]
            assert expected.max_drafted == got[name].max_drafted
            since_start = Counts.total((c for k, c in every if k == name), 3)
            assert since_start == window.since_start(name)
            assert since_start.max_drafted == window.since_start(name).max_drafted


def test_the_version_moves_when_the_total_does() -> None:
    window: SlidingWindow[str] = SlidingWindow(length=60, bucket=10, max_position=4)
    window.add("s", 0.0, one_step(4))
    first = window.version("s")
    window.current(30.0)
    assert first == window.version("s")  # nothing left, nothing came
    window.add("s", 31.0, one_step(1))
    second = window.version("s")
    assert second != first
    window.current(65.0)  # the bucket [0, 10) leaves
    assert window.version("s") != second
    assert 4 == Counts.total([one_step(4)], 4).max_drafted
    assert 4 == window.current(65.0)["s"].max_drafted  # the K of what is left


# (drafted, accepted) per step, accepted <= drafted; drafted 0 is a step that drafted nothing
steps = st.lists(
    st.integers(0, 9).flatmap(lambda d: st.tuples(st.just(d), st.integers(0, d))), max_size=30
)


@settings(max_examples=examples(300), deadline=None)
@given(steps, st.booleans())
def test_add_steps_counts_every_step_as_defined(pairs: list[tuple[int, int]], one_k: bool) -> None:
    """The C-loop counting equals the definition step by step: trials add a rejected step's
    one extra trial, by_position[i] counts steps accepting more than i and
    drafted_by_position[i] steps drafting more than i (capped at 4); a step that drafted
    nothing is a step with no trial, in steps_by_drafted[0]."""
    drafted = [9] * len(pairs) if one_k else [d for d, _ in pairs]
    accepted = [a for _, a in pairs]
    counts = Counts(4)
    counts.add_steps(drafted, accepted)
    spec = [(d, a) for d, a in zip(drafted, accepted, strict=True) if d]
    assert counts.steps == len(pairs)
    assert counts.drafted == sum(drafted)
    assert counts.accepted == sum(accepted)
    assert counts.trials == sum(a + (1 if a < d else 0) for d, a in spec)
    assert counts.by_position == [sum(1 for _, a in spec if a > i) for i in range(4)]
    assert counts.drafted_by_position == [sum(1 for d, _ in spec if d > i) for i in range(4)]
    assert counts.steps_by_drafted == [sum(1 for d in drafted if min(d, 4) == j) for j in range(5)]
    assert counts.accepted_by_drafted == [
        sum(a for d, a in spec if min(d, 4) == j) for j in range(5)
    ]
    assert counts.max_drafted == max(drafted, default=0)


def test_a_step_cannot_accept_more_than_it_drafted() -> None:
    for drafted, accepted in (([3, 3], [1, 4]), ([2, 3], [3, 1]), ([0], [1])):
        with pytest.raises(ValueError, match="accepted"):
            Counts(4).add_steps(drafted, accepted)


def test_per_position_acceptance_counts_only_steps_that_drafted_that_far() -> None:
    """Variable K: half the steps draft 2, half 4, every drafted token accepted. Each position
    is accepted every time it was drafted (1.0), where steps as the denominator would say
    positions 3 and 4 are accepted half the time."""
    counts = Counts(4)
    counts.add_steps([2, 4] * 10, [2, 4] * 10)
    assert counts.drafted_by_position == [20, 20, 10, 10]
    stats = SliceStats.of(counts.as_request(), 0.95)
    assert stats.per_position == (1.0, 1.0, 1.0, 1.0)
    assert [(2, 10, 20), (4, 10, 40)] == counts.by_drafted_length()


@settings(max_examples=examples(100), deadline=None)
@given(steps, steps)
def test_a_copy_is_equal_and_independent(
    first: list[tuple[int, int]], more: list[tuple[int, int]]
) -> None:
    """copy() takes every field (equal, moments included) and shares no list or dict: adding
    to the copy, steps in place or a merge, leaves the original as it was."""
    original = Counts(4)
    original.add_steps([d for d, _ in first], [a for _, a in first])
    original.as_request()
    before = repr(original), original.moments(), original.by_drafted_length()
    copy = original.copy()
    assert copy == original
    assert copy.max_drafted == original.max_drafted
    copy.add_steps([d for d, _ in more], [a for _, a in more])  # in place
    copy.merge(original)
    assert before == (repr(original), original.moments(), original.by_drafted_length())


@settings(max_examples=examples(300), deadline=None)
@given(steps, st.booleans(), st.integers(1, 6))
def test_one_request_built_at_once_equals_its_steps_added(
    pairs: list[tuple[int, int]], one_k: bool, cap: int
) -> None:
    """of_request's one-K path (every field set at once) gives the Counts that adding the
    steps to an empty one and marking it a request gives; variable K takes that path."""
    drafted = (
        [max((d for d, _ in pairs), default=1) or 1] * len(pairs)
        if one_k
        else [d for d, _ in pairs]
    )
    accepted = [min(a, d) for (_, a), d in zip(pairs, drafted, strict=True)]
    general = Counts(cap)
    general.add_steps(drafted, accepted)
    general.as_request()
    built = Counts.of_request(drafted, accepted, cap)
    assert built == general
    assert (built.max_drafted, built.requests) == (general.max_drafted, general.requests)
