"""k0_still_costs' plane (analysis/speed/k0_cost.py) against numpy: the weighted least squares
s = a + b x + d z and its sandwich covariance (requests the unit, n / (n - 3)) computed the
textbook way; what one request adds, by hand; the gates of the plane at their edges."""

from __future__ import annotations

import random
from collections import deque

import numpy as np
import pytest
from specwatch.analysis.speed.k0_cost import K0_MIN_REQUESTS, K0Cost, _inverse, _plane

Row = tuple[float, float, float, float, float]


def rows(seed: int, with_zero: int, without: int) -> deque[Row]:
    """Requests of 20-60 steps: step time 10 ms + 2 ms a drafted token + 15 ms at K = 0
    steps, with noise; K 2 to 5 (it varies: the plane is identified)."""
    rng = random.Random(seed)
    out: deque[Row] = deque()
    for i in range(with_zero + without):
        k = float(rng.randint(1, 5))
        z = rng.uniform(0.1, 0.5) if i < with_zero else 0.0
        x = k * (1.0 - z)
        s = 0.010 + 0.002 * x + 0.015 * z + rng.gauss(0, 0.001)
        out.append((s, x, z, float(rng.randint(20, 60)), k))
    return out


def test_the_plane_and_its_sandwich_covariance_are_numpys() -> None:
    """K from 1 to 5, and requests that drafted nothing at all (K 0: no part in the mean K)."""
    data = rows(3, 30, 30)
    for _ in range(5):
        data.append((0.025, 0.0, 1.0, 30.0, 0.0))
    found = _plane(data)
    assert found is not None
    a, b, d, cov, k, n = found
    s, x, z, w, ks = (np.array(column) for column in zip(*data, strict=True))
    design = np.column_stack([np.ones_like(x), x, z])
    bread = design.T @ (w[:, None] * design)
    beta = np.linalg.solve(bread, design.T @ (w * s))
    residual = s - design @ beta
    meat = (design * (w * residual)[:, None]).T @ (design * (w * residual)[:, None])
    inverse = np.linalg.inv(bread)
    sandwich = len(s) / (len(s) - 3.0) * inverse @ meat @ inverse
    assert [a, b, d] == pytest.approx(list(beta), rel=1e-9)
    assert np.allclose(np.array(cov), sandwich, rtol=1e-8, atol=0.0)
    drafting = ks > 0
    assert k == pytest.approx(float(np.sum(w[drafting] * ks[drafting]) / np.sum(w[drafting])))
    assert n == 65


def test_the_plane_needs_its_minimum_of_requests_with_k0_steps_and_without() -> None:
    assert _plane(rows(5, K0_MIN_REQUESTS, K0_MIN_REQUESTS)) is not None
    assert _plane(rows(5, K0_MIN_REQUESTS - 1, K0_MIN_REQUESTS + 40)) is None
    assert _plane(rows(5, K0_MIN_REQUESTS + 40, K0_MIN_REQUESTS - 1)) is None


def test_a_3x3_inverse_and_none_where_the_matrix_is_singular() -> None:
    m = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]]
    found = _inverse(m)
    assert found is not None
    assert np.allclose(np.array(found), np.linalg.inv(np.array(m)), rtol=1e-12)
    assert _inverse([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]) is None
    tiny = [[1e-5, 0.0, 0.0], [0.0, 1e-5, 0.0], [0.0, 0.0, 1e-5]]  # well conditioned, small
    assert _inverse(tiny) is not None
    assert _inverse([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, float("nan")]]) is None


def test_a_request_adds_its_step_time_drafted_share_of_k0_steps_weight_and_k() -> None:
    """0.3 s over 30 steps, 20 listed drafting 4, 3, 0, 0, ...: s = 0.01, x = 7 / 30,
    z = 18 / 30, weight 30, K = 7 / 2; one step, 1 ms: kept too. No steps, no time, an
    infinite time or nothing listed: nothing."""
    cost = K0Cost()
    drafted = (4, 3) + (0,) * 18
    cost.add("m", 0, 0.3, 30, drafted)
    cost.add("m", 0, 0.001, 1, (2,))
    cost.add("m", 0, 0.02, 2, (0, 0))  # nothing drafted: K 0
    for seconds, steps, listed in ((0.3, 0, drafted), (0.0, 30, drafted),
                                   (float("inf"), 30, drafted), (0.3, 30, ())):  # fmt: skip
        cost.add("m", 0, seconds, steps, listed)
    kept = list(cost._rows["m", 0])
    assert kept == [
        pytest.approx((0.01, 7 / 30, 18 / 30, 30.0, 3.5)),
        pytest.approx((0.001, 2.0, 0.0, 1.0, 2.0)),
        pytest.approx((0.01, 0.0, 1.0, 2.0, 0.0)),
    ]
    assert cost._rows["m", 0].maxlen is not None


def test_a_matrix_is_singular_from_a_determinant_of_1e_12_of_its_scale_cubed() -> None:
    """The bar is 1e-12 x (the largest entry)^3: at it, singular; past it, inverted."""
    assert _inverse([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1e-12]]) is None
    assert _inverse([[10.0, 0.0, 0.0], [0.0, 10.0, 0.0], [0.0, 0.0, 1e-12]]) is None  # 1e-10
    assert _inverse([[10.0, 0.0, 0.0], [0.0, 10.0, 0.0], [0.0, 0.0, 5e-11]]) is not None  # 5e-9
