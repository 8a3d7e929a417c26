"""[compiled] `k0_still_costs`: steps scheduled at K = 0 that still pay for drafting (vLLM#51510:
the V2 model runner runs the drafter at scheduled K = 0, "users pay full spec decode cost with
zero benefit"). analysis/speed/goodput.py feeds it the decode times it reads; the cause is
named by analysis/causes/rules.py with the others.

A request's decode seconds over its engine steps s (analysis/speed/goodput.py: the steps vLLM
lists and the plain ones its tokens leave) against x, the tokens its steps drafted a step, and
z, the share of its steps listed with nothing drafted (the K = 0 steps of a schedule, a pause):
the weighted least-squares plane s = a + b x + d z (weights: steps) per model and load bucket
(requests in flight as it started: the target's step time moves with the batch), over the
latest `K0_KEPT` requests of the bucket. a is a plain step, a + b K a step drafting K, a + d a
K = 0 step: d = 0 where K = 0 is free, d = b K where it costs what drafting K does. The
plane's covariance is the sandwich (requests the unit). It is identified where x varies at a
given z: K differs between requests (adaptive K, a schedule's rows within one load bucket).

Per bucket g = d - b K / 2 (K: the bucket's mean tokens drafted by a drafting step), pooled
over buckets by inverse variance: named where its lower bound (`K0_CONFIDENCE`, one-sided) is
above 0 — a K = 0 step surely pays more than half of what drafting K costs — and drafting
costs: b K is at least `K0_MIN_COST` of a, b itself `K0_MIN_Z` standard errors above 0. A
bucket needs `K0_MIN_REQUESTS` requests with K = 0 steps and as many without.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from specwatch.analysis.counting.stats import z_for

K0_KEPT = 4000
K0_MIN_REQUESTS = 30
K0_CONFIDENCE = 0.98
K0_MIN_COST = 0.1
K0_MIN_Z = 3.0
_Row = tuple[float, float, float, float, float]  # s, x, z, weight, K of its drafting steps


class K0Cost:
    """Per model and load bucket, the latest requests' step time, drafted tokens a step and
    share of K = 0 steps."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, int], deque[_Row]] = {}
        self._versions: dict[str, int] = {}
        self._found: dict[str, tuple[int, dict[str, Any] | None]] = {}

    def add(
        self, model: str, load: int, seconds: float, steps: int, drafted: tuple[int, ...]
    ) -> None:
        """One request: decode seconds over `steps` engine steps, `drafted` its listed ones."""
        if steps <= 0 or not 0 < seconds or math.isinf(seconds) or not drafted:
            return
        zeros = drafted.count(0)
        total = sum(drafted)
        drafting = len(drafted) - zeros
        k = total / drafting if drafting else 0.0
        rows = self._rows.get((model, load))
        if rows is None:
            rows = self._rows[model, load] = deque(maxlen=K0_KEPT)
        rows.append((seconds / steps, total / steps, zeros / steps, float(steps), k))
        self._versions[model] = self._versions.get(model, 0) + 1

    def still_costs(self, model: str) -> dict[str, Any] | None:
        version = self._versions.get(model, 0)
        cached = self._found.get(model)
        if cached is not None and cached[0] == version:
            return cached[1]
        found = self._read(model)
        self._found[model] = (version, found)
        return found

    def _read(self, model: str) -> dict[str, Any] | None:
        weight = total = 0.0
        cost_weight = cost_total = 0.0
        best: tuple[int, dict[str, Any]] | None = None
        requests = 0
        for (name, _), rows in self._rows.items():
            fit = _plane(rows) if name == model else None
            if fit is None:
                continue
            a, b, d, cov, k, n = fit
            g = d - b * k / 2.0
            v_g = cov[2][2] - k * cov[1][2] + k * k / 4.0 * cov[1][1]
            if v_g <= 0 or cov[1][1] <= 0:
                continue
            weight += 1.0 / v_g
            total += g / v_g
            cost_weight += 1.0 / cov[1][1]
            cost_total += b / cov[1][1]
            requests += n
            if best is None or n > best[0]:
                detail = {"step_k0": a + d, "step_plain": a, "step_k": a + b * k, "k": k}
                best = (n, detail | {"paid": d / (b * k) if b * k > 0 else 0.0})
        if weight <= 0 or best is None:
            return None
        g, se = total / weight, math.sqrt(1.0 / weight)
        b, b_se = cost_total / cost_weight, math.sqrt(1.0 / cost_weight)
        detail = best[1]
        material = b * detail["k"] >= K0_MIN_COST * detail["step_plain"] and b >= K0_MIN_Z * b_se
        if g - z_for(2.0 * K0_CONFIDENCE - 1.0) * se <= 0 or not material:
            return None
        return detail | {"requests": requests}


def _plane(
    rows: deque[_Row],
) -> tuple[float, float, float, list[list[float]], float, int] | None:
    """a, b, d of s = a + b x + d z, their sandwich covariance, the mean K of the drafting
    steps, and the requests; None where the bucket lacks either side or x does not vary."""
    with_zero = sum(1 for row in rows if row[2] > 0)
    if with_zero < K0_MIN_REQUESTS or len(rows) - with_zero < K0_MIN_REQUESTS:
        return None
    bread = [[0.0] * 3 for _ in range(3)]
    rhs = [0.0] * 3
    k_sum = k_weight = 0.0
    for s, x, z, w, k in rows:
        v = (1.0, x, z)
        for i in range(3):
            rhs[i] += w * v[i] * s
            for j in range(3):
                bread[i][j] += w * v[i] * v[j]
        if k > 0:
            k_sum, k_weight = k_sum + w * k, k_weight + w
    inverse = _inverse(bread)
    if inverse is None or k_weight <= 0:
        return None
    beta = [sum(inverse[i][j] * rhs[j] for j in range(3)) for i in range(3)]
    meat = [[0.0] * 3 for _ in range(3)]
    for s, x, z, w, _ in rows:
        v = (1.0, x, z)
        r = s - beta[0] - beta[1] * x - beta[2] * z
        for i in range(3):
            for j in range(3):
                meat[i][j] += (w * r) ** 2 * v[i] * v[j]
    n = len(rows)
    scale = n / (n - 3.0)
    left = [[sum(inverse[i][m] * meat[m][j] for m in range(3)) for j in range(3)] for i in range(3)]
    cov = [
        [scale * sum(left[i][m] * inverse[m][j] for m in range(3)) for j in range(3)]
        for i in range(3)
    ]
    return beta[0], beta[1], beta[2], cov, k_sum / k_weight, n


def _inverse(m: list[list[float]]) -> list[list[float]] | None:
    """The inverse of a 3 x 3 matrix; None where it is (nearly) singular."""
    (a, b, c), (d, e, f), (g, h, i) = m
    co = [
        [e * i - f * h, c * h - b * i, b * f - c * e],
        [f * g - d * i, a * i - c * g, c * d - a * f],
        [d * h - e * g, b * g - a * h, a * e - b * d],
    ]
    det = a * co[0][0] + b * co[1][0] + c * co[2][0]
    scale = max(abs(v) for row in m for v in row)
    if not math.isfinite(det) or abs(det) <= 1e-12 * scale**3:
        return None
    return [[v / det for v in row] for row in co]
