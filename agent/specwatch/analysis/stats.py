"""The definitions of ARCHITECTURE.md, written once.

For a step with d drafted and a accepted tokens (0 <= a <= d):
- vLLM's rate r = sum a / sum d (falls with K even for an equally good draft);
- alpha-hat = sum a / sum trials, trials = a + (1 if a < d else 0): per-token acceptance
  probability, comparable across K;
- tau = 1 + sum a / steps (mean tokens per step, bonus token included);
- p_i = steps with a >= i / steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

from specwatch.analysis.windows import Counts


@lru_cache(maxsize=16)
def z_for(confidence: float) -> float:
    """Two-sided normal quantile: 0.95 -> 1.96."""
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when there are no trials."""
    if trials <= 0:
        return 0.0, 1.0
    z = z_for(confidence)
    p = successes / trials
    z2 = z * z
    denominator = 1.0 + z2 / trials
    centre = (p + z2 / (2.0 * trials)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / trials + z2 / (4.0 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True, slots=True)
class Interval:
    estimate: float
    lower: float
    upper: float


@dataclass(frozen=True, slots=True)
class SliceStats:
    """Statistics of one slice's counts; None where the counts give no evidence."""

    alpha: Interval | None
    rate: Interval | None
    tau: float | None
    per_position: tuple[float, ...]

    @classmethod
    def of(cls, counts: Counts, confidence: float) -> SliceStats:
        alpha = rate = None
        if counts.trials:
            lo, hi = wilson(counts.accepted, counts.trials, confidence)
            alpha = Interval(counts.accepted / counts.trials, lo, hi)
        if counts.drafted:
            lo, hi = wilson(counts.accepted, counts.drafted, confidence)
            rate = Interval(counts.accepted / counts.drafted, lo, hi)
        tau = 1.0 + counts.accepted / counts.steps if counts.steps else None
        per_position: tuple[float, ...] = ()
        if counts.steps:
            reached = counts.by_position[: counts.max_drafted]
            per_position = tuple(n / counts.steps for n in reached)
        return cls(alpha=alpha, rate=rate, tau=tau, per_position=per_position)
