"""[compiled] Traffic mix against draft quality: did the traffic change, or did the draft get worse?

The overall alpha-hat is a trial-weighted mean of the slices' alpha-hats, so its change from a
baseline period (0) to a recent one (1) splits exactly into a mix part and a rate part:
    A1 - A0 = sum_s (w1 - w0) a0  +  sum_s w1 (a1 - a0).
Overall acceptance can fall while every slice improves (Simpson): then the mix part is negative
and the rate part positive. PSI over the slices' shares, per dimension (ctx_bucket, task),
says how much the mix moved: 0.1 moderate, 0.25 major.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from specwatch import conventions as C
from specwatch.analysis.drift.detector import DriftDetector
from specwatch.core.records import SliceKey
from specwatch.settings import DriftSettings

K = TypeVar("K", bound=Hashable)

PSI_FLOOR = 1e-4  # a share of 0 would make PSI infinite


def shares(weights: Mapping[K, float]) -> dict[K, float]:
    total = sum(weights.values())
    return {key: value / total for key, value in weights.items()} if total else {}


def psi(base: Mapping[K, float], recent: Mapping[K, float]) -> float:
    """Population stability index of two share distributions."""
    out = 0.0
    for key in sorted(set(base) | set(recent), key=str):  # fixed order: same float sums
        b = max(base.get(key, 0.0), PSI_FLOOR)
        r = max(recent.get(key, 0.0), PSI_FLOOR)
        out += (r - b) * math.log(r / b)
    return out


@dataclass(frozen=True, slots=True)
class Decomposition:
    alpha_base: float
    alpha_recent: float
    mix: float
    rate: float

    @property
    def total(self) -> float:
        return self.alpha_recent - self.alpha_base


def decompose(
    base: Mapping[K, tuple[int, int]], recent: Mapping[K, tuple[int, int]]
) -> Decomposition | None:
    """Mix and rate parts of the change of the overall alpha-hat; (accepted, trials) per slice."""
    n0 = sum(n for _, n in base.values())
    n1 = sum(n for _, n in recent.values())
    if not n0 or not n1:
        return None
    mix = rate = 0.0
    for key in sorted(set(base) | set(recent), key=str):  # fixed order: same float sums
        a0n, t0 = base.get(key, (0, 0))
        a1n, t1 = recent.get(key, (0, 0))
        w0, w1 = t0 / n0, t1 / n1
        a1 = a1n / t1 if t1 else 0.0
        a0 = a0n / t0 if t0 else a1  # a slice new in the recent period: all of it is mix
        mix += (w1 - w0) * a0
        rate += w1 * (a1 - a0)
    alpha0 = sum(a for a, _ in base.values()) / n0
    alpha1 = sum(a for a, _ in recent.values()) / n1
    return Decomposition(alpha_base=alpha0, alpha_recent=alpha1, mix=mix, rate=rate)


@dataclass(frozen=True, slots=True)
class MixView:
    """One model's traffic mix, recent period against the drift baseline period."""

    psi_ctx_bucket: float
    psi_task: float
    decomposition: Decomposition


Period = dict[SliceKey, tuple[int, int]]  # (accepted, trials) per slice


def _of_model(period: Period, model: str) -> Period:
    return {k: v for k, v in period.items() if k.model == model and k.task != C.ALL}


def _shares_by(period: Period, ctx: bool) -> dict[str, float]:
    weights: dict[str, float] = {}
    for key, (_, trials) in period.items():
        label = key.ctx_bucket if ctx else key.task
        weights[label] = weights.get(label, 0.0) + trials
    return shares(weights)


def traffic_mix(drift: DriftDetector, cfg: DriftSettings, now: float) -> dict[str, MixView]:
    """Per model: the recent period's traffic mix against the drift baseline period."""
    bucket = cfg.bucket_seconds
    base_end = now - cfg.gap_buckets * bucket
    base = drift.period_counts(base_end - cfg.baseline_buckets * bucket, base_end)
    recent = drift.period_counts(now - cfg.recent_buckets * bucket, now)
    out = {}
    for model in sorted({key.model for key in recent}):
        b, r = _of_model(base, model), _of_model(recent, model)
        decomposition = decompose(b, r)
        if decomposition is not None:
            out[model] = MixView(
                psi_ctx_bucket=psi(_shares_by(b, ctx=True), _shares_by(r, ctx=True)),
                psi_task=psi(_shares_by(b, ctx=False), _shares_by(r, ctx=False)),
                decomposition=decomposition,
            )
    return out


class TrafficMix:
    """`traffic_mix`, computed once per drift bucket. Its two periods hold completed buckets
    only, so it changes when the clock enters a new bucket, or when a late record lands in
    one of the buckets read (`touched`): at full cardinality the periods are slices x hours
    of buckets, too many to sum again at every scrape."""

    def __init__(self, drift: DriftDetector, cfg: DriftSettings) -> None:
        self._drift, self._cfg = drift, cfg
        self._at: int | None = None  # the bucket `now` was in when last computed
        self._value: dict[str, MixView] = {}

    def touched(self, ts: float) -> None:
        """A record at `ts` went to the drift buckets."""
        if self._at is not None and ts // self._cfg.bucket_seconds < self._at:
            self._at = None

    def __call__(self, now: float) -> dict[str, MixView]:
        current = int(now // self._cfg.bucket_seconds)
        if current != self._at:
            self._value, self._at = traffic_mix(self._drift, self._cfg, now), current
        return self._value
