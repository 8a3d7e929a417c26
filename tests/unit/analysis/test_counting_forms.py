"""Counts in the forms other parts hand to the analysis (analysis/counting/): the histogram of
steps fleet analysis sums in SQL read as the sidecar counts the steps themselves, counts of
two draft lengths merged and taken back, and the requests' dispersion by hand."""

from __future__ import annotations

import math

import pytest
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import dispersion

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
    with pytest.raises(ValueError, match="accepted more tokens than it drafted"):
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
