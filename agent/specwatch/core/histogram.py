"""Fixed-bound histograms: request latencies in the analysis, the proxy's own overhead in
health; both exported in Prometheus' form."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate

_LE: dict[tuple[float, ...], tuple[str, ...]] = {}  # bounds -> their `le` names


class Histogram:
    """Fixed-bound histogram counts (non-cumulative per bucket; +Inf last)."""

    __slots__ = ("bounds", "buckets", "count", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.buckets = [0] * (len(self.bounds) + 1)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        # the first bound the value does not exceed (le is inclusive), else +Inf (NaN too,
        # as Prometheus files it): a C search, not a Python loop over the bounds
        index = bisect_left(self.bounds, value) if value == value else len(self.bounds)
        self.buckets[index] += 1
        self.count += 1
        self.sum += value

    def le(self) -> tuple[str, ...]:
        """The buckets' `le` label values, ending with +Inf (one tuple per set of bounds)."""
        names = _LE.get(self.bounds)
        if names is None:
            names = _LE[self.bounds] = (*map(str, self.bounds), "+Inf")
        return names

    def cumulative(self) -> list[tuple[str, int]]:
        """Prometheus' form: (le, cumulative count), ending with +Inf."""
        return list(zip(self.le(), accumulate(self.buckets), strict=True))

    def copy(self) -> Histogram:
        out = Histogram(self.bounds)
        out.buckets = list(self.buckets)
        out.count, out.sum = self.count, self.sum
        return out
