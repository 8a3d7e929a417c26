"""[compiled] The one-sided CUSUM that analysis/drift/detector.py runs per slice: its step and its
threshold.

On independent N(0, 1) increments (drift.py standardises each bucket's innovation to that), a
threshold h gives an in-control average run length by Siegmund's approximation; the detector
sets h from the target false-alarm rate (`drift.false_alarms_per_week`).
"""

from __future__ import annotations

import math


def siegmund_arl(h: float, k: float) -> float:
    """Average run length of a one-sided CUSUM without change, N(0,1) increments."""
    b = 2.0 * k * (h + 1.166)
    return (math.exp(b) - b - 1.0) / (2.0 * k * k)


def cusum_threshold(arl0: float, k: float) -> float:
    """The h whose in-control average run length is `arl0` (bisection on Siegmund)."""
    low, high = 0.0, 100.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if siegmund_arl(mid, k) < arl0:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


def cusum_step(statistic: float, residual: float, k: float) -> float:
    """One lower-CUSUM update: a negative residual (acceptance below baseline) adds up."""
    return max(0.0, statistic - residual - k)
