"""Drift in a slice: a one-sided CUSUM on per-bucket acceptance, standardised against a baseline.

Per-event detectors (ADWIN, Page-Hinkley) raise hundreds of false alarms a week on real,
overdispersed streams (REFERENCE.md). Here each slice's (accepted, trials) are summed into time
buckets (1 minute by default). For the bucket under test, a trailing baseline that ends a gap
before it gives the mean alpha p0, the overdispersion phi (Pearson chi-square per degree of
freedom, at least 1) and the lag-1 autocorrelation rho of the standardised residuals. The
bucket's residual z = (a/n - p0) / sqrt(phi p0 (1 - p0) / n) is prewhitened,
e = (z - rho z_prev) / sqrt(1 - rho^2), and fed to the lower CUSUM S = max(0, S - e - k).
The alarm starts when S passes h (from the target false-alarm rate by Siegmund's
approximation) and the drop since the run began is at least `min_delta`. It ends, with S reset,
when S has stayed at 0 for `end_buckets` buckets or when the last `end_buckets` buckets pooled
are back within `min_delta / 2` of the baseline: after a deep drop S would otherwise take hours
to drain at k per bucket. Slices without enough baseline have no verdict.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import structlog

from specwatch.model import SliceKey
from specwatch.settings import DriftSettings

log = structlog.get_logger("specwatch.drift")

WEEK_SECONDS = 7 * 24 * 3600
STATE_VERSION = 1


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
    alpha: float
    phi: float
    rho: float
    buckets: int


def estimate_baseline(buckets: list[tuple[int, int]], min_buckets: int) -> Baseline | None:
    """p0, overdispersion and lag-1 autocorrelation from (accepted, trials) buckets in order."""
    if len(buckets) < min_buckets:
        return None
    accepted = sum(a for a, _ in buckets)
    trials = sum(n for _, n in buckets)
    p0 = accepted / trials
    if not 0.0 < p0 < 1.0:
        return None
    residuals = [(a / n - p0) / math.sqrt(p0 * (1 - p0) / n) for a, n in buckets]
    phi = max(1.0, sum(r * r for r in residuals) / (len(residuals) - 1))
    scaled = [r / math.sqrt(phi) for r in residuals]
    mean = sum(scaled) / len(scaled)
    centred = [s - mean for s in scaled]
    variance = sum(c * c for c in centred)
    rho = 0.0
    if variance > 0:
        rho = sum(x * y for x, y in pairwise(centred)) / variance
    return Baseline(alpha=p0, phi=phi, rho=min(0.9, max(0.0, rho)), buckets=len(buckets))


@dataclass(slots=True)
class _SliceDrift:
    buckets: dict[int, list[int]] = field(default_factory=dict)  # index -> [accepted, trials]
    processed: int | None = None  # the last bucket index fed to the CUSUM
    statistic: float | None = None  # None: no verdict yet
    previous_z: float = 0.0
    run: list[int] = field(default_factory=lambda: [0, 0])  # accepted, trials since S left 0
    alarm: bool = False
    alarm_since: float | None = None
    zero_streak: int = 0
    baseline: Baseline | None = None
    recent_alpha: float | None = None
    last: deque[tuple[int, int]] = field(default_factory=deque)  # the latest judged buckets
    alarms_raised: int = 0


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

    def add(self, key: SliceKey, ts: float, accepted: int, trials: int) -> None:
        state = self._slices.setdefault(key, _SliceDrift())
        index = int(ts // self._cfg.bucket_seconds)
        if state.processed is not None and index <= state.processed:
            return  # too late for a bucket already judged: counted elsewhere, not here
        bucket = state.buckets.setdefault(index, [0, 0])
        bucket[0] += accepted
        bucket[1] += trials

    def evaluate(self, now: float) -> None:
        """Feed every completed bucket of every slice to its CUSUM."""
        current = int(now // self._cfg.bucket_seconds)
        for key, state in self._slices.items():
            for index in sorted(i for i in state.buckets if i < current):
                if state.processed is None or index > state.processed:
                    self._judge(key, state, index, now)
                    state.processed = index
            keep = current - self._cfg.gap_buckets - self._cfg.baseline_buckets - 1
            for index in [i for i in state.buckets if i < keep]:
                del state.buckets[index]

    def _judge(self, key: SliceKey, state: _SliceDrift, index: int, now: float) -> None:
        cfg = self._cfg
        end = index - cfg.gap_buckets
        window = [
            (a, n)
            for i, (a, n) in sorted(state.buckets.items())
            if end - cfg.baseline_buckets <= i < end and n >= cfg.min_bucket_trials
        ]
        baseline = estimate_baseline(window, cfg.min_baseline_buckets)
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
        z = (accepted / trials - p0) / math.sqrt(baseline.phi * p0 * (1 - p0) / trials)
        rho = baseline.rho
        residual = (z - rho * state.previous_z) / math.sqrt(1.0 - rho * rho)
        state.previous_z = z
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
                    "previous_z": state.previous_z,
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
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
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
                    previous_z=float(item["previous_z"]),
                    run=[int(item["run"][0]), int(item["run"][1])],
                    alarm=bool(item["alarm"]),
                    alarm_since=item["alarm_since"],
                    zero_streak=int(item["zero_streak"]),
                    last=deque((int(a), int(n)) for a, n in item["last"]),
                    alarms_raised=int(item.get("alarms_raised", 0)),
                )
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
