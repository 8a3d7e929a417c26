"""The analysis core: records in, snapshots out. Pure and synchronous; time is passed in."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import structlog

from specwatch import conventions as C
from specwatch.analysis.advisor import Advice, advise
from specwatch.analysis.drift import DriftDetector, DriftView
from specwatch.analysis.engine import EngineCounters, LogTotals
from specwatch.analysis.mix import MixView, decompose, psi, shares
from specwatch.analysis.slicing import CtxBuckets, split_steps
from specwatch.analysis.speedup import Gain, SpeedupTracker
from specwatch.analysis.stats import SliceStats
from specwatch.analysis.windows import Counts, Histogram, SlidingWindow
from specwatch.analysis.zones import ZoneState, has_evidence, next_zone
from specwatch.model import (
    EngineLogRecord,
    EngineSample,
    RequestKey,
    RequestRecord,
    SliceKey,
    SpecLogRecord,
)
from specwatch.settings import Settings

log = structlog.get_logger("specwatch.analysis")

HISTOGRAMS: dict[str, tuple[float, ...]] = {
    C.REQUEST_ACCEPTANCE_LENGTH: C.ACCEPTANCE_LENGTH_BUCKETS,
    C.TTFT_SECONDS: C.TTFT_BUCKETS,
    C.TPOT_SECONDS: C.TPOT_BUCKETS,
    C.REQUEST_DURATION_SECONDS: C.DURATION_BUCKETS,
}

# Outcomes whose model name came back from the upstream, so it may become a label value.
_SERVED = frozenset({C.Outcome.OBSERVED, C.Outcome.NO_SPEC_METRICS})


@dataclass(frozen=True, slots=True)
class SliceView:
    """One slice at one moment: counts since start, counts and statistics over the window."""

    key: SliceKey
    since_start: Counts
    window: Counts
    stats: SliceStats
    zone: str
    zone_since: float | None
    source: str = C.SliceSource.PROXY
    gain: Gain | None = None
    drift: DriftView | None = None
    advice: Advice | None = None


@dataclass(frozen=True, slots=True)
class EngineView:
    """vLLM's own counters for one model, and how much of them the proxy saw."""

    model: str
    since_start: Counts
    window: Counts
    stats: SliceStats
    coverage: float | None  # draft tokens seen by the proxy / counted by vLLM, over the window


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything export needs, copied: readers never touch live state."""

    at: float
    started: float
    window_seconds: float
    slices: tuple[SliceView, ...]  # the partition: sums over these are all traffic
    rollups: tuple[SliceView, ...]  # per model, ctx_bucket = task = "all"
    requests: dict[tuple[RequestKey, str], int]  # (request slice + variant, outcome) -> count
    tokens: dict[RequestKey, tuple[int, int]]  # -> (prompt, completion) tokens
    histograms: dict[str, dict[RequestKey, Histogram]]
    folded_models: int
    engine: tuple[EngineView, ...] = ()
    vllm_log: LogTotals | None = None
    counter_resets: int = 0
    mix: dict[str, MixView] | None = None  # per model


def _of_model(
    period: dict[SliceKey, tuple[int, int]], model: str
) -> dict[SliceKey, tuple[int, int]]:
    return {k: v for k, v in period.items() if k.model == model and k.task != C.ALL}


def _shares_by(period: dict[SliceKey, tuple[int, int]], ctx: bool) -> dict[str, float]:
    weights: dict[str, float] = {}
    for key, (_, trials) in period.items():
        label = key.ctx_bucket if ctx else key.task
        weights[label] = weights.get(label, 0.0) + trials
    return shares(weights)


class Analyzer:
    """Counts per slice since start and over the window; zones per slice and per model rollup.

    Request-level series (outcomes, latency and acceptance-length histograms) are keyed by the
    ctx bucket of the prompt length; step-level counts by each step's own context position.
    """

    def __init__(self, settings: Settings, started: float, fresh_engine: bool = False) -> None:
        self._cfg = settings
        self._buckets = CtxBuckets(settings.ctx_buckets)
        self._max_position = settings.limits.max_position
        self._started = started
        self._total: dict[SliceKey, Counts] = {}
        self._window: SlidingWindow[SliceKey] = SlidingWindow(
            settings.window.length_seconds, settings.window.bucket_seconds, self._max_position
        )
        self._zones: dict[SliceKey, ZoneState] = {}
        self._requests: dict[tuple[RequestKey, str], int] = defaultdict(int)
        self._tokens: dict[RequestKey, list[int]] = {}
        self._histograms: dict[str, dict[RequestKey, Histogram]] = {name: {} for name in HISTOGRAMS}
        self._models: set[str] = set()
        self._folded_models = 0
        self._engine = EngineCounters(
            settings.window.length_seconds,
            settings.window.bucket_seconds,
            self._max_position,
            fresh_start=fresh_engine,
        )
        self._log = LogTotals()
        self._drift = DriftDetector(settings.drift)
        self._speedup = SpeedupTracker(settings)

    @property
    def buckets(self) -> CtxBuckets:
        return self._buckets

    def _model_label(self, model: str, outcome: str) -> str:
        if model in self._models:
            return model
        if outcome in _SERVED and len(self._models) < self._cfg.limits.max_models:
            self._models.add(model)
            return model
        self._folded_models += 1
        return C.OTHER

    def _observe(self, name: str, key: RequestKey, value: float | None) -> None:
        if value is None:
            return
        per_key = self._histograms[name]
        histogram = per_key.get(key)
        if histogram is None:
            histogram = per_key[key] = Histogram(HISTOGRAMS[name])
        histogram.observe(value)

    def _add(self, key: SliceKey, ts: float, counts: Counts) -> None:
        total = self._total.get(key)
        if total is None:
            total = self._total[key] = Counts(self._max_position)
        total.merge(counts)
        self._window.add(key, ts, counts)
        self._drift.add(key, ts, counts.accepted, counts.trials)

    def ingest(self, record: RequestRecord) -> None:
        model = self._model_label(record.model, record.outcome)
        prompt = record.prompt_tokens
        ctx = self._buckets.label(prompt) if prompt is not None else C.UNKNOWN_CTX
        baseline = record.variant == C.VARIANT_BASELINE
        request_key = RequestKey(model, ctx, record.task, record.variant)
        self._requests[request_key, record.outcome] += 1
        tokens = self._tokens.setdefault(request_key, [0, 0])
        tokens[0] += prompt or 0
        tokens[1] += record.completion_tokens or 0
        self._observe(C.TTFT_SECONDS, request_key, record.latency.ttft)
        self._observe(C.TPOT_SECONDS, request_key, record.latency.tpot)
        if baseline or record.spec is not None:
            self._speedup.add(
                model, baseline, record.ts, record.latency.tpot, record.completion_tokens
            )
        self._observe(C.REQUEST_DURATION_SECONDS, request_key, record.latency.e2e)
        spec = record.spec
        if baseline or spec is None or not spec.steps:  # a baseline never counts as speculation
            return
        self._observe(
            C.REQUEST_ACCEPTANCE_LENGTH, request_key, 1.0 + sum(spec.accepted) / spec.steps
        )
        if prompt is None:
            whole = Counts.of_request(spec.drafted, spec.accepted, self._max_position)
            parts: dict[str, Counts] = {C.UNKNOWN_CTX: whole}
        else:
            parts = split_steps(spec, prompt, self._buckets, self._max_position)
        rollup = Counts(self._max_position)
        for label, counts in parts.items():
            self._add(SliceKey(model, label, record.task), record.ts, counts)
            rollup.merge(counts)
        # One request; its moments stay those of its parts: a request that crosses a context
        # bucket is one sampling unit per bucket in the rollup too, exactly what Prometheus
        # gets by summing the slices' counters (gen/rules.py).
        rollup.requests = 1
        self._add(SliceKey(model, C.ALL, C.ALL), record.ts, rollup)

    def drift_state(self) -> dict[str, Any]:
        return self._drift.to_state()

    def restore_drift(self, data: Any) -> None:
        """Raises ValueError when `data` is not a usable drift state."""
        self._drift.load_state(data)

    def ingest_engine(self, sample: EngineSample) -> None:
        self._engine.observe(sample)

    def ingest_log(self, record: SpecLogRecord | EngineLogRecord) -> None:
        log_totals = self._log
        if isinstance(record, SpecLogRecord):
            log_totals.lines += 1
            log_totals.accepted += record.accepted
            log_totals.drafted += record.drafted
        else:
            log_totals.running = record.running
            log_totals.waiting = record.waiting
            log_totals.kv_cache_usage = record.kv_cache_usage

    def _windows(self, now: float) -> tuple[dict[SliceKey, tuple[Counts, str]], dict[str, Counts]]:
        """Window counts per key with their source, and vLLM's own per model.

        A model whose requests carried no per-request data in the window (an older vLLM, or the
        flag missing) is judged on vLLM's own counters: its `all` slice, nothing finer.
        """
        window = self._window.totals(now)
        engine = self._engine.window(now)
        out: dict[SliceKey, tuple[Counts, str]] = {
            key: (window.get(key) or Counts(self._max_position), C.SliceSource.PROXY)
            for key in self._total
        }
        for model, counts in engine.items():
            key = SliceKey(model, C.ALL, C.ALL)
            if counts.steps and (key not in out or not out[key][0].steps):
                out[key] = (counts, C.SliceSource.VLLM_METRICS)
        return out, engine

    def _costs(self, windows: dict[SliceKey, tuple[Counts, str]], now: float) -> dict[str, float]:
        """c per model, from each model's `all` window."""
        return {
            key.model: self._speedup.cost_ratio(key.model, counts, now)
            for key, (counts, _) in windows.items()
            if key.ctx_bucket == C.ALL
        }

    def _gain(
        self, key: SliceKey, counts: Counts, stats: SliceStats, now: float, cost: float
    ) -> Gain | None:
        rollup = key.ctx_bucket == C.ALL
        return self._speedup.gain(key.model, rollup, stats.tau, counts.max_drafted, cost, now)

    @staticmethod
    def _advice(counts: Counts, stats: SliceStats, cost: float) -> Advice | None:
        return advise(stats.per_position, counts.max_drafted, cost)

    def _mix(self, now: float) -> dict[str, MixView]:
        """Per model: the recent period's traffic mix against the drift baseline period."""
        cfg = self._cfg.drift
        bucket = cfg.bucket_seconds
        base_end = now - cfg.gap_buckets * bucket
        base = self._drift.period_counts(base_end - cfg.baseline_buckets * bucket, base_end)
        recent = self._drift.period_counts(now - cfg.recent_buckets * bucket, now)
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

    def evaluate(self, now: float) -> None:
        """One zone and drift evaluation of every slice and rollup; logs each change."""
        cfg = self._cfg.zones
        self._drift.evaluate(now)
        windows, _ = self._windows(now)
        costs = self._costs(windows, now)
        for key, (counts, source) in windows.items():
            stats = SliceStats.of(counts, cfg.confidence)
            interval = stats.alpha if cfg.metric == "alpha" else stats.rate
            cost = costs.get(key.model, self._cfg.speedup.default_cost_ratio)
            gain = self._gain(key, counts, stats, now, cost)
            state = self._zones.setdefault(key, ZoneState())
            enough = has_evidence(state, counts.trials, counts.requests, cfg)
            change = next_zone(state, interval, enough, now, cfg, gain)
            if change is not None:
                log.info(
                    "zone_changed",
                    model=key.model,
                    ctx_bucket=key.ctx_bucket,
                    task=key.task,
                    previous=change.previous,
                    zone=change.current,
                    metric=cfg.metric,
                    estimate=None if interval is None else round(interval.estimate, 4),
                    lower=None if interval is None else round(interval.lower, 4),
                    upper=None if interval is None else round(interval.upper, 4),
                    window_trials=counts.trials,
                    window_requests=counts.requests,
                    source=source,
                    gain=None if gain is None else round(gain.ratio, 3),
                    gain_lower=None if gain is None else round(gain.lower, 3),
                    gain_upper=None if gain is None else round(gain.upper, 3),
                    gain_method=None if gain is None else gain.method,
                    design_effect=None
                    if interval is None or interval.design_effect is None
                    else round(interval.design_effect, 2),
                )

    def red_models(self) -> set[str]:
        """Models whose overall (`all`) zone is red now."""
        return {
            key.model
            for key, state in self._zones.items()
            if key.ctx_bucket == C.ALL and state.zone == C.Zone.RED
        }

    def snapshot(self, now: float) -> Snapshot:
        confidence = self._cfg.zones.confidence
        windows, engine_window = self._windows(now)
        costs = self._costs(windows, now)
        engine_total = self._engine.since_start()
        slices: list[SliceView] = []
        rollups: list[SliceView] = []
        order = {label: i for i, label in enumerate(self._buckets.labels)}
        for key in sorted(
            windows, key=lambda k: (k.model, order.get(k.ctx_bucket, len(order)), k.task)
        ):
            counts, source = windows[key]
            cost = costs.get(key.model, self._cfg.speedup.default_cost_ratio)
            state = self._zones.get(key) or ZoneState()
            total = (
                self._total[key] if source == C.SliceSource.PROXY else engine_total[key.model]
            ).copy()
            stats = SliceStats.of(counts, confidence)
            view = SliceView(
                key=key,
                since_start=total,
                window=counts,
                stats=stats,
                zone=state.zone,
                zone_since=state.since,
                source=source,
                gain=self._gain(key, counts, stats, now, cost),
                drift=self._drift.view(key),
                advice=self._advice(counts, stats, cost),
            )
            (rollups if key.ctx_bucket == C.ALL else slices).append(view)
        engine_views = []
        for model in sorted(engine_total):
            counts = engine_window.get(model) or Counts(self._max_position)
            seen = self._window_drafted(windows, model)
            engine_views.append(
                EngineView(
                    model=model,
                    since_start=engine_total[model],
                    window=counts,
                    stats=SliceStats.of(counts, confidence),
                    coverage=seen / counts.drafted if counts.drafted else None,
                )
            )
        return Snapshot(
            at=now,
            started=self._started,
            window_seconds=self._cfg.window.length_seconds,
            slices=tuple(slices),
            rollups=tuple(rollups),
            requests=dict(self._requests),
            tokens={key: (v[0], v[1]) for key, v in self._tokens.items()},
            histograms={
                name: {key: h.copy() for key, h in per_key.items()}
                for name, per_key in self._histograms.items()
            },
            folded_models=self._folded_models,
            engine=tuple(engine_views),
            vllm_log=replace(self._log),
            counter_resets=self._engine.resets,
            mix=self._mix(now),
        )

    @staticmethod
    def _window_drafted(windows: dict[SliceKey, tuple[Counts, str]], model: str) -> int:
        counts, source = windows.get(SliceKey(model, C.ALL, C.ALL), (None, ""))
        return counts.drafted if counts is not None and source == C.SliceSource.PROXY else 0
