"""[compiled] A drift baseline: its moments, kept as the baseline slides (O(lags) per judged
bucket), and the model fitted to them (`moments_of` is the definition; analysis/drift/detector.py
the model).

The drift detector judges every slice every minute against a trailing baseline of up to six
hours of 1-minute buckets (analysis/drift/detector.py). Summing the baseline afresh at each
judgement cost O(buckets x lags) per slice-minute: most of a long replay's time. Here the window
keeps the sums the method of moments needs. A bucket's deviation is d_i = (u_i - p0 v_i) / tau,
with u_i = a_i / N_i and v_i = n_i / N_i its accepted tokens and trials per step (drift.py,
Moments), so p0 and tau (the window's trials per step) come out algebraically:

    sum d_i^2 tau^2           = UU_0 - 2 p0 UV_0 + p0^2 VV_0
    sum d_i d_i+k tau^2       = UU_k - p0 (UV_k + VU_k) + p0^2 VV_k

with UV_k = sum u_i v_i+k over the window's buckets (and likewise UU, VU, VV); beside them
the window's totals and the sums of 1 / N_i and (s_i - N_i) / N_i^2 that give the mean
binomial and design-effect variances. A bucket entering adds its products with the k before
it; one leaving takes back its products with the k after it. The float sums are summed afresh
every `REFRESH` slides, so rounding cannot build up in a process that runs for months;
`moments_of` below stays the definition, and tests/unit/analysis/test_drift.py holds the two to
agree.
"""

from __future__ import annotations

import math
import operator
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

REFRESH = 1024  # slides between exact re-summations
# The wander's AR(1) coefficient comes from the decay of the autoproducts over this many lags.
WANDER_LAGS = 10


class Moments(NamedTuple):
    """The moments of a baseline's deviations from p0 that the drift model is fitted to."""

    buckets: int
    p0: float  # accepted / trials over the window
    per_step: float  # tau: trials per step over the window
    noise: float  # mean binomial variance of a deviation, E[v]
    square: float  # mean square of the deviations
    lags: list[float]  # [lag-k mean autoproduct, k = 1..]
    cluster: float  # mean design-effect variance per unit of r, E[v (m - 1)]


class _Item(NamedTuple):
    at: int  # the bucket's index
    accepted: int
    trials: int
    steps: int
    u: float  # accepted per step
    v: float  # trials per step
    binomial: float  # 1 / N
    design: float  # (s - N) / N^2


def design(steps: int, squares: int) -> float:
    """(s - N) / N^2 of a bucket of N steps whose requests' steps square-sum to s: its
    requests' design-effect variance per unit of r, over p0 (1 - p0) (drift.py)."""
    return (squares - steps) / (steps * steps)


def _products(left: list[float], right: list[float], k: int) -> float:
    return math.fsum(x * y for x, y in zip(left, right[k:], strict=False))


class BaselineWindow:
    """Buckets with at least `min_trials` trials in [start, end), in order, and their sums."""

    __slots__ = (
        "_a",
        "_binomial",
        "_design",
        "_lags",
        "_n",
        "_next",
        "_slides",
        "_steps",
        "_uu",
        "_uv",
        "_vu",
        "_vv",
        "items",
    )

    def __init__(self, lags: int) -> None:
        self._lags = lags
        self.items: deque[_Item] = deque()
        self._next: int | None = None  # the first index not yet considered for entry
        self._slides = 0
        self._reset_sums()

    def _reset_sums(self) -> None:
        self._a = self._n = self._steps = 0
        self._binomial = self._design = 0.0
        # [k]: sum over i of u_i u_i+k (and u v, v u, v v); [0] the plain sums of squares
        lags = self._lags + 1
        self._uu, self._uv = [0.0] * lags, [0.0] * lags
        self._vu, self._vv = [0.0] * lags, [0.0] * lags

    def _resum(self) -> None:
        self._reset_sums()
        for item in self.items:
            self._a += item.accepted
            self._n += item.trials
            self._steps += item.steps
            self._binomial += item.binomial
            self._design += item.design
        us = [item.u for item in self.items]
        vs = [item.v for item in self.items]
        for k in range(self._lags + 1):
            self._uu[k] = _products(us, us, k)
            self._uv[k] = _products(us, vs, k)
            self._vu[k] = _products(vs, us, k)
            self._vv[k] = _products(vs, vs, k)

    def slide(
        self, buckets: Mapping[int, list[int]], start: int, end: int, min_trials: int
    ) -> None:
        """Move the window to [start, end): buckets enter at the right, leave at the left.
        A bucket is [accepted, trials, squares, steps] (drift.py)."""
        first = start if self._next is None else max(self._next, start)
        for index in range(first, end):
            bucket = buckets.get(index)
            if bucket is not None and bucket[1] >= min_trials:
                self._enter(index, *bucket)
        self._next = end if self._next is None else max(end, self._next)
        items = self.items
        while items and items[0].at < start:
            self._leave()
        self._slides += 1
        if self._slides % REFRESH == 0:
            self._resum()

    def _enter(self, index: int, a: int, n: int, squares: int, steps: int) -> None:
        u, v = a / steps, n / steps
        item = _Item(index, a, n, steps, u, v, 1.0 / steps, design(steps, squares))
        items = self.items
        uu, uv, vu, vv = self._uu, self._uv, self._vu, self._vv
        uu[0] += u * u
        uv[0] += u * v
        vu[0] += v * u
        vv[0] += v * v
        for k in range(1, min(self._lags, len(items)) + 1):
            before = items[-k]  # item i, k before the entering i + k
            uu[k] += before.u * u
            uv[k] += before.u * v
            vu[k] += before.v * u
            vv[k] += before.v * v
        items.append(item)
        self._add(item, 1)

    def _leave(self) -> None:
        items = self.items
        item = items[0]
        uu, uv, vu, vv = self._uu, self._uv, self._vu, self._vv
        u, v = item.u, item.v
        uu[0] -= u * u
        uv[0] -= u * v
        vu[0] -= v * u
        vv[0] -= v * v
        for k in range(1, min(self._lags, len(items) - 1) + 1):
            after = items[k]  # the leaving item is i, this one i + k
            uu[k] -= u * after.u
            uv[k] -= u * after.v
            vu[k] -= v * after.u
            vv[k] -= v * after.v
        items.popleft()
        self._add(item, -1)
        if not items:
            self._reset_sums()  # an empty window is exactly zero again

    def _add(self, item: _Item, sign: int) -> None:
        self._a += sign * item.accepted
        self._n += sign * item.trials
        self._steps += sign * item.steps
        self._binomial += sign * item.binomial
        self._design += sign * item.design

    def moments(self) -> Moments | None:
        """The window's moments, as `moments_of` computes them; None without a usable p0."""
        m = len(self.items)
        if m < 2 or self._n <= 0:
            return None
        p0 = self._a / self._n
        if not 0.0 < p0 < 1.0:
            return None
        tau = self._n / self._steps
        tau2 = tau * tau
        binomial = p0 * (1.0 - p0)
        uu, uv, vu, vv = self._uu, self._uv, self._vu, self._vv
        square = uu[0] - 2.0 * p0 * uv[0] + p0 * p0 * vv[0]
        if square <= 1e-12 * uu[0]:  # rounding of a window without spread: none
            square = 0.0
        lags = [
            (uu[k] - p0 * (uv[k] + vu[k]) + p0 * p0 * vv[k]) / tau2 / (m - k)
            for k in range(1, min(self._lags, m - 2) + 1)
        ]
        return Moments(
            buckets=m,
            p0=p0,
            per_step=tau,
            noise=binomial * self._binomial / tau / m,
            square=square / tau2 / (m - 1),
            lags=lags,
            cluster=binomial * max(0.0, self._design) / m,
        )


@dataclass(frozen=True, slots=True)
class Baseline:
    alpha: float  # p0
    phi: float  # a constant overdispersion factor beyond the requests' design effect (>= 1)
    icc: float  # r: the intra-request correlation of the trials (0 <= r <= 1)
    rho: float  # the wander's AR(1) coefficient per bucket (0: no wander)
    wander: float  # the wander's stationary variance s2, in alpha units (0: none)
    buckets: int
    per_step: float = 1.0  # tau: trials per step (1 where buckets carry no steps)


# (accepted, trials[, squares[, steps]]), squares the sum of the requests' steps squared:
# without steps, as if every trial were a step; without squares too, each its own request
Bucket = tuple[int, int] | tuple[int, int, int] | tuple[int, int, int, int]


def full(bucket: Bucket) -> tuple[int, int, int, int]:
    """A bucket with its squares and steps filled in where it has none."""
    if len(bucket) == 4:
        return bucket
    trials = bucket[1]
    return (bucket[0], trials, bucket[2] if len(bucket) == 3 else trials, trials)


def estimate_baseline(buckets: Sequence[Bucket], min_buckets: int) -> Baseline | None:
    """p0, the requests' correlation and the wander's AR(1) from buckets in order."""
    if len(buckets) < min_buckets:
        return None
    moments = moments_of(buckets)
    return None if moments is None else baseline_of(moments)


def moments_of(buckets: Sequence[Bucket]) -> Moments | None:
    """The moments of the buckets' deviations d = (a - p0 n) / (N tau) (the module's
    docstring): the definition; the detector keeps the same moments as its baseline slides
    (analysis/drift/baseline.py). `noise` is the mean of p0 (1 - p0) / (N tau), `cluster` the
    mean of p0 (1 - p0) (s - N) / N^2."""
    count = len(buckets)
    rows = [full(bucket) for bucket in buckets]
    trials, steps = sum(row[1] for row in rows), sum(row[3] for row in rows)
    if count < 2 or trials <= 0:
        return None
    p0 = sum(row[0] for row in rows) / trials
    if not 0.0 < p0 < 1.0:
        return None
    tau = trials / steps
    binomial = p0 * (1.0 - p0)
    deviations = [(a - p0 * n) / (big_n * tau) for a, n, _, big_n in rows]
    noise = binomial * sum(1.0 / (big_n * tau) for *_, big_n in rows) / count
    cluster = binomial * sum(design(big_n, sq) for _, _, sq, big_n in rows) / count
    square = sum(map(operator.mul, deviations, deviations)) / (count - 1)
    lags = [
        sum(map(operator.mul, deviations, deviations[k:])) / (count - k)
        for k in range(1, min(WANDER_LAGS, count - 2) + 1)
    ]
    return Moments(count, p0, tau, noise, square, lags, cluster)


def baseline_of(moments: Moments) -> Baseline:
    """The model's parameters from the moments of the deviations from p0: the spread the
    wander and the binomial noise leave is the requests' (r, at most 1), and what is left
    beyond r = 1, or without request sizes, a constant factor."""
    count, p0, per_step, noise, square, lags, cluster = moments
    wander, rho = 0.0, 0.0
    # a wander shows as lag-1 autocorrelation beyond two standard errors, decaying with lag
    # (a baseline shorter than the lags it needs has none to show)
    long_enough = len(lags) == WANDER_LAGS
    if long_enough and square > 0 and lags[0] / square > 2.0 / math.sqrt(count) and lags[1] > 0:
        rho = min(0.99, max(0.2, sum(lags[1:], 0.0) / sum(lags[:-1], 0.0)))
        wander = min(lags[0] / rho, max(0.0, square - noise))
    excess = square - wander - noise
    icc = min(1.0, max(0.0, excess / cluster)) if cluster > 0 else 0.0
    phi = max(1.0, (square - wander - icc * cluster) / noise) if noise > 0 else 1.0
    return Baseline(
        alpha=p0,
        phi=phi,
        icc=icc,
        rho=rho if wander > 0 else 0.0,
        wander=wander,
        buckets=count,
        per_step=per_step,
    )
