"""Drift in a slice: a one-sided CUSUM on per-bucket acceptance, standardised against a baseline.

Per-event detectors (ADWIN, Page-Hinkley) raise hundreds of false alarms a week on real,
overdispersed streams (REFERENCE.md). Here each slice's (accepted, trials) are summed into time
buckets (1 minute by default), and each bucket's alpha-hat y is modelled as

    y_t = p0 + w_t + e_t,   w_t = phi w_{t-1} + eta_t,   Var(e_t) = D p0 (1 - p0) / n_t:

the baseline mean p0; the slice's slow wander w (an AR(1): prompts drift over the day, and a
slice's acceptance with them), of stationary variance s2; and the bucket's own noise, binomial
times the overdispersion D >= 1 (requests differ). For the bucket under test, a trailing
baseline that ends a gap before it gives p0, D, phi and s2 by the method of moments: the mean
square of y - p0 is s2 + D v (v = p0 (1 - p0) / n), the lag-k autoproducts are phi^k s2. Wander
counts only where the lag-1 autocorrelation is significant (beyond two standard errors); a
stationary slice has none and its model is plain overdispersed noise. A Kalman filter tracks
w, and the bucket's standardised innovation e = (y - p0 - phi w_prev) / sqrt(S) feeds the lower
CUSUM S = max(0, S - e - k). Under the model the innovations are independent N(0, 1), so the
CUSUM's threshold h from the target false-alarm rate (Siegmund's approximation) holds whether
the slice wanders or not; a slow wander is predicted, not alarmed on, and a real drop shows as
a run of negative innovations. The alarm starts when S passes h and the drop since the run
began is at least `min_delta`. It ends, with S reset, when S has stayed at 0 for `end_buckets`
buckets or when the last `end_buckets` buckets pooled are back within `min_delta / 2` of the
baseline: after a deep drop S would otherwise take hours to drain at k per bucket. Slices
without enough baseline have no verdict. benchmarks/drift_evaluation.py measures it.
"""

from __future__ import annotations

import math
import operator
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import structlog

from specwatch.analysis.baseline import BaselineWindow
from specwatch.model import SliceKey
from specwatch.settings import DriftSettings

log = structlog.get_logger("specwatch.drift")

WEEK_SECONDS = 7 * 24 * 3600
# The wander's AR(1) coefficient comes from the decay of the autoproducts over this many lags.
WANDER_LAGS = 10
# Six hours hold only ~18 time constants of a wander like rho 0.95: its estimated innovation
# variance is often too small, and a filter that adapts too slowly turns wander into alarms
# (one that adapts too fast costs only some delay). The filter assumes this multiple of it:
# measured in benchmarks/drift_evaluation.py, 1 left 4 false alarms per week in the wander
# case, 2 brought it to about 1 with the stationary delays unchanged.
WANDER_INFLATION = 2.0
STATE_VERSION = 2  # 2 added the wander's Kalman state; a version-1 state loads with none


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


@dataclass(frozen=True, slots=True)
class Baseline:
    alpha: float  # p0
    phi: float  # overdispersion D of a bucket's noise (>= 1)
    rho: float  # the wander's AR(1) coefficient per bucket (0: no wander)
    wander: float  # the wander's stationary variance s2, in alpha units (0: none)
    buckets: int


def estimate_baseline(buckets: list[tuple[int, int]], min_buckets: int) -> Baseline | None:
    """p0, overdispersion and the wander's AR(1) from (accepted, trials) buckets in order."""
    if len(buckets) < min_buckets:
        return None
    moments = moments_of(buckets)
    return None if moments is None else baseline_of(*moments)


def moments_of(
    buckets: list[tuple[int, int]],
) -> tuple[int, float, float, float, list[float]] | None:
    """(count, p0, mean binomial variance, mean square, [lag-k autoproducts, k = 1..]) of the
    buckets' deviations from p0: the definition; the detector keeps the same moments as its
    baseline slides (analysis/baseline.py)."""
    count = len(buckets)
    trials = sum(n for _, n in buckets)
    if count < 2 or trials <= 0:
        return None
    p0 = sum(a for a, _ in buckets) / trials
    if not 0.0 < p0 < 1.0:
        return None
    binomial = p0 * (1.0 - p0)
    deviations = [a / n - p0 for a, n in buckets]
    noise = sum(binomial / n for _, n in buckets) / count  # mean binomial variance, E[v]
    square = sum(map(operator.mul, deviations, deviations)) / (count - 1)
    lags = [
        sum(map(operator.mul, deviations, deviations[k:])) / (count - k)
        for k in range(1, min(WANDER_LAGS, count - 2) + 1)
    ]
    return count, p0, noise, square, lags


def baseline_of(count: int, p0: float, noise: float, square: float, lags: list[float]) -> Baseline:
    """The model's parameters from the moments of the deviations from p0."""
    wander, rho = 0.0, 0.0
    # a wander shows as lag-1 autocorrelation beyond two standard errors, decaying with lag
    # (a baseline shorter than the lags it needs has none to show)
    long_enough = len(lags) == WANDER_LAGS
    if long_enough and square > 0 and lags[0] / square > 2.0 / math.sqrt(count) and lags[1] > 0:
        rho = min(0.99, max(0.2, sum(lags[1:]) / sum(lags[:-1])))
        wander = min(lags[0] / rho, max(0.0, square - noise))
    phi = max(1.0, (square - wander) / noise) if noise > 0 else 1.0
    return Baseline(alpha=p0, phi=phi, rho=rho if wander > 0 else 0.0, wander=wander,
                    buckets=count)  # fmt: skip


@dataclass(slots=True)
class _SliceDrift:
    buckets: dict[int, list[int]] = field(default_factory=dict)  # index -> [accepted, trials]
    processed: int | None = None  # the last bucket index fed to the CUSUM
    statistic: float | None = None  # None: no verdict yet
    level: float = 0.0  # the Kalman filter's estimate of the wander w, alpha units
    level_variance: float = 0.0  # and its variance (0: no wander known yet)
    run: list[int] = field(default_factory=lambda: [0, 0])  # accepted, trials since S left 0
    alarm: bool = False
    alarm_since: float | None = None
    zero_streak: int = 0
    baseline: Baseline | None = None
    recent_alpha: float | None = None
    last: deque[tuple[int, int]] = field(default_factory=deque)  # the latest judged buckets
    alarms_raised: int = 0
    newest: int | None = None  # the newest bucket's index (not saved: read off `buckets`)
    window: BaselineWindow | None = None  # the sliding baseline (not saved: rebuilt)


@dataclass(frozen=True, slots=True)
class DriftView:
    statistic: float | None
    alarm: bool
    alarm_since: float | None
    baseline_alpha: float | None
    recent_alpha: float | None
    threshold: float
    alarms_raised: int


class DriftDetector:
    def __init__(self, cfg: DriftSettings) -> None:
        self._cfg = cfg
        arl0 = WEEK_SECONDS / cfg.bucket_seconds / cfg.false_alarms_per_week
        self.threshold = cusum_threshold(arl0, cfg.k)
        self._slices: dict[SliceKey, _SliceDrift] = {}
        self._pruned_at: int | None = None

    def add(self, key: SliceKey, ts: float, accepted: int, trials: int) -> None:
        state = self._slices.setdefault(key, _SliceDrift())
        index = int(ts // self._cfg.bucket_seconds)
        if state.processed is not None and index <= state.processed:
            return  # too late for a bucket already judged: counted elsewhere, not here
        bucket = state.buckets.setdefault(index, [0, 0])
        if state.newest is None or index > state.newest:
            state.newest = index
        bucket[0] += accepted
        bucket[1] += trials

    def evaluate(self, now: float) -> None:
        """Feed every completed bucket of every slice to its CUSUM."""
        current = int(now // self._cfg.bucket_seconds)
        prune = current != self._pruned_at  # old buckets go once per bucket, not per call
        self._pruned_at = current
        keep = current - self._cfg.gap_buckets - self._cfg.baseline_buckets - 1
        for key, state in self._slices.items():
            buckets = state.buckets
            if buckets and self._due(state, current):
                for index in sorted(buckets):
                    if index < current and (state.processed is None or index > state.processed):
                        self._judge(key, state, index, now)
                        state.processed = index
            if prune and buckets:
                for index in [i for i in buckets if i < keep]:
                    del buckets[index]

    @staticmethod
    def _due(state: _SliceDrift, current: int) -> bool:
        """A bucket after the last judged one and before `current` exists; O(1) in the usual
        case (the one bucket since the last evaluation is looked up, not the whole window)."""
        processed, newest = state.processed, state.newest
        if processed is None:
            return True
        if newest is None or newest <= processed:
            return False
        if current - processed - 1 > len(state.buckets):
            return True  # a long gap: the scan is as cheap
        return any(index in state.buckets for index in range(processed + 1, current))

    def _judge(self, key: SliceKey, state: _SliceDrift, index: int, now: float) -> None:
        cfg = self._cfg
        end = index - cfg.gap_buckets
        window = state.window
        if window is None:
            window = state.window = BaselineWindow(WANDER_LAGS)
        window.slide(state.buckets, end - cfg.baseline_buckets, end, cfg.min_bucket_trials)
        moments = window.moments() if len(window.items) >= cfg.min_baseline_buckets else None
        baseline = None if moments is None else baseline_of(*moments)
        state.baseline = baseline
        accepted, trials = state.buckets[index]
        if baseline is None:
            state.statistic = None
            return
        if state.statistic is None:
            state.statistic = 0.0
        if trials < cfg.min_bucket_trials:
            return
        p0 = baseline.alpha
        residual = self._innovation(state, baseline, accepted / trials, trials)
        before = state.statistic
        state.statistic = cusum_step(before, residual, cfg.k)
        if before == 0.0:
            state.run = [0, 0]
        if state.statistic > 0.0:
            state.run[0] += accepted
            state.run[1] += trials
            state.zero_streak = 0
        else:
            state.zero_streak += 1
        state.recent_alpha = state.run[0] / state.run[1] if state.run[1] else None
        delta = p0 - (state.recent_alpha if state.recent_alpha is not None else p0)
        state.last.append((accepted, trials))
        if len(state.last) > cfg.end_buckets:
            state.last.popleft()
        last_a, last_n = sum(a for a, _ in state.last), sum(n for _, n in state.last)
        recovered = len(state.last) == cfg.end_buckets and last_a / last_n >= p0 - cfg.min_delta / 2
        if not state.alarm and state.statistic > self.threshold and delta >= cfg.min_delta:
            state.alarm, state.alarm_since = True, now
            state.alarms_raised += 1
            log.warning(
                "drift_alarm_started",
                model=key.model,
                ctx_bucket=key.ctx_bucket,
                task=key.task,
                statistic=round(state.statistic, 2),
                baseline_alpha=round(p0, 4),
                recent_alpha=round(p0 - delta, 4),
            )
        elif state.alarm and (state.zero_streak >= cfg.end_buckets or recovered):
            state.alarm, state.alarm_since = False, None
            state.statistic, state.run, state.zero_streak = 0.0, [0, 0], 0
            log.info("drift_alarm_ended", model=key.model, ctx_bucket=key.ctx_bucket, task=key.task)

    @staticmethod
    def _innovation(state: _SliceDrift, baseline: Baseline, alpha: float, trials: int) -> float:
        """The bucket's standardised innovation, and the Kalman filter's step on the wander."""
        p0, rho = baseline.alpha, baseline.rho
        noise = baseline.phi * p0 * (1.0 - p0) / trials
        if baseline.wander <= 0.0:  # no wander: plain overdispersed noise around p0
            state.level = state.level_variance = 0.0
            return (alpha - p0) / math.sqrt(noise)
        predicted = rho * state.level
        step = WANDER_INFLATION * baseline.wander * (1.0 - rho * rho)
        variance = rho * rho * state.level_variance + step
        if state.level_variance <= 0.0:  # the filter's first step: the wander's own spread
            variance = baseline.wander
        spread = variance + noise
        innovation = alpha - p0 - predicted
        gain = variance / spread
        state.level = predicted + gain * innovation
        state.level_variance = (1.0 - gain) * variance
        return innovation / math.sqrt(spread)

    # --- state that survives a restart ----------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """Everything the detector knows, as plain JSON data."""
        return {
            "version": STATE_VERSION,
            "bucket_seconds": self._cfg.bucket_seconds,
            "slices": [
                {
                    "key": [key.model, key.ctx_bucket, key.task],
                    "buckets": [[i, a, n] for i, (a, n) in sorted(state.buckets.items())],
                    "processed": state.processed,
                    "statistic": state.statistic,
                    "level": state.level,
                    "level_variance": state.level_variance,
                    "run": state.run,
                    "alarm": state.alarm,
                    "alarm_since": state.alarm_since,
                    "zero_streak": state.zero_streak,
                    "last": [list(pair) for pair in state.last],
                    "alarms_raised": state.alarms_raised,
                }
                for key, state in self._slices.items()
            ],
        }

    def load_state(self, data: Any) -> None:
        """Replace the detector's state; raises ValueError when `data` is not a valid state."""
        if not isinstance(data, dict) or data.get("version") not in (1, STATE_VERSION):
            raise ValueError("not a drift state of this version")
        if data.get("bucket_seconds") != self._cfg.bucket_seconds:
            raise ValueError("saved with another bucket length")
        slices: dict[SliceKey, _SliceDrift] = {}
        try:
            for item in data["slices"]:
                model, ctx_bucket, task = (str(part) for part in item["key"])
                state = _SliceDrift(
                    buckets={int(i): [int(a), int(n)] for i, a, n in item["buckets"]},
                    processed=None if item["processed"] is None else int(item["processed"]),
                    statistic=None if item["statistic"] is None else float(item["statistic"]),
                    level=float(item.get("level", 0.0)),
                    level_variance=float(item.get("level_variance", 0.0)),
                    run=[int(item["run"][0]), int(item["run"][1])],
                    alarm=bool(item["alarm"]),
                    alarm_since=item["alarm_since"],
                    zero_streak=int(item["zero_streak"]),
                    last=deque((int(a), int(n)) for a, n in item["last"]),
                    alarms_raised=int(item.get("alarms_raised", 0)),
                )
                state.newest = max(state.buckets, default=None)
                slices[SliceKey(model, ctx_bucket, task)] = state
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise ValueError(f"malformed drift state: {error!r}") from None
        self._slices = slices

    def period_counts(self, start: float, end: float) -> dict[SliceKey, tuple[int, int]]:
        """(accepted, trials) per slice over buckets in [start, end) seconds (while kept)."""
        first, last = int(start // self._cfg.bucket_seconds), int(end // self._cfg.bucket_seconds)
        out = {}
        for key, state in self._slices.items():
            accepted = trials = 0
            for index, (a, n) in state.buckets.items():
                if first <= index < last:
                    accepted, trials = accepted + a, trials + n
            if trials:
                out[key] = (accepted, trials)
        return out

    def view(self, key: SliceKey) -> DriftView | None:
        state = self._slices.get(key)
        if state is None:
            return None
        return DriftView(
            statistic=state.statistic,
            alarm=state.alarm,
            alarm_since=state.alarm_since,
            baseline_alpha=None if state.baseline is None else state.baseline.alpha,
            recent_alpha=state.recent_alpha,
            threshold=self.threshold,
            alarms_raised=state.alarms_raised,
        )
