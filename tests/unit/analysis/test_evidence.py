"""The long evidence windows: every total equals the sum of the records its window holds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.verdicts.evidence_windows import EvidenceWindows

from tests.support import examples

K = 4


def request(accepted: list[int]) -> Counts:
    return Counts.of_request([K] * len(accepted), accepted, K)


def expected(
    records: list[tuple[float, Counts]], now: float, length: float, bucket: float
) -> tuple[Sums, Sums]:
    """What a window ending at `now` holds: whole buckets, the newest the one of `now`."""
    oldest = int(now // bucket) - round(length / bucket) + 1
    total = Counts(K)
    for ts, counts in records:
        if oldest <= int(ts // bucket) <= int(now // bucket):
            total.merge(counts)
    return Sums.of(total, "alpha"), Sums.of(total, "rate")


events = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.floats(0, 600),
            st.lists(st.integers(0, K), min_size=1, max_size=5),
        ),
        st.tuples(st.just("read"), st.floats(0, 30), st.just([])),
    ),
    max_size=60,
)


@settings(max_examples=examples(300), deadline=None)
@given(events)
def test_every_window_total_is_the_sum_of_the_records_it_holds(
    script: list[tuple[str, float, list[int]]],
) -> None:
    """Records arrive in any order around a clock that only moves forward when read; each
    read gives exactly the sums of the records whose bucket lies in each window (late ones
    included while the longest window holds their bucket)."""
    windows: EvidenceWindows[str] = EvidenceWindows((60.0, 180.0), bucket=10.0)
    records: list[tuple[float, Counts]] = []  # those the windows keep
    now, edge = 0.0, float("-inf")  # the longest window's oldest bucket at the last read
    for kind, value, accepted in script:
        if kind == "add":
            ts = max(0.0, now - 200.0) + value  # late, or up to ~400 s ahead
            counts = request(accepted)
            windows.add("k", ts, counts)
            if int(ts // 10.0) >= edge:  # older than the longest window already: dropped
                records.append((ts, counts))
            continue
        now = max([now + value, *(ts for ts, _ in records)])  # reads never go back
        edge = int(now // 10.0) - 18 + 1
        if not records:
            continue
        for metric, pick in (("alpha", 0), ("rate", 1)):
            got = dict(windows.read("k", now, metric))
            for length in (60.0, 180.0):
                assert expected(records, now, length, 10.0)[pick] == got[length]


def test_a_record_older_than_the_longest_window_is_dropped_and_reads_move_the_version() -> None:
    windows: EvidenceWindows[str] = EvidenceWindows((60.0, 120.0), bucket=10.0)
    windows.add("k", 100.0, request([3, 1]))
    assert 2 == sum(1 for _, sums in windows.read("k", 105.0, "alpha") if sums.requests == 1)
    before = windows.version("k", 105.0)
    assert before == windows.version("k", 150.0)  # nothing left any window: same totals
    assert before != windows.version("k", 170.0)  # the 60 s window let the record go
    windows.add("k", 20.0, request([3]))  # before the 120 s window began: kept nowhere
    assert [0, 1] == [sums.requests for _, sums in windows.read("k", 170.0, "alpha")]
    assert [] == windows.read("other", 170.0, "alpha")
    assert -1 == windows.version("other", 170.0)


def test_the_kept_widenings_and_t_quantiles_stay_bounded_and_equal_to_computing_afresh() -> None:
    """Kept per argument, as a pod whose request counts wander asks them: never more than the
    bound, and each what computing it afresh gives."""
    from specwatch.analysis.counting import stats
    from specwatch.analysis.verdicts import evidence

    for requests in range(2, 2 * evidence._WIDENINGS_KEPT):
        kept = evidence._widening(requests, 8.0)
        assert len(evidence._WIDENINGS) <= evidence._WIDENINGS_KEPT
        df = float(requests - 1)
        assert stats.t_quantile(0.95, df) == stats._t_quantile(0.95, df)
        assert len(stats._T_QUANTILES) <= stats._T_QUANTILES_KEPT
        if requests % 509 == 0:
            fresh = stats._t_quantile(stats.tail_confidence(8.0), requests - 1) ** 2 / 16.0
            assert kept == fresh
