"""[compiled] The gain of speculation: measured against a baseline's time per output token, else
modelled.

Measured: the baseline's time per output token over speculation's, each pooled over the window
as sum(decode seconds) / sum(decode tokens) of its requests (token-weighted, as the bench
does: a long answer weighs by its tokens, not as one vote), with an interval over requests: the
log of the gain has the variance v_base + v_spec, each the cluster-robust variance of its
ratio over the ratio squared, and Student's t with Welch-Satterthwaite degrees of freedom.
A configured baseline (`speedup.baseline_tpot_ms`) is a constant: only speculation's side
varies then. A model with a baseline (A/B traffic in the lookback, or a configured figure)
is measured over the window when both sides have `min_baseline_requests` there, else over
`speedup.lookback_seconds`, else its gain is `insufficient`: never modelled in its place (the
model can say 2.78 where the measured gain is 0.95).

Modelled (Leviathan et al. 2023, with the measured mean acceptance length tau in place of the
i.i.d. formula): gain = tau / (1 + K c), c = draft step cost / target step cost, its bounds
those of tau; only where c is known, configured (`speedup.cost_ratio`) or measured from A/B
decode times, never from the assumed `default_cost_ratio` (which only the K advice uses).
Always labelled with its method, the window it covers and, modelled, where c came from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import NamedTuple

from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.stats import Interval, robust_variance, t_quantile
from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.counting.windows import WindowedRatio
from specwatch.conventions import GainMethod
from specwatch.settings import Settings

# a Gain's method
MEASURED, MODELLED = GainMethod.MEASURED, GainMethod.MODELLED
INSUFFICIENT = GainMethod.INSUFFICIENT

# where the draft cost c came from
CONFIGURED = "configured"
ASSUMED = "assumed"  # speedup.default_cost_ratio: for the K advice, never for a gain
ESTIMATED = "estimated"  # from step times against drafted tokens (analysis/speed/draft_cost.py)


class Cost(NamedTuple):
    """The draft cost ratio c of a model and where it came from (CONFIGURED, MEASURED from
    A/B decode times, ESTIMATED from step times with its interval, or ASSUMED)."""

    ratio: float
    source: str
    lower: float | None = None
    upper: float | None = None


@dataclass(frozen=True, slots=True)
class Gain:
    """The gain of speculation over none. `insufficient` has NaN for its figures (/status shows
    null); `window_seconds` is what a measured gain covers, the verdict window for a modelled
    one; `cost_ratio` and `cost_source` the c a modelled gain rests on."""

    ratio: float
    method: str
    lower: float
    upper: float
    window_seconds: float | None = None
    cost_ratio: float | None = None
    cost_source: str | None = None
    cost_lower: float | None = None  # an estimated c's interval (analysis/speed/draft_cost.py)
    cost_upper: float | None = None

    def __eq__(self, other: object) -> bool:
        """Field by field, an insufficient gain's NaN equal to NaN: Python's tuple comparison
        finds the shared `math.nan` identical, compiled code (mypyc) keeps floats unboxed and
        would find no two insufficient gains equal, nor one to itself."""
        if not isinstance(other, Gain):
            return NotImplemented
        return all(
            mine == theirs or (mine != mine and theirs != theirs)
            for mine, theirs in zip(self._fields(), other._fields(), strict=True)
        )

    def __hash__(self) -> int:  # equal gains hash alike: NaN hashed as None
        return hash(tuple(None if value != value else value for value in self._fields()))

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, field.name) for field in fields(self))

    @property
    def slower(self) -> bool:
        """Speculation is slower than none: the whole interval lies below 1."""
        return self.upper < 1.0

    @classmethod
    def insufficient(cls, window_seconds: float) -> Gain:
        nan = math.nan
        return cls(nan, INSUFFICIENT, nan, nan, window_seconds)


def modelled_gain(tau: Interval, k: int, cost: Cost, window_seconds: float | None = None) -> Gain:
    """tau / (1 + K c); an estimated c's interval widens the bounds (the slowest tau at the
    dearest c, the fastest at the cheapest)."""
    scale = 1.0 + k * cost.ratio
    dearest = 1.0 + k * (cost.ratio if cost.upper is None else cost.upper)
    cheapest = 1.0 + k * (cost.ratio if cost.lower is None else cost.lower)
    estimate, lower, upper = tau.estimate / scale, tau.lower / dearest, tau.upper / cheapest
    return Gain(
        estimate, MODELLED, lower, upper, window_seconds, cost.ratio, cost.source, cost.lower,
        cost.upper,
    )  # fmt: skip


def cost_from_times(spec_tpot: float, base_tpot: float, counts: Counts) -> float | None:
    """c from measured per-token times: c_eff = (TPOT_spec * tau / TPOT_base - 1) / K, at least
    0; None without speculative steps or a baseline time."""
    if not counts.steps or not counts.max_drafted or base_tpot <= 0:
        return None
    tau = 1.0 + counts.accepted / counts.steps
    return max(0.0, (spec_tpot * tau / base_tpot - 1.0) / counts.max_drafted)


def _finite(sums: Sums) -> bool:
    return math.isfinite(sums.x + sums.y + sums.xx + sums.xy + sums.yy)


def log_variance(sums: Sums) -> float:
    """Var(log ratio) ~ Var(ratio) / ratio^2 (delta method)."""
    ratio = sums.x / sums.y
    return robust_variance(sums.requests, sums.x, sums.y, sums.xx, sums.xy, sums.yy) / (
        ratio * ratio
    )


def measured_gain(
    spec: Sums,
    baseline: Sums | None,
    confidence: float,
    baseline_seconds_per_token: float | None = None,
) -> Gain | None:
    """From speculation's decode sums and the baseline's (live A/B) or a configured figure.
    None where a sum is not finite (times of 1e300 ms, replayed): their squares overflow, and
    a variance read as 0 from them would claim an exact gain."""
    if spec.requests < 2 or spec.x <= 0 or spec.y <= 0 or not _finite(spec):
        return None
    spec_tpot = spec.x / spec.y
    v_spec = log_variance(spec)
    if baseline is not None:
        if baseline.requests < 2 or baseline.x <= 0 or baseline.y <= 0 or not _finite(baseline):
            return None
        base_tpot = baseline.x / baseline.y
        v_base = log_variance(baseline)
        shares = v_spec**2 / (spec.requests - 1) + v_base**2 / (baseline.requests - 1)
        total = v_spec + v_base
        df = total * total / shares if shares > 0 else float(spec.requests + baseline.requests - 2)
    elif baseline_seconds_per_token:
        base_tpot, total, df = baseline_seconds_per_token, v_spec, float(spec.requests - 1)
    else:
        return None
    ratio = base_tpot / spec_tpot
    spread = math.exp(t_quantile(confidence, df) * math.sqrt(total))
    return Gain(ratio, MEASURED, ratio / spread, ratio * spread)


class SpeedupTracker:
    """Per model, decode seconds and tokens of speculative and of A/B baseline requests over
    the window and over the lookback: the measured gain where there is a baseline, the cost
    ratio c per model."""

    def __init__(self, settings: Settings) -> None:
        self._window = settings.window
        self._cfg = settings.speedup
        self._confidence = settings.zones.confidence
        self._sums: dict[tuple[str, bool], tuple[WindowedRatio, WindowedRatio]] = {}

    def add(
        self, model: str, baseline: bool, ts: float, tpot: float | None, tokens: int | None
    ) -> None:
        """One request's time per output token after the first, over its tokens - 1."""
        if tpot is None or tokens is None or tokens < 2 or not 0 <= tpot or math.isinf(tpot):
            return  # (isinf, not isfinite: the compiled build's idiom)
        sums = self._sums.get((model, baseline))
        if sums is None:
            window, lookback = self._window, self._cfg.lookback_seconds
            sums = self._sums[model, baseline] = (
                WindowedRatio(window.length_seconds, window.bucket_seconds),
                WindowedRatio(lookback, max(window.bucket_seconds, lookback / 60)),
            )
        decode = tokens - 1
        for windowed in sums:
            windowed.add(ts, tpot * decode, decode)

    def _sums_over(self, model: str, baseline: bool, now: float, long: bool) -> Sums | None:
        sums = self._sums.get((model, baseline))
        return None if sums is None else sums[long].total(now)

    def _enough(self, sums: Sums | None) -> Sums | None:
        """Sums with the requests a measured gain needs on one side, else None."""
        if sums is None or sums.requests < self._cfg.min_baseline_requests or sums.y <= 0:
            return None
        return sums

    def _configured(self, model: str) -> float | None:
        ms = self._cfg.baseline_tpot_ms.get(model)
        return ms / 1000.0 if ms else None

    def cost_ratio(self, model: str, counts: Counts, now: float) -> Cost:
        """c: configured; else estimated from the measured per-token latencies over the window,
        c_eff = (TPOT_spec * tau / TPOT_base - 1) / K; else the assumed default."""
        configured = self._cfg.cost_ratio.get(model)
        if configured is not None:
            return Cost(configured, CONFIGURED)
        live = self._enough(self._sums_over(model, True, now, long=False))
        base = live.x / live.y if live is not None else self._configured(model)
        spec = self._sums_over(model, False, now, long=False)
        if base and spec is not None and spec.y > 0:
            cost = cost_from_times(spec.x / spec.y, base, counts)
            if cost is not None:
                return Cost(cost, MEASURED)
        return Cost(self._cfg.default_cost_ratio, ASSUMED)

    def gain(
        self, model: str, rollup: bool, tau: Interval | None, k: int, cost: Cost, now: float
    ) -> Gain | None:
        """A model (a `rollup`) with a baseline: measured over the window, else over the
        lookback, else insufficient. Otherwise, and for a finer slice (which has no baseline to
        look up), modelled from tau where c is known; else None."""
        configured = self._configured(model)
        if rollup and (configured or self._sums_over(model, True, now, long=True)):
            spans = (self._window.length_seconds, self._cfg.lookback_seconds)
            for long, seconds in enumerate(spans):
                spec = self._enough(self._sums_over(model, False, now, bool(long)))
                base = self._enough(self._sums_over(model, True, now, bool(long)))
                if spec is not None and (base is not None or configured):
                    measured = measured_gain(spec, base, self._confidence, configured)
                    if measured is not None:
                        return replace(measured, window_seconds=seconds)
            return Gain.insufficient(spans[-1])
        if tau is None or k <= 0 or cost.source == ASSUMED:
            return None
        return modelled_gain(tau, k, cost, self._window.length_seconds)
