"""The hand-written bisects (core/search.py) hold to `bisect`, on any sorted bounds."""

from __future__ import annotations

import bisect

from hypothesis import given
from hypothesis import strategies as st
from specwatch.core.search import first_above, first_at_least

BOUNDS = st.lists(st.integers(-50, 5000), max_size=12).map(lambda b: tuple(sorted(b)))
VALUES = st.integers(-100, 6000)


@given(BOUNDS, VALUES)
def test_first_above_is_bisect_right(bounds: tuple[int, ...], value: int) -> None:
    assert bisect.bisect_right(bounds, value) == first_above(bounds, value)


@given(BOUNDS, VALUES)
def test_first_at_least_is_bisect_left(bounds: tuple[int, ...], value: int) -> None:
    assert bisect.bisect_left(bounds, value) == first_at_least(bounds, value)


@given(BOUNDS)
def test_every_bound_itself_and_its_neighbours(bounds: tuple[int, ...]) -> None:
    """On and beside each bound, where an off-by-one would land."""
    for value in {v for b in bounds for v in (b - 1, b, b + 1)}:
        assert bisect.bisect_right(bounds, value) == first_above(bounds, value)
        assert bisect.bisect_left(bounds, value) == first_at_least(bounds, value)
