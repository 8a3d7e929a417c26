"""[compiled] The draft's cost c estimated from the data, where no A/B baseline runs.

An engine step verifies what was drafted: its time is the target's forward pass plus drafting,
s = a (1 + c x) with x the tokens drafted a step (analysis/speed/speedup.py's cost model). Within
one load bucket (requests in flight: the target's step time moves with the batch) the requests'
mean step times s_i (decode seconds over speculative steps) against their mean drafted tokens a
step x_i give a weighted least-squares line s = a + b x, weighted by steps, and c = b / a. It
is identified only where x varies within a bucket: a batch-size schedule, adaptive K, requests
that stop drafting (K = 0 stretches) or a config change in a log; under one fixed K every
request drafts alike and nothing tells the draft's time from the target's.

The line's variance is the sandwich (heteroskedasticity-robust, requests the unit) from the
moment sums, c's by the delta method; the buckets identified are combined by inverse
variance. The estimate stands where its standard error is below half of it; else c stays
unknown (the default, ASSUMED: no modelled gain).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specwatch.analysis.counting.stats import t_quantile

# a bucket's drafted tokens a step must spread this much (weighted sd, tokens) to identify c
MIN_SPREAD = 0.5
MIN_REQUESTS = 30


class _Moments:
    """Sums over requests of w x^q s^p (w: steps) and of w^2 x^q s^p, for the line and its
    sandwich, each in a float field of its own (docs/architecture.md, "Writing for the compiled
    build": fields, not lists). `sums` and `squares` give them as the plain form that
    tests/unit/analysis/test_draft_cost.py holds `add` to."""

    __slots__ = (
        "n",
        "q00", "q01", "q02", "q03", "q04",
        "q10", "q11", "q12", "q13", "q14",
        "q20", "q21", "q22", "q23", "q24",
        "w", "ws", "wx", "wxs", "wxx",
    )  # fmt: skip

    def __init__(self) -> None:
        self.n = 0
        self.w = self.wx = self.wxx = self.wxs = self.ws = 0.0
        self.q00 = self.q01 = self.q02 = self.q03 = self.q04 = 0.0
        self.q10 = self.q11 = self.q12 = self.q13 = self.q14 = 0.0
        self.q20 = self.q21 = self.q22 = self.q23 = self.q24 = 0.0

    @property
    def sums(self) -> list[float]:
        """sum w, sum w x, sum w x^2, sum w x s, sum w s"""
        return [self.w, self.wx, self.wxx, self.wxs, self.ws]

    @property
    def squares(self) -> list[list[float]]:
        """[p][q]: sum w^2 x^q s^p, p = 0..2, q = 0..4"""
        return [
            [self.q00, self.q01, self.q02, self.q03, self.q04],
            [self.q10, self.q11, self.q12, self.q13, self.q14],
            [self.q20, self.q21, self.q22, self.q23, self.q24],
        ]

    def add(self, x: float, s: float, w: float) -> None:
        self.n += 1
        self.w += w
        self.wx += w * x
        self.wxx += w * x * x
        self.wxs += w * x * s
        self.ws += w * s
        # products, not powers: a float product past the range is inf, a power raises
        ww, s2 = w * w, s * s
        x2 = x * x
        x3 = x2 * x
        t0, t1, t2, t3, t4 = ww, ww * x, ww * x2, ww * x3, ww * (x3 * x)
        self.q00 += t0
        self.q01 += t1
        self.q02 += t2
        self.q03 += t3
        self.q04 += t4
        self.q10 += t0 * s
        self.q11 += t1 * s
        self.q12 += t2 * s
        self.q13 += t3 * s
        self.q14 += t4 * s
        self.q20 += t0 * s2
        self.q21 += t1 * s2
        self.q22 += t2 * s2
        self.q23 += t3 * s2
        self.q24 += t4 * s2


@dataclass(frozen=True, slots=True)
class CostEstimate:
    ratio: float
    lower: float
    upper: float
    requests: int


def _bucket(m: _Moments) -> tuple[float, float] | None:
    """c and its variance from one bucket's moments; None where x does not spread."""
    sums, m2 = m.sums, m.squares
    total, sx, sxx, sxs, ss = sums
    finite = all(math.isfinite(v) for v in (*sums, *(v for row in m2 for v in row)))
    if m.n < MIN_REQUESTS or total <= 0 or not finite:
        return None
    mean_x = sx / total
    spread = sxx / total - mean_x * mean_x
    if spread < MIN_SPREAD**2:
        return None
    det = total * sxx - sx * sx
    if det <= 0:
        return None
    b = (total * sxs - sx * ss) / det
    a = (ss - b * sx) / total
    if a <= 0:
        return None
    # meat: sum w^2 r^2 z z' with r = s - a - b x, z = (1, x)

    def meat(k: int) -> float:
        return (
            m2[2][k]
            - 2 * a * m2[1][k]
            - 2 * b * m2[1][k + 1]
            + a * a * m2[0][k]
            + 2 * a * b * m2[0][k + 1]
            + b * b * m2[0][k + 2]
        )

    m00, m01, m11 = meat(0), meat(1), meat(2)
    # bread: (sum w z z')^-1
    i00, i01, i11 = sxx / det, -sx / det, total / det
    correction = m.n / (m.n - 2)
    v_aa = correction * (i00 * (i00 * m00 + i01 * m01) + i01 * (i00 * m01 + i01 * m11))
    v_ab = correction * (i00 * (i01 * m00 + i11 * m01) + i01 * (i01 * m01 + i11 * m11))
    v_bb = correction * (i01 * (i01 * m00 + i11 * m01) + i11 * (i01 * m01 + i11 * m11))
    c = b / a
    g_a, g_b = -b / (a * a), 1.0 / a
    variance = g_a * g_a * v_aa + 2 * g_a * g_b * v_ab + g_b * g_b * v_bb
    return (c, variance) if variance > 0 and math.isfinite(variance) else None


class DraftCost:
    """Per model and load bucket the moments of its speculative requests' step times."""

    def __init__(self, confidence: float) -> None:
        self._confidence = confidence
        self._moments: dict[tuple[str, int], _Moments] = {}

    def add(self, model: str, load: int, steps: int, drafted: int, seconds: float) -> None:
        """One request: its speculative steps, the tokens they drafted, their decode seconds."""
        if steps <= 0 or not 0 < seconds or math.isinf(seconds):
            return
        moments = self._moments.get((model, load))
        if moments is None:
            moments = self._moments[model, load] = _Moments()
        moments.add(drafted / steps, seconds / steps, float(steps))

    def estimate(self, model: str) -> CostEstimate | None:
        """c with its interval where the model's buckets identify it, else None."""
        weight = total = 0.0
        requests = 0
        for (name, _), moments in self._moments.items():
            found = _bucket(moments) if name == model else None
            if found is not None:
                c, variance = found
                weight += 1.0 / variance
                total += c / variance
                requests += moments.n
        if weight <= 0:
            return None
        c, se = total / weight, math.sqrt(1.0 / weight)
        if c <= 0 or se >= c / 2:
            return None
        half = t_quantile(self._confidence, max(1, requests - 2)) * se
        return CostEstimate(c, max(0.0, c - half), c + half, requests)
