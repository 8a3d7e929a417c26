"""The gain of speculation: measured against a baseline's time per output token, else modelled.

Measured: the baseline's time per output token over speculation's, each pooled over the window
as sum(decode seconds) / sum(decode tokens) of its requests (token-weighted, as the bench
does: a long answer weighs by its tokens, not as one vote), with an interval over requests: the
log of the gain has the variance v_base + v_spec, each the cluster-robust variance of its
ratio over the ratio squared, and Student's t with Welch-Satterthwaite degrees of freedom.
A configured baseline (`speedup.baseline_tpot_ms`) is a constant: only speculation's side
varies then.

Modelled (Leviathan et al. 2023, with the measured mean acceptance length tau in place of the
i.i.d. formula): gain = tau / (1 + K c), c = draft step cost / target step cost, its bounds
those of tau. Always labelled with its method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specwatch.analysis.counts import Counts
from specwatch.analysis.stats import Interval, robust_variance, t_quantile
from specwatch.analysis.windows import RatioSums, WindowedRatio
from specwatch.settings import Settings

MEASURED = "measured"
MODELLED = "modelled"


@dataclass(frozen=True, slots=True)
class Gain:
    ratio: float
    method: str
    lower: float
    upper: float

    @property
    def slower(self) -> bool:
        """Speculation is slower than none: the whole interval lies below 1."""
        return self.upper < 1.0


def modelled_gain(tau: Interval, k: int, cost_ratio: float) -> Gain:
    cost = 1.0 + k * cost_ratio
    return Gain(tau.estimate / cost, MODELLED, tau.lower / cost, tau.upper / cost)


def cost_from_times(spec_tpot: float, base_tpot: float, counts: Counts) -> float | None:
    """c from measured per-token times: c_eff = (TPOT_spec * tau / TPOT_base - 1) / K, at least
    0; None without speculative steps or a baseline time."""
    if not counts.steps or not counts.max_drafted or base_tpot <= 0:
        return None
    tau = 1.0 + counts.accepted / counts.steps
    return max(0.0, (spec_tpot * tau / base_tpot - 1.0) / counts.max_drafted)


def _finite(sums: RatioSums) -> bool:
    return math.isfinite(sums.x + sums.y + sums.xx + sums.xy + sums.yy)


def _relative_variance(sums: RatioSums) -> float:
    """Var(log ratio) ~ Var(ratio) / ratio^2 (delta method)."""
    ratio = sums.x / sums.y
    return robust_variance(sums.n, sums.x, sums.y, sums.xx, sums.xy, sums.yy) / (ratio * ratio)


def measured_gain(
    spec: RatioSums,
    baseline: RatioSums | None,
    confidence: float,
    baseline_seconds_per_token: float | None = None,
) -> Gain | None:
    """From speculation's decode sums and the baseline's (live A/B) or a configured figure.
    None where a sum is not finite (times of 1e300 ms, replayed): their squares overflow, and
    a variance read as 0 from them would claim an exact gain."""
    if spec.n < 2 or spec.x <= 0 or spec.y <= 0 or not _finite(spec):
        return None
    spec_tpot = spec.x / spec.y
    v_spec = _relative_variance(spec)
    if baseline is not None:
        if baseline.n < 2 or baseline.x <= 0 or baseline.y <= 0 or not _finite(baseline):
            return None
        base_tpot = baseline.x / baseline.y
        v_base = _relative_variance(baseline)
        shares = v_spec**2 / (spec.n - 1) + v_base**2 / (baseline.n - 1)
        total = v_spec + v_base
        df = total * total / shares if shares > 0 else float(spec.n + baseline.n - 2)
    elif baseline_seconds_per_token:
        base_tpot, total, df = baseline_seconds_per_token, v_spec, float(spec.n - 1)
    else:
        return None
    ratio = base_tpot / spec_tpot
    spread = math.exp(t_quantile(confidence, df) * math.sqrt(total))
    return Gain(ratio, MEASURED, ratio / spread, ratio * spread)


class SpeedupTracker:
    """Per model, decode seconds and tokens of speculative and of A/B baseline requests over
    the window: the measured gain where there is a baseline, the cost ratio c per model."""

    def __init__(self, settings: Settings) -> None:
        self._window = settings.window
        self._cfg = settings.speedup
        self._confidence = settings.zones.confidence
        self._sums: dict[tuple[str, bool], WindowedRatio] = {}  # (model, baseline?)

    def add(
        self, model: str, baseline: bool, ts: float, tpot: float | None, tokens: int | None
    ) -> None:
        """One request's time per output token after the first, over its tokens - 1."""
        if tpot is None or tokens is None or tokens < 2 or not math.isfinite(tpot) or tpot < 0:
            return
        sums = self._sums.get((model, baseline))
        if sums is None:
            window = self._window
            sums = self._sums[model, baseline] = WindowedRatio(
                window.length_seconds, window.bucket_seconds
            )
        decode = tokens - 1
        sums.add(ts, tpot * decode, decode)

    def _window_sums(self, model: str, baseline: bool, now: float) -> RatioSums | None:
        sums = self._sums.get((model, baseline))
        return None if sums is None else sums.total(now)

    def _live_baseline(self, model: str, now: float) -> RatioSums | None:
        """Live A/B baseline traffic over the window, with enough requests to count."""
        base = self._window_sums(model, True, now)
        if base is None or base.n < self._cfg.min_baseline_requests or base.y <= 0:
            return None
        return base

    def _configured(self, model: str) -> float | None:
        ms = self._cfg.baseline_tpot_ms.get(model)
        return ms / 1000.0 if ms else None

    def cost_ratio(self, model: str, counts: Counts, now: float) -> float:
        """c: configured; else estimated from the measured per-token latencies,
        c_eff = (TPOT_spec * tau / TPOT_base - 1) / K; else the default."""
        configured = self._cfg.cost_ratio.get(model)
        if configured is not None:
            return configured
        live = self._live_baseline(model, now)
        base = live.x / live.y if live is not None else self._configured(model)
        spec = self._window_sums(model, False, now)
        if base and spec is not None and spec.y > 0:
            cost = cost_from_times(spec.x / spec.y, base, counts)
            if cost is not None:
                return cost
        return self._cfg.default_cost_ratio

    def gain(
        self, model: str, rollup: bool, tau: Interval | None, k: int, cost: float, now: float
    ) -> Gain | None:
        """Measured (per model: a `rollup`) when speculation's and a baseline's decode times
        are known, else modelled from tau when it is; else None."""
        spec = self._window_sums(model, False, now) if rollup else None
        if spec is not None and spec.n < self._cfg.min_baseline_requests:
            spec = None  # as little evidence on speculation's side is no measurement either
        if spec is not None:  # (a finer slice is never measured: no baseline to look up)
            live = self._live_baseline(model, now)
            configured = None if live is not None else self._configured(model)
            if live is not None or configured:
                measured = measured_gain(spec, live, self._confidence, configured)
                if measured is not None:
                    return measured
        if tau is None or k <= 0:
            return None
        return modelled_gain(tau, k, cost)
