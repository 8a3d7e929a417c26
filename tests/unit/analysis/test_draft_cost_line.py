"""The draft cost's line (analysis/speed/draft_cost.py, `_bucket`) against numpy: the weighted
least squares s = a + b x over requests (weights: steps), its sandwich covariance with
n / (n - 2), and c = b / a's delta-method variance; the bucket's gates at their edges."""

from __future__ import annotations

import random

import numpy as np
import pytest
from specwatch.analysis.speed.draft_cost import MIN_REQUESTS, DraftCost, _bucket, _Moments

Request = tuple[float, float, float]  # x (drafted a step), s (seconds a step), w (steps)


def requests(seed: int, n: int) -> list[Request]:
    """Step time 20 ms + 1 ms a drafted token, noise; 1 to 5 tokens drafted a step."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        x = rng.uniform(1.0, 5.0)
        out.append((x, 0.020 + 0.001 * x + rng.gauss(0, 0.002), float(rng.randint(10, 80))))
    return out


def moments(rows: list[Request]) -> _Moments:
    out = _Moments()
    for x, s, w in rows:
        out.add(x, s, w)
    return out


def test_c_and_its_variance_are_the_textbook_sandwich_and_delta_method() -> None:
    rows = requests(7, 40)
    found = _bucket(moments(rows))
    assert found is not None
    c, variance = found
    x, s, w = (np.array(column) for column in zip(*rows, strict=True))
    design = np.column_stack([np.ones_like(x), x])
    bread = np.linalg.inv(design.T @ (w[:, None] * design))
    a, b = bread @ design.T @ (w * s)
    score = design * (w * (s - design @ np.array([a, b])))[:, None]
    cov = len(x) / (len(x) - 2.0) * bread @ (score.T @ score) @ bread
    gradient = np.array([-b / (a * a), 1.0 / a])
    assert c == pytest.approx(b / a, rel=1e-9)
    assert variance == pytest.approx(float(gradient @ cov @ gradient), rel=1e-7)


def test_a_bucket_needs_its_minimum_of_requests_and_a_spread_of_drafted_tokens() -> None:
    rows = requests(11, MIN_REQUESTS)
    assert _bucket(moments(rows)) is not None
    assert _bucket(moments(rows[:-1])) is None
    same_x = [(3.0, s, w) for _, s, w in rows]  # every request drafting 3 a step
    assert _bucket(moments(same_x)) is None


def test_a_request_is_taken_from_its_first_step_and_first_second() -> None:
    """One step, a millisecond: kept; no step, no time or an infinite time: not."""
    cost = DraftCost(0.95)
    cost.add("m", 0, 1, 3, 0.001)
    for steps, seconds in ((0, 0.5), (10, 0.0), (10, float("inf"))):
        cost.add("m", 0, steps, 3, seconds)
    (kept,) = cost._moments.values()
    assert (1, 1.0, 3.0) == (kept.n, kept.w, kept.wx)
