"""[compiled] Drift in a slice: a one-sided CUSUM on per-bucket acceptance, standardised against a
baseline.

Per-event detectors (ADWIN, Page-Hinkley) raise hundreds of false alarms a week on real,
overdispersed streams (docs/statistics.md). Here each slice's requests are summed into time buckets
(1 minute by default): accepted tokens a, trials n, steps N and the requests' steps squared s.
A bucket's deviation from the baseline mean p0 is

    d_t = (a_t - p0 n_t) / (N_t tau) = w_t + e_t,   w_t = rho w_{t-1} + eta_t,

with tau the baseline's trials per step: the slice's slow wander w (an AR(1): prompts drift
over the day, and a slice's acceptance with them), of stationary variance s2, and the bucket's
own noise e. Not a / n - p0: with vLLM's prefix acceptance a step's trials end at its first
rejection, so a bucket's trials move with its acceptance and a / n of a few short requests is
biased low; a - p0 n has mean 0 over the steps whatever the bucket holds. Requests differ (each
has its own alpha), so the noise is binomial times the requests' design effect (Kish), written
with the steps alone:

    Var(e_t) = p0 (1 - p0) (phi / (N_t tau) + r (s_t - N_t) / N_t^2),

r the requests' intra-request correlation: a bucket that holds one long request is nearly as
noisy as that request, one of many short requests nearly binomial. A constant overdispersion
on realised trials holds only where every bucket holds many requests: on a quiet slice (3
requests a minute) it gives many times the target of one false alarm a week
(benchmarks/drift_evaluation.py, sparse). For the bucket under test, a trailing
baseline that ends a gap before it gives p0, tau, r, rho and s2 by the method of moments
(analysis/drift/baseline.py: `moments_of`, kept sliding): the mean square of d is
s2 + E[binomial] + r E[design], the lag-k autoproducts are rho^k s2; r is at most 1, and what
is left beyond it (or all of it, where buckets carry no request sizes: a state saved before
they were kept) is a constant factor phi. Wander counts only where the lag-1 autocorrelation
is significant (beyond two standard errors); a stationary slice has none and its model is
plain overdispersed noise. A Kalman filter tracks w, and the bucket's innovation
e = (d - rho w_prev) / sqrt(S), S widened by `predictive` for a short baseline's own error,
feeds the lower CUSUM S = max(0, S - e - k). Under the model the innovations are independent
N(0, 1), so the CUSUM's threshold h from the target false-alarm rate (Siegmund's
approximation) holds whether the slice wanders or not; a slow wander is predicted, not alarmed
on, and a real drop shows as a run of negative innovations. The alarm starts when S passes h
and the drop since the run began is at least `min_delta`. It ends, with S reset, when S has
stayed at 0 for `end_buckets` buckets or when the last `end_buckets` buckets pooled are back
within `min_delta / 2` of the baseline: after a deep drop S would otherwise take hours to
drain at k per bucket. Slices without enough baseline have no verdict.
benchmarks/drift_evaluation.py measures it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass, field
from itertools import takewhile
from typing import Any

import structlog

from specwatch.analysis.drift.baseline import (
    WANDER_LAGS,
    Baseline,
    BaselineWindow,
    baseline_of,
    design,
)
from specwatch.analysis.drift.cusum import cusum_step, cusum_threshold
from specwatch.core.pacing import Pace
from specwatch.core.records import SliceKey
from specwatch.core.turns import finish
from specwatch.settings import DriftSettings

log = structlog.get_logger("specwatch.drift")

WEEK_SECONDS = 7 * 24 * 3600
# Six hours hold only ~18 time constants of a wander like rho 0.95: its estimated innovation
# variance is often too small, and a filter that adapts too slowly turns wander into alarms
# (one that adapts too fast costs only some delay). The filter assumes this multiple of it,
# chosen with benchmarks/drift_evaluation.py's wander case (the figures: docs/benchmarks.md,
# section "Figures behind design choices").
WANDER_INFLATION = 2.0
# 2 added the wander's Kalman state, 3 the buckets' sum of squared request trials and steps;
# an older state loads without them (see `full`)
STATE_VERSION = 3


def predictive(buckets: int) -> float:
    """How much the plug-in variance of a bucket's innovation understates its predictive one
    when p0 and the noise scale come from `buckets` baseline buckets: (1 + 1/m) for p0's own
    error, and nu / (nu - 2), the variance of Student's t with nu = m - 1 degrees of freedom,
    for the scale's (nu at least 3). 1.004 for six hours of minutes; 1.32 for the demo's
    12-bucket baselines, where it brings a quiet slice's false alarms from 2.3 to 1.5 per
    10,080 buckets (tests/unit/analysis/test_drift.py's `sparse`, 6 seeds, the demo's threshold)."""
    nu = max(3, buckets - 1)
    return (1.0 + 1.0 / buckets) * nu / (nu - 2)


@dataclass(slots=True)
class _SliceDrift:
    # index -> [accepted, trials, sum over the requests of their steps squared, steps]
    buckets: dict[int, list[int]] = field(default_factory=dict)
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
    shown: DriftView | None = None  # the view of the state as judged (not saved: `view`)


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

    def add(
        self,
        key: SliceKey,
        ts: float,
        accepted: int,
        trials: int,
        steps: int | None = None,
        squares: int | None = None,
    ) -> None:
        """One request's (accepted, trials, steps) in the slice; or several requests' sums,
        with `squares` the sum of their steps squared (a benchmark's whole bucket at once).
        Without steps, as if every trial were a step (the deviation is then a / n - p0)."""
        state = self._slices.get(key)
        if state is None:  # (not setdefault: a state is a dozen fields to make, per request)
            state = self._slices[key] = _SliceDrift()
        index = int(ts // self._cfg.bucket_seconds)
        if state.processed is not None and index <= state.processed:
            return  # too late for a bucket already judged: counted elsewhere, not here
        bucket = state.buckets.get(index)
        if bucket is None:
            bucket = state.buckets[index] = [0, 0, 0, 0]
            if state.newest is None or index > state.newest:
                state.newest = index
        bucket[0] += accepted
        bucket[1] += trials
        steps = trials if steps is None else steps
        bucket[2] += steps * steps if squares is None else squares
        bucket[3] += steps

    def evaluate(self, now: float) -> None:
        """Feed every completed bucket of every slice to its CUSUM."""
        finish(self.evaluate_in_turns(now, math.inf))

    def evaluate_in_turns(self, now: float, step: float) -> Generator[None, None, None]:
        """`evaluate`, yielding after about every `step` seconds (core/turns.py): a new
        bucket's judging at full cardinality would hold the loop too long in one go. Nothing
        may be added until it returns."""
        current = int(now // self._cfg.bucket_seconds)
        prune = current != self._pruned_at  # old buckets go once per bucket, not per call
        self._pruned_at = current
        keep = current - self._cfg.gap_buckets - self._cfg.baseline_buckets - 1
        pace = Pace(step)
        for key, state in tuple(self._slices.items()):  # a copy: as SlidingWindow.current_in_turns
            if pace.due():
                yield
                pace.restart()
            buckets = state.buckets
            if buckets and self._due(state, current):
                for index in self._unjudged(state, current):
                    self._judge(key, state, index, now)
                    state.processed = index
            if prune and buckets:
                # oldest first: buckets are made in time order, but for a late record's
                # (newer than the last judged bucket), which then goes a little later
                for index in list(takewhile(lambda index: index < keep, buckets)):
                    del buckets[index]

    @staticmethod
    def _unjudged(state: _SliceDrift, current: int) -> list[int]:
        """The buckets after the last judged one and before `current`, in order: looked up
        by index when that span is shorter than the slice's buckets (the usual case, one
        bucket since the last evaluation), not sorted out of the whole baseline."""
        buckets, processed = state.buckets, state.processed
        if processed is not None and current - processed - 1 <= len(buckets):
            return [index for index in range(processed + 1, current) if index in buckets]
        after = -1 if processed is None else processed
        return sorted(index for index in buckets if after < index < current)

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
        cfg, state.shown = self._cfg, None  # every field a view shows changes here only
        end = index - cfg.gap_buckets
        window = state.window
        if window is None:
            window = state.window = BaselineWindow(WANDER_LAGS)
        window.slide(state.buckets, end - cfg.baseline_buckets, end, cfg.min_bucket_trials)
        moments = window.moments() if len(window.items) >= cfg.min_baseline_buckets else None
        baseline = None if moments is None else baseline_of(moments)
        state.baseline = baseline
        accepted, trials, squares, steps = state.buckets[index]
        if baseline is None:
            state.statistic = None
            return
        if state.statistic is None:
            state.statistic = 0.0
        if trials < cfg.min_bucket_trials:
            return
        p0 = baseline.alpha
        residual = self._innovation(state, baseline, accepted, trials, squares, steps)
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
    def _innovation(
        state: _SliceDrift,
        baseline: Baseline,
        accepted: int,
        trials: int,
        squares: int,
        steps: int,
    ) -> float:
        """The bucket's standardised innovation, and the Kalman filter's step on the wander."""
        p0, rho = baseline.alpha, baseline.rho
        expected = steps * baseline.per_step  # the trials its steps hold on average
        deviation = (accepted - p0 * trials) / expected  # moments_of: d
        # from the steps alone: a bucket's realised trials move with its acceptance
        noise = p0 * (1.0 - p0) * (baseline.phi / expected + baseline.icc * design(steps, squares))
        if baseline.wander <= 0.0:  # no wander: plain overdispersed noise around p0
            state.level = state.level_variance = 0.0
            return deviation / math.sqrt(noise * predictive(baseline.buckets))
        predicted = rho * state.level
        step = WANDER_INFLATION * baseline.wander * (1.0 - rho * rho)
        variance = rho * rho * state.level_variance + step
        if state.level_variance <= 0.0:  # the filter's first step: the wander's own spread
            variance = baseline.wander
        spread = variance + noise
        innovation = deviation - predicted
        gain = variance / spread
        state.level = predicted + gain * innovation
        state.level_variance = (1.0 - gain) * variance
        return innovation / math.sqrt(spread * predictive(baseline.buckets))

    # --- state that survives a restart ----------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """Everything the detector knows, as plain JSON data."""
        return {
            "version": STATE_VERSION,
            "bucket_seconds": self._cfg.bucket_seconds,
            "slices": [
                {
                    "key": [key.model, key.ctx_bucket, key.task],
                    "buckets": [[i, *bucket] for i, bucket in sorted(state.buckets.items())],
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
        if not isinstance(data, dict) or data.get("version") not in (1, 2, STATE_VERSION):
            raise ValueError("not a drift state of this version")
        if data.get("bucket_seconds") != self._cfg.bucket_seconds:
            raise ValueError("saved with another bucket length")
        slices: dict[SliceKey, _SliceDrift] = {}
        try:
            for item in data["slices"]:
                model, ctx_bucket, task = (str(part) for part in item["key"])
                state = _SliceDrift(
                    buckets=dict(map(_bucket_of, item["buckets"])),
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
            for index, (a, n, _, _) in state.buckets.items():
                if first <= index < last:
                    accepted, trials = accepted + a, trials + n
            if trials:
                out[key] = (accepted, trials)
        return out

    def view(self, key: SliceKey) -> DriftView | None:
        """The slice's verdict: the same object until the slice is judged again."""
        state = self._slices.get(key)
        if state is None:
            return None
        if state.shown is None:
            baseline = None if state.baseline is None else state.baseline.alpha
            state.shown = DriftView(
                state.statistic,
                state.alarm,
                state.alarm_since,
                baseline,
                state.recent_alpha,
                self.threshold,
                state.alarms_raised,
            )
        return state.shown


def _bucket_of(item: Any) -> tuple[int, list[int]]:
    """A saved bucket: [index, accepted, trials, squares, steps]; a state of version 2 or
    older has neither squares nor steps (as if every trial were its own request and step)."""
    index, accepted, trials, *rest = (int(number) for number in item)
    if len(rest) not in (0, 2):
        raise ValueError("a bucket has three or five numbers")
    squares, steps = rest if rest else (trials, trials)  # as `full` fills them in
    if min(accepted, trials, squares, steps) < 0 or (trials > 0 and steps < 1):
        raise ValueError("a bucket's counts are not negative, and its trials come from steps")
    return index, [accepted, trials, squares, steps]
