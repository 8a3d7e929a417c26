"""A drift baseline's moments, kept as the baseline slides: O(lags) per judged bucket.

The drift detector judges every slice every minute against a trailing baseline of up to six
hours of 1-minute buckets (analysis/drift.py). Summing the baseline afresh at each judgement
cost O(buckets x lags) per slice-minute: most of a long replay's time. Here the window keeps
the sums the method of moments needs, with the mean p0 pulled out algebraically:

    sum (x_i - p0)^2            = S2 - 2 p0 S1 + m p0^2
    sum (x_i - p0)(x_i+k - p0)  = P_k - p0 (S1 - tail_k + S1 - head_k) + (m - k) p0^2

with x_i = a_i / n_i, S1 = sum x_i, S2 = sum x_i^2, P_k = sum x_i x_i+k over the window's m
buckets, and head_k / tail_k the sums of its first / last k values. A bucket entering adds its
products with the k before it; one leaving takes back its products with the k after it. The
float sums are summed afresh every `REFRESH` slides, so rounding cannot build up in a process
that runs for months; `estimate_baseline` in drift.py stays the definition, and
tests/unit/test_drift.py holds the two to agree.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping

REFRESH = 1024  # slides between exact re-summations


class BaselineWindow:
    """Buckets with at least `min_trials` trials in [start, end), in order, and their sums."""

    __slots__ = ("_a", "_lags", "_n", "_next", "_products", "_r", "_s1", "_s2", "_slides", "items")

    def __init__(self, lags: int) -> None:
        self._lags = lags
        self.items: deque[tuple[int, int, int, float]] = deque()  # (index, a, n, a / n)
        self._next: int | None = None  # the first index not yet considered for entry
        self._slides = 0
        self._reset_sums()

    def _reset_sums(self) -> None:
        self._a = self._n = 0
        self._s1 = self._s2 = self._r = 0.0
        self._products = [0.0] * (self._lags + 1)  # [k]: sum x_i x_{i+k}; [0] unused

    def _resum(self) -> None:
        self._reset_sums()
        values = [x for _, _, _, x in self.items]
        for _, a, n, x in self.items:
            self._a += a
            self._n += n
            self._s1 += x
            self._s2 += x * x
            self._r += 1.0 / n
        for k in range(1, self._lags + 1):
            self._products[k] = math.fsum(x * y for x, y in zip(values, values[k:], strict=False))

    def slide(
        self, buckets: Mapping[int, list[int]], start: int, end: int, min_trials: int
    ) -> None:
        """Move the window to [start, end): buckets enter at the right, leave at the left."""
        first = start if self._next is None else max(self._next, start)
        for index in range(first, end):
            bucket = buckets.get(index)
            if bucket is not None and bucket[1] >= min_trials:
                self._enter(index, bucket[0], bucket[1])
        self._next = end if self._next is None else max(end, self._next)
        items = self.items
        while items and items[0][0] < start:
            self._leave()
        self._slides += 1
        if self._slides % REFRESH == 0:
            self._resum()

    def _enter(self, index: int, a: int, n: int) -> None:
        x = a / n
        items, products = self.items, self._products
        for k in range(1, min(self._lags, len(items)) + 1):
            products[k] += items[-k][3] * x
        items.append((index, a, n, x))
        self._a += a
        self._n += n
        self._s1 += x
        self._s2 += x * x
        self._r += 1.0 / n

    def _leave(self) -> None:
        items, products = self.items, self._products
        _, a, n, x = items[0]
        for k in range(1, min(self._lags, len(items) - 1) + 1):
            products[k] -= x * items[k][3]
        items.popleft()
        self._a -= a
        self._n -= n
        self._s1 -= x
        self._s2 -= x * x
        self._r -= 1.0 / n
        if not items:
            self._reset_sums()  # an empty window is exactly zero again

    def moments(self) -> tuple[int, float, float, float, list[float]] | None:
        """(m, p0, mean binomial variance, mean square, [lag-k autoproducts, k = 1..]) of the
        deviations from p0, as estimate_baseline computes them; None without a usable p0."""
        m = len(self.items)
        if m < 2 or self._n <= 0:
            return None
        p0 = self._a / self._n
        if not 0.0 < p0 < 1.0:
            return None
        noise = p0 * (1.0 - p0) * self._r / m
        s1 = self._s1
        square = self._s2 - 2.0 * p0 * s1 + m * p0 * p0
        if square <= 1e-12 * self._s2:  # rounding of a window without spread: none
            square = 0.0
        square /= m - 1
        lags = []
        head = tail = 0.0  # sums of the first / last k values
        for k in range(1, min(self._lags, m - 2) + 1):
            head += self.items[k - 1][3]
            tail += self.items[-k][3]
            product = self._products[k] - p0 * (2.0 * s1 - tail - head) + (m - k) * p0 * p0
            lags.append(product / (m - k))
        return m, p0, noise, square, lags
