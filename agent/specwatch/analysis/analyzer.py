"""[compiled] The analysis core: records in, snapshots out. Pure, synchronous, time passed in."""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import replace
from typing import Any

import structlog

from specwatch import conventions as C
from specwatch.analysis.causes.rules import CauseTracker
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.engine import EngineCounters, EngineView, LogTotals
from specwatch.analysis.counting.requests import RequestSeries
from specwatch.analysis.counting.slicing import CtxBuckets, SliceOrder, request_parts, totals_parts
from specwatch.analysis.counting.stats import Interval, SliceStats
from specwatch.analysis.counting.sums import DecodeSums, Sums
from specwatch.analysis.counting.windows import SlidingWindow
from specwatch.analysis.drift.detector import DriftDetector, DriftView
from specwatch.analysis.drift.mix import TrafficMix
from specwatch.analysis.speed.advisor import advice_for
from specwatch.analysis.speed.goodput import Cell, GoodputTracker
from specwatch.analysis.speed.load import LoadTable, LoadTracker, load_cells
from specwatch.analysis.speed.speedup import ASSUMED, Cost, Gain, SpeedupTracker
from specwatch.analysis.verdicts import zones
from specwatch.analysis.verdicts.evidence import Evidence
from specwatch.analysis.verdicts.judging import Judging
from specwatch.analysis.view_cache import ViewCache
from specwatch.analysis.views import SliceView, Snapshot, with_causes
from specwatch.core.pacing import Pace
from specwatch.core.records import (
    EngineLogRecord,
    EngineSample,
    RequestKey,
    RequestRecord,
    SliceKey,
    SpecConfig,
    SpecLogRecord,
)
from specwatch.core.turns import finish
from specwatch.settings import Settings

_NO_ZONE = zones.ZoneState()  # read only: a slice no evaluation has judged yet
_SERVED = frozenset({C.Outcome.OBSERVED, C.Outcome.NO_SPEC_METRICS})  # vLLM answered

log = structlog.get_logger("specwatch.analysis")

__all__ = ["Analyzer", "EngineView", "SliceView", "Snapshot"]


class Analyzer:
    """Counts per slice since start and over the window; zones per slice and per model rollup.

    Request-level series (outcomes, latency and acceptance-length histograms) are keyed by the
    ctx bucket of the prompt length; step-level counts by each step's own context position.
    """

    def __init__(self, settings: Settings, started: float, fresh_engine: bool = False) -> None:
        self._cfg = settings
        self._buckets = CtxBuckets(settings.ctx_buckets)
        self._max_position = settings.limits.max_position
        self._nothing = Counts(self._max_position)  # a request that drafted nothing: no step
        self._started = started
        self._changes = 0  # counts whatever changes the analysis: see snapshot_in_turns
        self._window: SlidingWindow[SliceKey] = SlidingWindow(
            settings.window.length_seconds, settings.window.bucket_seconds, self._max_position
        )
        self._judging = Judging(settings, self._window)
        self._zones: dict[SliceKey, zones.ZoneState] = {}
        self._quiet: dict[SliceKey, tuple[int, int, Cost, bool]] = {}  # see evaluate
        self._kept = ViewCache(self._window, settings.zones.confidence)
        self._ordered = SliceOrder(self._buckets)
        self._series = RequestSeries(self._buckets, settings)
        window = settings.window
        self._engine = EngineCounters(
            window.length_seconds, window.bucket_seconds, self._max_position, fresh_engine
        )
        self._log = LogTotals()
        # per model, by the proxy: what coverage reads (draft tokens; steps, for SGLang's)
        self._drafted_seen: dict[str, int] = {}
        self._steps_seen: dict[str, int] = {}
        self._drift = DriftDetector(settings.drift)
        self._mix = TrafficMix(self._drift, settings.drift)
        self._speedup = SpeedupTracker(settings)
        self._default_cost = Cost(settings.speedup.default_cost_ratio, ASSUMED)
        self._load = LoadTracker(settings)
        self._goodput = GoodputTracker(settings, self._buckets)
        self._causes = CauseTracker(self._buckets, settings, self._window, self._goodput.k0)
        self._said_missing: set[str] = set()

    def set_config(self, config: SpecConfig | None) -> None:
        """The config the records ran under: what the verifier and schedule causes read."""
        self._changes += 1
        self._causes.set_config(config)

    @property
    def buckets(self) -> CtxBuckets:
        return self._buckets

    @property
    def load_table(self) -> LoadTable:
        """Per model and batch-size bucket, since the start (what `advise` reads)."""
        return self._load.since_start

    def _add(self, key: SliceKey, ts: float, counts: Counts) -> None:
        self._window.add(key, ts, counts)  # since start too (SlidingWindow.since_start)
        self._judging.windows.add(key, ts, counts)
        if counts.trials or not counts.drafted:  # an engine's totals have no trial to judge
            self._drift.add(key, ts, counts.accepted, counts.trials, counts.steps)
        self._mix.touched(ts)

    def ingest(self, record: RequestRecord) -> None:
        self._changes += 1
        request_key = self._series.add(record)
        model, prompt = request_key.model, record.prompt_tokens
        baseline = record.variant == C.VARIANT_BASELINE
        if baseline or record.spec is not None:
            self._speedup.add(
                model, baseline, record.ts, record.latency.tpot, record.completion_tokens
            )
        spec = record.spec
        if not baseline and record.outcome in _SERVED:
            self._causes.served(model, spec is not None or record.totals is not None)
        self._goodput.add(record, model)
        if spec is not None and not baseline:
            self._causes.drafting(model, record, spec)
        if spec is None and record.totals is not None and not baseline:
            totals, buckets, cap = record.totals, self._buckets, self._max_position
            keyed = totals_parts(model, record.task, prompt, totals, buckets, cap)
            self._spec_added(request_key, record.ts, keyed, totals.drafted, totals.accepted)
        if baseline or spec is None or not spec.steps:  # a baseline never counts as speculation
            if not baseline and spec is not None:  # it drafted nothing: its model keeps a rollup
                self._window.add(SliceKey(model, C.ALL, C.ALL), record.ts, self._nothing)
            self._load.add(record, model, baseline, None)
            return
        keyed = request_parts(model, record.task, prompt, spec, self._buckets, self._max_position)
        self._spec_added(request_key, record.ts, keyed, sum(spec.drafted), sum(spec.accepted))
        self._load.add(record, model, False, next(reversed(keyed.values())))  # the rollup's
        self._causes.add(model, record, spec, keyed)

    def _spec_added(
        self, request_key: RequestKey, ts: float, keyed: dict[SliceKey, Counts], *tokens: int
    ) -> None:
        """One request's counts into each slice and its model's rollup (the last of `keyed`);
        `tokens`: its drafted and accepted. An engine's totals go where steps go, but for
        causes and positions, which read steps (and drift, which skips counts without trials)."""
        for key, counts in keyed.items():
            self._add(key, ts, counts)
        model, (drafted, accepted) = request_key.model, tokens
        self._drafted_seen[model] = self._drafted_seen.get(model, 0) + drafted
        steps = counts.steps  # the last of `keyed`: the rollup's, which are the request's
        self._steps_seen[model] = self._steps_seen.get(model, 0) + steps
        if steps:
            self._series.observe(C.REQUEST_ACCEPTANCE_LENGTH, request_key, 1.0 + accepted / steps)

    def drift_state(self) -> dict[str, Any]:
        return self._drift.to_state()

    def restore_drift(self, data: Any) -> None:
        """Raises ValueError when `data` is not a usable drift state."""
        self._changes += 1
        self._drift.load_state(data)
        self._mix = TrafficMix(self._drift, self._cfg.drift)

    def ingest_engine(self, sample: EngineSample) -> None:
        self._changes += 1
        model = sample.model
        self._engine.observe(
            sample, self._drafted_seen.get(model, 0), self._steps_seen.get(model, 0)
        )

    def ingest_log(self, record: SpecLogRecord | EngineLogRecord) -> None:
        self._changes += 1
        self._log.add(record)

    def _windows_in_turns(
        self, now: float, step: float
    ) -> Generator[None, None, tuple[dict[SliceKey, tuple[Counts, str]], dict[str, Counts]]]:
        """Window counts per key with their source, and vLLM's own per model, read in turns
        of about `step` seconds: the window's own running totals, to read at once.

        A model whose requests carried no per-request data in the window (an older vLLM, or the
        flag missing) is judged on vLLM's own counters: its `all` slice, nothing finer.
        """
        window = yield from self._window.current_in_turns(now, step)
        engine = self._engine.window(now)
        out: dict[SliceKey, tuple[Counts, str]] = {
            key: (counts, C.SliceSource.PROXY) for key, counts in window.items()
        }
        for model, counts in engine.items():
            key = SliceKey(model, C.ALL, C.ALL)
            # the proxy's counts decide where they hold any draft: steps, or an engine's
            # totals (which have no steps)
            if counts.steps and (key not in out or not (out[key][0].steps or out[key][0].drafted)):
                out[key] = (counts, C.SliceSource.VLLM_METRICS)
        return out, engine

    def _costs(self, windows: dict[SliceKey, tuple[Counts, str]], now: float) -> dict[str, Cost]:
        """c per model, from each model's `all` window."""
        rollups = (
            (key.model, counts) for key, (counts, _) in windows.items() if key.ctx_bucket == C.ALL
        )
        cost, ratio = self._goodput.cost, self._speedup.cost_ratio
        return {model: cost(model, ratio(model, counts, now)) for model, counts in rollups}

    def _gain(
        self, key: SliceKey, counts: Counts, tau: Interval | None, now: float, cost: Cost
    ) -> Gain | None:
        rollup = key.ctx_bucket == C.ALL
        return self._speedup.gain(key.model, rollup, tau, counts.max_drafted, cost, now)

    def evaluate(self, now: float) -> None:
        """Zones and drift of every slice and rollup evaluated at once (`evaluate_in_turns`)."""
        finish(self.evaluate_in_turns(now, math.inf))

    def evaluate_in_turns(self, now: float, step: float = 0.001) -> Generator[None, None, None]:
        """`evaluate` in turns of about `step` seconds, as `snapshot_in_turns`: nothing may change
        the analysis until it is done (RuntimeError), nor read it (the sidecar's gate)."""
        self._changes += 1
        changes, rules, longest = self._changes, self._judging.thresholds, self._judging.longest
        yield from self._drift.evaluate_in_turns(now, step)
        windows, _ = yield from self._windows_in_turns(now, step)
        self._unchanged_since(changes)
        costs = self._costs(windows, now)
        self._say_missing_data(windows)
        default_cost, quiet = self._default_cost, self._quiet
        not_applicable = self._causes.verifier_cause is not None
        pace = Pace(step)
        for key, (counts, source) in windows.items():
            if pace.due():
                yield
                self._unchanged_since(changes)
                pace.restart()
            cost = costs.get(key.model, default_cost)
            # A finer slice left `settled` (zones.py) is a fixed point of the rules while its
            # windows, the cost and the verifier stay: the same evidence, a gain modelled from
            # the same tau, K and cost. Most slices of a wide deployment are, at most
            # evaluations (tests/unit/analysis/test_analyzer.py, test_zones.py).
            finer = key.ctx_bucket != C.ALL and source == C.SliceSource.PROXY
            if finer:
                window, judged = self._window.version(key), self._judging.windows.version(key, now)
                mark = (window, judged, cost, not_applicable)
                if quiet.get(key) == mark:
                    continue
            state = self._zones.get(key)
            if state is None:
                state = self._zones[key] = zones.ZoneState()
            if not_applicable:
                zones.not_judged(state, now)
                continue
            interval, tau = self._judging.intervals(key, counts, source)
            gain = self._gain(key, counts, tau, now, cost)
            evidence = self._judging.evidence(key, counts, source, now, zones.entering(state))
            change = zones.next_zone(state, evidence, now, rules, gain)
            if finer:
                if zones.settled(state, change is not None, now, rules, longest, gain):
                    quiet[key] = mark
                else:
                    quiet.pop(key, None)
            if change is not None:
                metric = self._judging.metric(counts, source)
                args = (interval, evidence, counts, source, gain, self._cfg.zones.confidence)
                zones.log_change(key, now, change, metric, *args)

    def _say_missing_data(self, windows: dict[SliceKey, tuple[Counts, str]]) -> None:
        """Once per model: vLLM counts its speculative steps, its answers carry no per-request
        data (the log line names the flags its version needs)."""
        metrics = C.SliceSource.VLLM_METRICS
        models = {key.model for key, (_, source) in windows.items() if source == metrics}
        for model in sorted(models - self._said_missing):
            if (cause := self._causes.no_data(model)) is not None:
                self._said_missing.add(model)
                log.warning("per_request_data_missing", model=model, **cause.detail)

    def since_start_sums(self) -> dict[SliceKey, Sums]:
        """alpha-hat's sums since the start, per slice and rollup the proxy saw."""
        keys = list(self._window.keys())
        return {key: Sums.of(self._window.since_start(key), "alpha") for key in keys}

    def since_start_timed(self) -> dict[Cell, DecodeSums]:
        """The goodput's decode-time sums since the start, per (model, ctx, task, load)."""
        return self._goodput.since_start()

    def evidence(self, key: SliceKey) -> Evidence | None:
        """The evidence the latest evaluation judged `key` on (None: none, or not judged)."""
        return self._judging.latest(key)

    def red_models(self) -> set[str]:
        """Models whose overall (`all`) zone is red now."""
        red = (key for key, state in self._zones.items() if state.zone == C.Zone.RED)
        return {key.model for key in red if key.ctx_bucket == C.ALL}

    def _view(
        self,
        key: SliceKey,
        counts: Counts,
        source: str,
        cost: Cost,
        now: float,
        drift: DriftView | None,
    ) -> SliceView:
        if source == C.SliceSource.PROXY:
            counts, total, stats, advice = self._kept.counts(key, counts, cost)
        else:
            counts, total = counts.copy(), self._engine.total(key.model)
            stats = SliceStats.of(counts, self._cfg.zones.confidence)
            advice = advice_for(counts, stats, cost.ratio)
        state = self._zones.get(key) or _NO_ZONE
        return SliceView(
            key=key,
            since_start=total,
            window=counts,
            stats=stats,
            zone=state.zone,
            zone_since=state.since,
            source=source,
            gain=self._gain(key, counts, stats.tau, now, cost),
            drift=drift,
            advice=advice,
            evidence=self.evidence(key),
            zone_metric=self._judging.metric(counts, source),
        )

    def snapshot(self, now: float) -> Snapshot:
        """Everything export reads at `now`, copied, in one go (`snapshot_in_turns`)."""
        return finish(self.snapshot_in_turns(now))

    def snapshot_in_turns(self, now: float, step: float = 0.001) -> Generator[None, None, Snapshot]:
        """The snapshot at `now`, taken in turns of about `step` seconds: it yields between
        them (the sidecar returns to its event loop there, runtime.ReadGate) and returns the
        snapshot. Nothing may change the analysis until it is done: a change in between makes
        it raise RuntimeError instead of mixing two moments."""
        changes = self._changes
        windows, engine_window = yield from self._windows_in_turns(now, step)
        costs = self._costs(windows, now)
        slices: list[SliceView] = []
        rollups: list[SliceView] = []
        default_cost, drift = self._default_cost, self._drift
        gates = (self._cfg.zones.min_requests, self._cfg.zones.min_trials)
        pace = Pace(step)
        for key in self._ordered(windows):
            if pace.due():
                yield
                self._unchanged_since(changes)
                pace.restart()
            counts, source = windows[key]
            cost = costs.get(key.model, default_cost)
            state = self._zones.get(key) or _NO_ZONE
            if source == C.SliceSource.PROXY and key.ctx_bucket != C.ALL:  # see analysis/kept
                verdict = drift.view(key)
                mark = self._kept.mark(
                    key, cost, state.zone, state.since, verdict, self.evidence(key)
                )
                view = self._kept.view(key, mark)
                if view is None:
                    view = self._view(key, counts, source, cost, now, verdict)
                    self._kept.keep(key, mark, view)
                slices.append(with_causes(view, self._causes, gates, now))
                continue
            view = self._view(key, counts, source, cost, now, drift.view(key))
            view = with_causes(view, self._causes, gates, now)
            (rollups if key.ctx_bucket == C.ALL else slices).append(view)
        yield
        self._unchanged_since(changes)
        engine = self._engine.views(engine_window, now, self._cfg.zones.confidence)
        mix = self._mix(now)  # (computed again once per drift bucket: ~10 ms at full size)
        yield
        self._unchanged_since(changes)
        return Snapshot(
            at=now,
            started=self._started,
            window_seconds=self._cfg.window.length_seconds,
            slices=tuple(slices),
            rollups=tuple(rollups),
            requests=dict(self._series.requests),
            latency=self._series.objectives.view(self._cfg.zones.confidence),
            tokens=self._series.tokens(),
            histograms=self._series.histograms(),
            folded_models=self._series.folded_models,
            engine=engine,
            vllm_log=replace(self._log),
            counter_resets=self._engine.resets,
            mix=mix,
            load=self._load.k_tables(None),
            load_window=self._load.k_tables(now),
            load_cells=load_cells(self._load.since_start),
            extremes={model: self._causes.extremes(model) for model in self._causes.models},
            per_request_data=self._causes.per_request_data(),
            sampling=self._causes.sampling(),
            goodput=self._goodput.views(now),
            goodput_cells=self._goodput.cells(now),
            tpot_sources={model: dict(by) for model, by in self._goodput.sources.items()},
        )

    def _unchanged_since(self, changes: int) -> None:
        if self._changes != changes:
            raise RuntimeError("the analysis changed while it was read or evaluated in turns")
