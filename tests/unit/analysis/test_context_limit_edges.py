"""draft_context_limit's rule (analysis/causes/positions.py, ContextPositions.cliff) on bins
set by hand, each gate exactly at its edge and one past it: at least 200 tokens drafted before
the cut and after it, 3 requests reaching past it, acceptance at least 10% before and at most
1% after, and the first bin after the cut (almost) accepting nothing too."""

from __future__ import annotations

import pytest
from specwatch.analysis.causes.positions import (
    DEPTH_BIN,
    DEPTH_BINS,
    DEPTH_POSITIONS,
    POSITION_BIN,
    POSITION_BINS,
    CliffContexts,
    ContextPositions,
)
from specwatch.core.records import SpecDecodeBlock

Bins = dict[int, tuple[int, int]]  # bin -> (drafted, accepted)


def positions(bins: Bins, reach: dict[int, int]) -> ContextPositions:
    out = ContextPositions()
    for i, (drafted, accepted) in bins.items():
        out.drafted[i], out.accepted[i] = drafted, accepted
    for i, requests in reach.items():
        out.reach[i] = requests
    out.version = 1
    return out


AT_EDGES = {0: (200, 20), 1: (200, 2)}  # 10% before, 1% after, 200 drafted each side


@pytest.mark.parametrize(
    ("bins", "reach", "cliff"),
    [
        (AT_EDGES, {1: 3}, 1),  # every gate at its edge: the cliff at bin 1
        ({0: (200, 19), 1: (200, 2)}, {1: 3}, None),  # 9.5% before
        ({0: (199, 20), 1: (200, 2)}, {1: 3}, None),  # 199 drafted before
        ({0: (200, 20), 1: (199, 0)}, {1: 3}, None),  # 199 drafted after
        ({0: (200, 20), 1: (200, 3)}, {1: 3}, None),  # 1.5% after
        (AT_EDGES, {0: 1, 1: 2}, None),  # 2 requests reach past the cut
        # the bin right after the cut accepts 2 of 100 (2%): the fall is one bin later
        ({0: (200, 40), 1: (100, 2), 2: (300, 0)}, {2: 3}, 2),
    ],
)
def test_the_context_limit_at_each_gate(
    bins: Bins, reach: dict[int, int], cliff: int | None
) -> None:
    found = positions(bins, reach).cliff()
    assert (None if cliff is None else cliff * POSITION_BIN) == found


def test_the_steps_go_to_the_bins_of_their_positions_and_the_request_to_its_last() -> None:
    """A prompt of 62 tokens: steps at 63 (bin 0), then 63 + 3 = 66 (bin 1), 66 + 1 = 67;
    the request's last position 67 + 2 = 69, in bin 1."""
    found = ContextPositions()
    found.add(62, SpecDecodeBlock(3, (3, 3, 3), (2, 0, 1)))
    assert (found.drafted[:3], found.accepted[:3], found.reach[:3]) == (
        [3, 6, 0],
        [2, 1, 0],
        [0, 1, 0],
    )
    assert 1 == found.version


def test_the_rule_is_read_again_whenever_the_counts_changed() -> None:
    """Read at one version, the cliff is kept until the next request: then read afresh (here
    the later bin accepts again: no cliff), whatever number the version has reached."""
    found = positions(AT_EDGES, {1: 3})
    assert 64 == found.cliff()
    found.accepted[1] = 100
    found.version = 64  # as many requests as the cliff's position
    assert found.cliff() is None


def test_the_last_bin_never_stands_before_the_first_cut() -> None:
    """Positions past 64k accept 20% (the last bin), the first bin nothing: the first bin is
    not a cliff after the last one (bins are read in order, from the first cut on)."""
    last = POSITION_BINS - 1
    found = positions({0: (300, 0), last: (300, 60)}, {0: 3, last: 3})
    assert found.cliff() is None


Cells = dict[tuple[int, int], tuple[int, int]]  # (position index, context bin) -> tried, accepted


def from_context(cells: Cells) -> tuple[int, int] | None:
    """CliffContexts' rule for draft position 2 (index 1) on counts set by hand."""
    depths = CliffContexts()
    depths.tried = [[0] * DEPTH_BINS for _ in range(DEPTH_POSITIONS)]
    depths.accepted = [[0] * DEPTH_BINS for _ in range(DEPTH_POSITIONS)]
    for (j, c), (tried, accepted) in cells.items():
        depths.tried[j][c], depths.accepted[j][c] = tried, accepted
    return depths._from(1)


# position 2 before bin 1: 200 tried, 10% accepted; from bin 1 on: 200 tried, 1%; position 1
# (which must hold) from bin 1 on: 200 tried, 10%
AT_THE_EDGES: Cells = {(1, 0): (200, 20), (1, 1): (200, 2), (0, 1): (200, 20)}


@pytest.mark.parametrize(
    ("change", "found"),
    [
        ({}, (2, DEPTH_BIN)),
        ({(1, 0): (199, 20)}, None),  # 199 tried before
        ({(1, 0): (200, 19)}, None),  # 9.5% before
        ({(1, 1): (200, 3)}, None),  # 1.5% after
        ({(1, 1): (199, 1)}, None),  # 199 tried after
        ({(0, 1): (199, 20)}, None),  # position 1 tried 199 times after
        ({(0, 1): (200, 19)}, None),  # position 1 holds 9.5% after
        # spread over two later bins, the sums after the cut count
        ({(1, 1): (100, 1), (1, 2): (100, 1), (0, 1): (100, 10), (0, 2): (100, 10)},
         (2, DEPTH_BIN)),
    ],
)  # fmt: skip
def test_a_cliff_from_a_context_at_each_gate(change: Cells, found: tuple[int, int] | None) -> None:
    assert found == from_context({**AT_THE_EDGES, **change})
