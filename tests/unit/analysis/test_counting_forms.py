"""Counts in the forms other parts hand to the analysis (analysis/counting/): the histogram of
steps fleet analysis sums in SQL read as the sidecar counts the steps themselves, counts of
two draft lengths merged and taken back, and the requests' dispersion by hand."""

from __future__ import annotations

import math

import pytest
from specwatch import conventions as C
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.slicing import (
    CtxBuckets,
    request_key,
    slice_key,
    split_steps,
    totals_parts,
)
from specwatch.analysis.counting.stats import (
    Interval,
    SliceStats,
    difference_interval,
    dispersion,
    ratio_interval,
    t_table_df,
)
from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.counting.windows import SlidingWindow, WindowedRatio
from specwatch.core.records import RequestKey, SliceKey, SpecDecodeBlock, SpecTotals
from specwatch.settings import load_settings

DRAFTED = (3, 3, 3, 2, 2)
ACCEPTED = (3, 0, 1, 2, 1)


def fields(c: Counts) -> tuple[object, ...]:
    return (
        c.requests, c.steps, c.drafted, c.accepted, c.trials, c.max_drafted, c.by_position,
        c.steps_by_drafted, c.accepted_by_drafted, c.drafted_by_position,
        (c.aa, c.at, c.tt, c.ad, c.dd, c.as_, c.ss),
    )  # fmt: skip


def test_a_histogram_of_steps_is_counted_as_the_steps_themselves() -> None:
    """(drafted, accepted, how many) triples and the request's moments give the counts of the
    same steps one by one; a step accepting more than it drafted is refused."""
    steps = Counts.of_request(DRAFTED, ACCEPTED, 4)
    histogram = [(3, 3, 1), (3, 0, 1), (3, 1, 1), (2, 2, 1), (2, 1, 1)]
    moments = (steps.aa, steps.at, steps.tt, steps.ad, steps.dd, steps.as_, steps.ss)
    found = Counts.of_histogram(histogram, 1, moments, 4)
    assert fields(steps) == fields(found)
    # K capped at the positions kept: a K 6 step counts at the last position
    capped = Counts.of_histogram([(6, 5, 2)], 1, (0,) * 7, 4)
    assert ([2, 2, 2, 2], 6, 12) == (capped.by_position, capped.max_drafted, capped.trials)
    assert 2 == capped.steps_by_drafted[4]
    with pytest.raises(ValueError, match=r"^a step accepted more tokens than it drafted$"):
        Counts.of_histogram([(2, 3, 1)], 1, (0,) * 7, 4)


def test_counts_kept_at_other_positions_merge_and_subtract_element_by_element() -> None:
    """A sidecar keeping 6 positions merges counts of one keeping 4: the first 4 add up, the
    last 2 stay; taken back, the counts are what they were."""
    wide = Counts.of_request((6,) * 2, (6, 5), 6)
    before = list(wide.by_position)
    narrow = Counts.of_request(DRAFTED, ACCEPTED, 4)
    wide.merge(narrow)
    assert wide.by_position == [
        b + n for b, n in zip(before, [*narrow.by_position, 0, 0], strict=True)
    ]
    wide.subtract(narrow)
    assert before == wide.by_position


def test_the_dispersion_of_requests_by_hand() -> None:
    """Requests (accepted, trials): (2, 10), (8, 10), (5, 10) and one without trials (left
    out). alpha = 15 / 30; Pearson = sum (a - p t)^2 / (t p (1 - p)) / (n - 1) = 18 / 2.5 / 2;
    between = sqrt((18 - 0.25 x 30) / 300)."""
    found = dispersion([(2, 10), (8, 10), (5, 10), (0, 0)])
    assert found is not None
    assert (3, 0.5) == (found.requests, found.alpha)
    assert found.pearson == pytest.approx(18 / 2.5 / 2)
    assert found.between_sd == pytest.approx(math.sqrt((18 - 7.5) / 300))
    alike = dispersion([(5, 10), (5, 10)])
    assert alike is not None
    assert 0.0 == alike.between_sd  # less spread than binomial draws: none between
    assert dispersion([(5, 10)]) is None  # one request
    assert dispersion([(0, 10), (0, 10)]) is None  # nothing accepted
    assert dispersion([(10, 10), (10, 10)]) is None  # everything accepted


def test_steps_of_mixed_lengths_and_nothing_drafted_by_hand() -> None:
    """Steps drafting 0, 3, 0, 2: the two that drafted nothing put out one token each, no
    trial; refused where the lengths differ or a step accepted what it did not draft."""
    found = Counts(4)
    found.add_steps((4,), (1,))  # one step first: what follows adds to it
    found.add_steps((0, 3, 0, 2), (0, 1, 0, 2))
    assert (5, 9, 4, 2 + 2 + 2) == (found.steps, found.drafted, found.accepted, found.trials)
    assert [3, 1, 0, 0] == found.by_position
    assert [2, 0, 1, 1, 1] == found.steps_by_drafted
    with pytest.raises(ValueError, match=r"^per-step drafted and accepted differ in length$"):
        found.add_steps((3, 3), (1,))
    with pytest.raises(ValueError, match=r"^a step accepted tokens it did not draft$"):
        found.add_steps((0, 2), (1, 0))


def test_a_request_known_by_its_totals_is_one_request_without_trials() -> None:
    found = Counts.of_totals(12, 9, 4, 4)
    assert (1, 12, 9, 4, 0) == (found.requests, found.drafted, found.accepted, found.steps, 0)
    assert 0 == found.trials
    assert (81, 108, 144, 36, 16) == (found.aa, found.ad, found.dd, found.as_, found.ss)


def test_counts_are_equal_only_when_every_part_is() -> None:
    """Each of the figures, the per-position counts, the per-length steps and accepted tokens,
    and the second moments tells two counts apart on its own."""
    base = Counts.of_request((3, 3), (2, 1), 4)
    assert base == Counts.of_request((3, 3), (2, 1), 4)
    figures = Counts.of_request((3, 3), (2, 1), 4)
    figures.requests = 2
    positions = Counts.of_request((3, 3), (2, 1), 4)
    positions.by_position = [2, 1, 0, 1]
    lengths = Counts.of_request((3, 3), (2, 1), 4)
    lengths.add_drafted_length(2, 1, 0)
    accepted = Counts.of_request((3, 3), (2, 1), 4)
    accepted.add_drafted_length(3, 0, 1)
    moments = Counts.of_request((3, 3), (2, 1), 4)
    moments.aa += 1
    for other in (figures, positions, lengths, accepted, moments):
        assert base != other


def test_newcombes_difference_and_the_t_tables_depth_by_hand() -> None:
    """a - b with a = 0.5 [0.4, 0.7], b = 0.3 [0.25, 0.4]: below sqrt(0.1^2 + 0.1^2), above
    sqrt(0.2^2 + 0.05^2). The exact t table: 20 degrees of freedom up to 99.9%, 60 past it."""
    found = difference_interval(Interval(0.5, 0.4, 0.7), Interval(0.3, 0.25, 0.4))
    assert found.estimate == pytest.approx(0.2)
    assert found.lower == pytest.approx(0.2 - math.sqrt(0.01 + 0.01))
    assert found.upper == pytest.approx(0.2 + math.sqrt(0.04 + 0.0025))
    assert (20, 20, 60) == (t_table_df(0.95), t_table_df(0.999), t_table_df(0.9995))


def test_a_request_known_by_its_totals_is_in_the_bucket_of_its_first_step() -> None:
    """Its first step is at the prompt's length + 1: a prompt of 510 tokens starts in 0-512,
    one of 511 at 512, in 512-2k."""
    buckets = CtxBuckets(load_settings().ctx_buckets)
    totals = SpecTotals(drafted=12, accepted=9, steps=4)
    for prompt, label in ((510, "0-512"), (511, "512-2k")):
        parts = totals_parts("m", "chat", prompt, totals, buckets, 4)
        assert [label, C.ALL] == [key.ctx_bucket for key in parts]
    assert buckets.reaches("32k+", 10**9)  # the last bucket holds every position past it
    assert buckets.reaches("0-512", 511)
    assert not buckets.reaches("0-512", 512)
    assert not buckets.reaches("no such bucket", 0)


def test_sums_are_negative_where_any_part_is() -> None:
    """A late record subtracted past what a window held: any part below 0 says so."""
    assert not Sums(0, 0, 0, 0, 0, 0).negative()
    for i in range(6):
        parts = [1, 1, 1, 1, 1, 1]
        parts[i] = -1
        assert Sums(*parts).negative(), i


def test_a_windowed_ratio_sums_its_last_buckets_and_reads_again_after_a_change() -> None:
    """60 s in buckets of 10: at t = 65 the window holds buckets 1..6 (10 s to 69 s); a value
    at 10 is in, one at 9.9 is not; read twice, the same; a value added, read afresh."""
    window = WindowedRatio(60.0, 10.0)
    for ts, x in ((9.9, 1.0), (10.0, 2.0), (40.0, 4.0), (65.0, 8.0)):
        window.add(ts, x, 1.0)
    first = window.total(65.0)
    assert (3, 14.0) == (first.requests, first.x)
    assert window.total(65.0) == first
    window.add(66.0, 16.0, 1.0)
    assert (4, 30.0) == (window.total(66.0).requests, window.total(66.0).x)
    assert 28.0 == window.total(79.0).x  # bucket 1 (10 s) gone at 70 s
    assert 0 == window.total(500.0).requests
    short = WindowedRatio(5.0, 10.0)  # shorter than a bucket: the current bucket alone
    short.add(5.0, 1.0, 1.0)
    short.add(15.0, 2.0, 1.0)
    assert 2.0 == short.total(15.0).x


def test_the_sums_one_window_holds_beyond_another_part_by_part() -> None:
    longer, shorter = Sums(5, 50.0, 100.0, 600.0, 1100.0, 2100.0), Sums(2, 20, 40, 210, 410, 820)
    assert Sums(3, 30.0, 60.0, 390.0, 690.0, 1280.0) == longer.minus(shorter)


def test_the_windows_largest_k_after_the_bucket_that_held_it_left() -> None:
    """Buckets of 10 s, a window of 3: K 4 at 0 s, K 2 at 10 s, K 3 at 20 s, K 0 (nothing
    drafted) at 30 s and 40 s. Bucket 0 leaves at 30 s: the largest K of what is left is 3,
    the last settled bucket's; at 50 s only the buckets of nothing drafted are left: K 0."""
    window: SlidingWindow[str] = SlidingWindow(30.0, 10.0, 4)
    for ts, k in ((0.0, 4), (10.0, 2), (20.0, 3)):
        window.add("s", ts, Counts.of_request((k,), (1,), 4))
    window.add("s", 30.0, Counts.of_request((0,), (0,), 4))
    assert 3 == window.current(30.0)["s"].max_drafted
    window.add("s", 40.0, Counts.of_request((0,), (0,), 4))
    window.add("s", 50.0, Counts.of_request((0,), (0,), 4))
    assert 0 == window.current(50.0)["s"].max_drafted


def test_ratio_intervals_and_per_position_rates_at_their_edges() -> None:
    """x / y from one unit on; without per-request moments a point; a shift only when asked.
    A position no step drafted has rate 0, not 1."""
    point = ratio_interval(1, 0.5, 1.0, 0.0, 0.0, 0.0, 0.95)
    assert point is not None
    assert (0.5, 0.5, 0.5) == (point.estimate, point.lower, point.upper)
    assert ratio_interval(1, 0.5, 0.0, 0.0, 0.0, 0.0, 0.95) is None
    shifted = ratio_interval(1, 0.5, 1.0, 0.0, 0.0, 0.0, 0.95, shift=1.0)
    assert shifted is not None
    assert 1.5 == shifted.estimate
    counts = Counts.of_request((2, 4), (2, 1), 4)  # one step drafted 4: positions 3, 4 once
    found = SliceStats.of(counts, 0.95).per_position
    assert (1.0, 0.5, 0.0, 0.0) == found


def test_steps_are_split_at_their_own_positions_and_buckets_named_in_k() -> None:
    """A prompt of 508: the first step at 509 accepts 1, the next at 511 is still in 0-512;
    edges of 1024 and 2048 are named 1k and 2k."""
    buckets = CtxBuckets(load_settings().ctx_buckets)
    parts = split_steps(SpecDecodeBlock(3, (3, 3, 3), (1, 0, 2)), 508, buckets, 4)
    assert {"0-512": 2, "512-2k": 1} == {label: c.steps for label, c in parts.items()}
    assert ("0-1k", "1k-2k", "2k+") == CtxBuckets((1024, 2048)).labels


def test_a_key_never_seen_is_made_and_then_the_same_object_each_time() -> None:
    """Fresh names (the process may have made every other key already): the key, then that
    very key again."""
    model = f"fresh-{id(object())}"
    first = slice_key(model, "0-512", "chat")
    assert SliceKey(model, "0-512", "chat") == first
    assert first is slice_key(model, "0-512", "chat")
    request = request_key(model, "0-512", "chat", "spec")
    assert RequestKey(model, "0-512", "chat", "spec") == request
    assert request is request_key(model, "0-512", "chat", "spec")
