from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
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
    assert len(window._rings["s"].buckets) <= 6
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


def _request(drafted: int, accepted: list[int]) -> Counts:
    counts = Counts(3)
    counts.add_steps([drafted] * len(accepted), [min(a, drafted) for a in accepted])
    return counts.as_request()


records = st.lists(
    st.tuples(
        st.sampled_from("ab"),
        st.floats(0, 20, allow_nan=False),  # seconds after the previous record
        st.booleans(),  # late: stamped up to 40 s before the newest
        st.integers(1, 6),
        st.lists(st.integers(0, 6), min_size=1, max_size=5),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(records)
def test_running_totals_equal_the_window_summed_afresh(rows: list) -> None:  # type: ignore[type-arg]
    """The running total (add on arrival, subtract on leaving) is the sum of the records whose
    bucket is inside the window, late ones included, and `max_drafted` is theirs."""
    length, bucket = 60.0, 10.0
    window: SlidingWindow[str] = SlidingWindow(length, bucket, max_position=3)
    kept: list[tuple[str, int, Counts]] = []
    newest: dict[str, int] = {}
    now = 0.0
    for key, step, late, drafted, accepted in rows:
        now += step
        ts = max(0.0, now - 40.0) if late else now
        counts = _request(drafted, accepted)
        index = int(ts // bucket)
        top = newest.get(key, index)
        if index > top - 6:  # inside the window of its key's newest bucket: counted
            kept.append((key, index, counts))
        newest[key] = max(top, index)
        window.add(key, ts, counts)
        got = window.current(now)
        for name in got:
            first = max(int(now // bucket), newest[name]) - 6 + 1
            expected = Counts.total((c for k, i, c in kept if k == name and i >= first), 3)
            assert expected == got[name]
            assert expected.max_drafted == got[name].max_drafted


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


steps = st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=30)


@settings(max_examples=300, deadline=None)
@given(steps, st.booleans())
def test_add_steps_counts_every_step_as_defined(pairs: list[tuple[int, int]], one_k: bool) -> None:
    """The C-loop counting equals the definition step by step: trials add a rejected step's
    one extra trial, by_position[i] counts steps accepting more than i (capped at 4)."""
    drafted = [7] * len(pairs) if one_k else [d for d, _ in pairs]
    accepted = [a for _, a in pairs]
    counts = Counts(4)
    counts.add_steps(drafted, accepted)
    assert counts.steps == len(pairs)
    assert counts.drafted == sum(drafted)
    assert counts.accepted == sum(accepted)
    assert counts.trials == sum(
        a + (1 if a < d else 0) for d, a in zip(drafted, accepted, strict=True)
    )
    assert counts.by_position == [sum(1 for a in accepted if a > i) for i in range(4)]
    assert counts.max_drafted == max(drafted, default=0)
