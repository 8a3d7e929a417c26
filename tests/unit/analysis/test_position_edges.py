"""position_cliff and later_positions_collapse (analysis/causes/positions.py) at their edges:
exactly 200 steps trying a position and the one before, the first position as the one that
must hold, and a collapse read from exactly 200 steps."""

from __future__ import annotations

import pytest
from specwatch.analysis.causes.positions import later_collapse, position_cliff
from specwatch.analysis.counting.counts import Counts


def steps(*groups: tuple[int, int]) -> Counts:
    """K = 2 steps: `n` of them accepting `a`, for each (n, a)."""
    accepted = tuple(a for n, a in groups for _ in range(n))
    return Counts.of_request((2,) * len(accepted), accepted, 4)


def test_a_cliff_where_exactly_200_steps_try_it_and_the_position_before() -> None:
    """200 steps, all accept position 1, none position 2: a cliff at 2."""
    assert 2 == position_cliff(steps((200, 1)))
    assert position_cliff(steps((199, 1))) is None


def test_a_first_position_at_1_percent_is_no_cliff_though_every_later_one_accepts() -> None:
    """The position before a cliff must hold: position 1 accepts 200 of 20,000 (1%), position
    2 all 200 that reach it. No position is before the first: no cliff there."""
    assert position_cliff(steps((19800, 0), (200, 2))) is None


def test_a_collapse_read_from_exactly_200_steps_at_each_position() -> None:
    """200 steps all accepting position 1; position 2 accepts 20 of its 200 (10%): collapse."""
    found = later_collapse(steps((180, 1), (20, 2)))
    assert found == {"first": 1.0, "later": pytest.approx(0.1), "positions": 2}
    assert later_collapse(steps((179, 1), (20, 2))) is None  # 199 steps
