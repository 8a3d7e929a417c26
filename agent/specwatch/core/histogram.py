"""[compiled] Fixed-bound histograms: request latencies in the analysis, the proxy's own overhead in
health; both exported in Prometheus' form."""

from __future__ import annotations

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
        # as Prometheus files it, since it compares false): a loop the build compiles to
        # float compares, a tenth of bisect's call over a dozen bounds
        bounds = self.bounds
        index = len(bounds)
        for i in range(len(bounds)):
            if value <= bounds[i]:
                index = i
                break
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
