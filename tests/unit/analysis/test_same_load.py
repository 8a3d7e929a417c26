"""Cells brought to the same load (analysis/compare/same_load.py), each formula by hand from
the requests it sums: the pooled spread, a cell's log variance, the load's slope with its
variance and degrees of freedom; and which cells count as timed, at their edges."""

from __future__ import annotations

import math

import pytest
from specwatch.analysis.compare.same_load import (
    load_slopes,
    log_variance,
    mean_load,
    own_spread,
    spreads,
    timed,
)
from specwatch.analysis.counting.sums import DecodeSums, Sums

Request = tuple[float, float, float]  # decode seconds, tokens, load


def cell(*requests: Request) -> DecodeSums:
    out = DecodeSums()
    for x, y, load in requests:
        out.add_request(x, y, load, 1.0)
    return out


def deviation(requests: tuple[Request, ...]) -> float:
    """sum y_i^2 (t_i / T - 1)^2 over a cell's requests, T the cell's TPOT."""
    big_t = sum(x for x, _, _ in requests) / sum(y for _, y, _ in requests)
    return sum(y * y * ((x / y) / big_t - 1.0) ** 2 for x, y, _ in requests)


A = ((1.0, 10.0, 1.0), (3.0, 20.0, 2.0))  # two requests
B = ((1.0, 10.0, 1.0), (2.0, 10.0, 1.0), (6.0, 30.0, 3.0))  # three
ALONE = ((1.0, 10.0, 1.0),)  # one: says nothing of a spread


def test_a_slices_spread_pools_its_cells_of_two_requests_or_more_by_hand() -> None:
    side = {
        ("m", "s", "1-4"): cell(*A),
        ("m", "s", "5-8"): cell(*B),
        ("m", "s", "9-16"): cell(*ALONE),
        ("m", "t", "1-4"): cell(*A),
    }
    found = spreads(side)
    yy = sum(y * y for _, y, _ in (*A, *B))
    assert found["m", "s"].deviation == pytest.approx((deviation(A) + deviation(B)) / yy)
    assert found["m", "s"].df == 3.0  # (2 - 1) + (3 - 1)
    yy_a = sum(y * y for _, y, _ in A)
    assert found["m", "t"].deviation == pytest.approx(deviation(A) / yy_a)
    assert found["m", "t"].df == 1.0
    assert set(found) == {("m", "s"), ("m", "t")}


def test_a_cells_own_spread_and_log_variance_with_two_requests_by_hand() -> None:
    s = cell(*A)
    own = own_spread(s)
    yy = sum(y * y for _, y, _ in A)
    assert own.deviation == pytest.approx(deviation(A) / yy)
    assert own.df == 1.0
    # n / (n - 1) x spread x sum y^2 / (sum y)^2, n = 2
    assert log_variance(s, own) == pytest.approx(2.0 * own.deviation * yy / 30.0**2)


def test_timed_at_its_edges() -> None:
    assert timed(Sums(2, 0.5, 1.0), 0)  # two requests, half a second, one token
    assert not timed(Sums(1, 0.5, 1.0), 0)
    assert timed(Sums(3, 0.5, 1.0), 3)
    assert not timed(Sums(2, 0.5, 1.0), 3)
    assert not timed(Sums(2, 0.0, 1.0), 0)  # no time
    assert not timed(Sums(2, 0.5, 0.0), 0)  # no tokens
    # moments that overflow together are not timed, though each is finite
    assert not timed(Sums(2, 4e307, 4e307, 4e307, 4e307, 4e307), 0)


def test_the_mean_load_where_it_was_recorded() -> None:
    assert mean_load(cell((1.0, 2.0, 0.25), (1.0, 2.0, 0.0))) == pytest.approx(0.125)
    assert mean_load(cell((1.0, 0.5, 2.0))) == pytest.approx(2.0)
    assert mean_load(cell((1.0, 2.0, 0.0))) is None  # a zero load is none recorded
    assert mean_load(Sums(2, 1.0, 2.0)) is None
    unrecorded = DecodeSums()
    unrecorded.add_request(1.0, 0.0, 3.0, 1.0)  # a load, no token to weigh it by
    assert mean_load(unrecorded) is None


def test_the_load_slope_of_one_cell_of_two_requests_by_hand() -> None:
    """Two one-token requests at loads 1 and 2 taking 1 and 2 seconds: T = 1.5, B = 1.5;
    num = (sum x b - T sum y b) / T = (5 - 4.5) / 1.5; den = sum y b^2 - (sum y b)^2 / sum y
    = 5 - 4.5; variance e x sum y^2 (b - B)^2 / den^2, e = sum y^2 (t / T - 1)^2 / sum y^2;
    df = max(1, n - 2 groups) = 1. A side's cell without loads, before it, is passed over."""
    plain = Sums(2, 1.0, 2.0)
    two = cell((1.0, 1.0, 1.0), (2.0, 1.0, 2.0))
    (slope,) = load_slopes([{("m", "0", "1-4"): plain, ("m", "1", "1-4"): two}]).values()
    e = ((1.0 / 1.5 - 1.0) ** 2 + (2.0 / 1.5 - 1.0) ** 2) / 2.0
    assert slope.slope == pytest.approx((0.5 / 1.5) / 0.5)
    assert slope.variance == pytest.approx(e * 0.5 / 0.25)
    assert slope.df == 1.0
    assert math.isfinite(slope.variance)


def test_a_cell_without_recorded_loads_takes_no_part_in_the_slope() -> None:
    """Beside a cell of four requests with loads, one of three without (an older sidecar's):
    the slope and its degrees of freedom (4 - 2) are those of the first alone."""
    loaded = cell((1.0, 1.0, 1.0), (2.0, 1.0, 2.0), (1.5, 1.0, 1.0), (2.5, 1.0, 3.0))
    plain = DecodeSums()
    for x in (1.0, 1.2, 1.4):
        plain.add_request(x, 1.0, None, 1.0)
    alone = load_slopes([{("m", "0", "1-4"): loaded}])
    both = load_slopes([{("m", "0", "1-4"): loaded, ("m", "1", "1-4"): plain}])
    assert alone == both
    assert 2.0 == both["m", "1-4"].df
