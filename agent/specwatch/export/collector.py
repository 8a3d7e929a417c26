"""A scrape-time Collector: the metric contract, rendered from one snapshot per scrape."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from specwatch import __version__
from specwatch import conventions as C
from specwatch.analysis.analyzer import SliceView, Snapshot
from specwatch.analysis.windows import Histogram
from specwatch.health import HealthSnapshot
from specwatch.model import RequestKey, SliceKey
from specwatch.settings import CostSettings
from specwatch.sources.ab import ROLLED_BACK, ROLLED_FORWARD, ABRouter

SLICE = list(C.SLICE_LABELS)
REQUEST = [*SLICE, C.LABEL_VARIANT]

Source = Callable[[], tuple[Snapshot, HealthSnapshot]]


def _task_count() -> float:
    try:
        return float(len(asyncio.all_tasks()))
    except RuntimeError:  # collected outside the event loop (a test, a CLI)
        return 0.0


def _labels(key: SliceKey) -> list[str]:
    return [key.model, key.ctx_bucket, key.task]


def _request_labels(key: RequestKey) -> list[str]:
    return [key.model, key.ctx_bucket, key.task, key.variant]


def _histogram(family: HistogramMetricFamily, labels: list[str], histogram: Histogram) -> None:
    family.add_metric(labels, buckets=histogram.cumulative(), sum_value=histogram.sum)


class SpecwatchCollector(Collector):
    """Reads a fresh snapshot at every scrape; holds no state of its own."""

    def __init__(
        self, source: Source, router: ABRouter | None = None, cost: CostSettings | None = None
    ) -> None:
        self._source = source
        self._router = router
        self._cost = cost

    def collect(self) -> Iterator[Metric]:
        snapshot, health = self._source()
        if self._router is not None and self._router.enabled:
            yield from self._ab(self._router)
        if self._cost is not None and self._cost.price_per_accelerator_hour is not None:
            yield self._replica_cost(self._cost)
        yield from self._slice_counters(snapshot)
        yield from self._requests(snapshot, health)
        yield from self._histograms(snapshot)
        yield from self._judgements(snapshot)
        yield from self._vllm(snapshot)
        yield from self._health(snapshot, health)

    @staticmethod
    def _slice_counters(snapshot: Snapshot) -> Iterator[Metric]:
        families = {
            "steps": CounterMetricFamily(
                C.SPEC_STEPS, "Speculative steps (vLLM's drafts) seen by the proxy.", labels=SLICE
            ),
            "drafted": CounterMetricFamily(C.DRAFT_TOKENS, "Draft tokens proposed.", labels=SLICE),
            "accepted": CounterMetricFamily(
                C.ACCEPTED_TOKENS, "Draft tokens accepted by the target.", labels=SLICE
            ),
            "trials": CounterMetricFamily(
                C.ACCEPTANCE_TRIALS,
                "Draft positions actually tested: accepted + 1 per step that ended in a "
                "rejection (denominator of alpha-hat).",
                labels=SLICE,
            ),
            "requests": CounterMetricFamily(
                C.SLICE_REQUESTS,
                "Requests with steps in the slice: the sampling units of its intervals.",
                labels=SLICE,
            ),
            "aa": CounterMetricFamily(
                C.REQUEST_ACCEPTED_SQUARED,
                "Sum over requests of (the request's accepted tokens in the slice)^2.",
                labels=SLICE,
            ),
            "at": CounterMetricFamily(
                C.REQUEST_ACCEPTED_X_TRIALS,
                "Sum over requests of the request's accepted tokens x its trials in the slice.",
                labels=SLICE,
            ),
            "tt": CounterMetricFamily(
                C.REQUEST_TRIALS_SQUARED,
                "Sum over requests of (the request's trials in the slice)^2.",
                labels=SLICE,
            ),
        }
        by_position = CounterMetricFamily(
            C.ACCEPTED_BY_POSITION,
            "Steps whose draft position `position` (1..K) was accepted.",
            labels=[*SLICE, C.LABEL_POSITION],
        )
        for view in snapshot.slices:
            labels, total = _labels(view.key), view.since_start
            families["steps"].add_metric(labels, total.steps)
            families["drafted"].add_metric(labels, total.drafted)
            families["accepted"].add_metric(labels, total.accepted)
            families["trials"].add_metric(labels, total.trials)
            families["requests"].add_metric(labels, total.requests)
            families["aa"].add_metric(labels, total.aa)
            families["at"].add_metric(labels, total.at)
            families["tt"].add_metric(labels, total.tt)
            for i, n in enumerate(total.by_position[: total.max_drafted]):
                by_position.add_metric([*labels, str(i + 1)], n)
        yield from families.values()
        yield by_position

    @staticmethod
    def _requests(snapshot: Snapshot, health: HealthSnapshot) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            C.REQUESTS,
            "Requests to observed endpoints, each in exactly one outcome; ctx_bucket is the "
            "prompt length's bucket.",
            labels=[*REQUEST, C.LABEL_OUTCOME],
        )
        for (key, outcome), n in sorted(snapshot.requests.items(), key=lambda kv: str(kv[0])):
            requests.add_metric([*_request_labels(key), outcome], n)
        for variant, n in sorted(health.dropped_by_variant.items()):
            requests.add_metric([C.OTHER, C.UNKNOWN_CTX, C.OTHER, variant, C.Outcome.DROPPED], n)
        yield requests
        prompt = CounterMetricFamily(C.PROMPT_TOKENS, "Prompt tokens.", labels=REQUEST)
        completion = CounterMetricFamily(C.COMPLETION_TOKENS, "Completion tokens.", labels=REQUEST)
        for key, (p, c) in snapshot.tokens.items():
            prompt.add_metric(_request_labels(key), p)
            completion.add_metric(_request_labels(key), c)
        yield prompt
        yield completion

    @staticmethod
    def _histograms(snapshot: Snapshot) -> Iterator[Metric]:
        docs = {
            C.REQUEST_ACCEPTANCE_LENGTH: "Mean acceptance length (tau) of each request.",
            C.TTFT_SECONDS: "Time to first token, as vLLM measured it (else as the proxy did).",
            C.TPOT_SECONDS: "Time per output token after the first.",
            C.REQUEST_DURATION_SECONDS: "Request duration as the client saw it through the proxy.",
        }
        for name, per_key in snapshot.histograms.items():
            family = HistogramMetricFamily(name, docs[name], labels=REQUEST)
            for key, histogram in per_key.items():
                _histogram(family, _request_labels(key), histogram)
            yield family

    @staticmethod
    def _judgements(snapshot: Snapshot) -> Iterator[Metric]:
        zone = GaugeMetricFamily(
            C.ZONE,
            "1 for the slice's current zone, 0 for the others.",
            labels=[*SLICE, C.LABEL_ZONE],
        )
        alpha = GaugeMetricFamily(
            C.ACCEPTANCE_ALPHA,
            "Per-token acceptance alpha-hat over the window, with its request-level bounds.",
            labels=[*SLICE, C.LABEL_BOUND],
        )
        rate = GaugeMetricFamily(
            C.ACCEPTANCE_RATE,
            "vLLM's acceptance rate (accepted / drafted) over the window.",
            labels=SLICE,
        )
        tau = GaugeMetricFamily(
            C.MEAN_ACCEPTANCE_LENGTH, "Mean tokens per step over the window.", labels=SLICE
        )
        trials = GaugeMetricFamily(
            C.WINDOW_TRIALS, "Acceptance trials in the window (evidence).", labels=SLICE
        )
        window_requests = GaugeMetricFamily(
            C.WINDOW_REQUESTS, "Requests with steps in the window (evidence).", labels=SLICE
        )
        gain = GaugeMetricFamily(
            C.ESTIMATED_GAIN_RATIO,
            "Speedup of speculation over none: measured against a baseline, or modelled as "
            "tau / (1 + K c), with its request-level bounds. An upper bound below 1: "
            "speculation is slower.",
            labels=[*SLICE, C.LABEL_METHOD, C.LABEL_BOUND],
        )
        drift_statistic = GaugeMetricFamily(
            C.DRIFT_STATISTIC,
            "The slice's lower CUSUM on acceptance against its baseline (alarm above the "
            "threshold); absent while the slice has too little baseline.",
            labels=SLICE,
        )
        drift_alarm = GaugeMetricFamily(
            C.DRIFT_ALARM, "1 while the slice's drift alarm is on.", labels=SLICE
        )
        views: tuple[SliceView, ...] = snapshot.slices + snapshot.rollups
        for view in views:
            labels = _labels(view.key)
            for name in C.Zone.ALL:
                zone.add_metric([*labels, name], 1.0 if view.zone == name else 0.0)
            stats = view.stats
            if stats.alpha is not None:
                alpha.add_metric([*labels, C.BOUND_ESTIMATE], stats.alpha.estimate)
                alpha.add_metric([*labels, C.BOUND_LOWER], stats.alpha.lower)
                alpha.add_metric([*labels, C.BOUND_UPPER], stats.alpha.upper)
            if stats.rate is not None:
                rate.add_metric(labels, stats.rate.estimate)
            if stats.tau is not None:
                tau.add_metric(labels, stats.tau.estimate)
            trials.add_metric(labels, view.window.trials)
            window_requests.add_metric(labels, view.window.requests)
            if view.gain is not None:
                g = view.gain
                gain.add_metric([*labels, g.method, C.BOUND_ESTIMATE], g.ratio)
                gain.add_metric([*labels, g.method, C.BOUND_LOWER], g.lower)
                gain.add_metric([*labels, g.method, C.BOUND_UPPER], g.upper)
            if view.drift is not None and view.drift.statistic is not None:
                drift_statistic.add_metric(labels, view.drift.statistic)
                drift_alarm.add_metric(labels, 1.0 if view.drift.alarm else 0.0)
        yield from (zone, alpha, rate, tau, trials, window_requests, gain)
        yield from (drift_statistic, drift_alarm)
        advised = GaugeMetricFamily(
            C.ADVISED_NUM_SPECULATIVE_TOKENS,
            "The draft length K with the best predicted speedup from measured per-position "
            "acceptance over the window (0: speculation does not pay).",
            labels=[C.LABEL_MODEL],
        )
        for view in snapshot.rollups:
            if view.advice is not None:
                advised.add_metric([view.key.model], view.advice.best_k)
        yield advised
        mix_psi = GaugeMetricFamily(
            C.TRAFFIC_MIX_PSI,
            "PSI of the recent traffic mix against the drift baseline period (0.1 moderate, "
            "0.25 major).",
            labels=[C.LABEL_MODEL, C.LABEL_DIMENSION],
        )
        change = GaugeMetricFamily(
            C.ACCEPTANCE_CHANGE,
            "Change of the overall alpha-hat, recent period against baseline, split into the "
            "traffic mix's part and the slices' own (rate) part.",
            labels=[C.LABEL_MODEL, C.LABEL_PART],
        )
        for model, mix in (snapshot.mix or {}).items():
            mix_psi.add_metric([model, C.LABEL_CTX_BUCKET], mix.psi_ctx_bucket)
            mix_psi.add_metric([model, C.LABEL_TASK], mix.psi_task)
            d = mix.decomposition
            change.add_metric([model, "mix"], d.mix)
            change.add_metric([model, "rate"], d.rate)
            change.add_metric([model, "total"], d.total)
        yield from (mix_psi, change)

    @staticmethod
    def _vllm(snapshot: Snapshot) -> Iterator[Metric]:
        coverage = GaugeMetricFamily(
            C.COVERAGE_RATIO,
            "Draft tokens seen by the proxy / counted by vLLM over the window (1: nothing "
            "bypassed the proxy; below 1: requests bypassed it, or were aborted mid-stream).",
            labels=[C.LABEL_MODEL],
        )
        alpha = GaugeMetricFamily(
            C.VLLM_ACCEPTANCE_ALPHA,
            "vLLM's engine-wide alpha-hat over the window, from its own counters (reference).",
            labels=[C.LABEL_MODEL, C.LABEL_BOUND],
        )
        rate = GaugeMetricFamily(
            C.VLLM_ACCEPTANCE_RATE,
            "vLLM's engine-wide acceptance rate over the window, from its own counters.",
            labels=[C.LABEL_MODEL],
        )
        for view in snapshot.engine:
            if view.coverage is not None:
                coverage.add_metric([view.model], view.coverage)
            if view.stats.alpha is not None:
                a = view.stats.alpha
                alpha.add_metric([view.model, C.BOUND_ESTIMATE], a.estimate)
                alpha.add_metric([view.model, C.BOUND_LOWER], a.lower)
                alpha.add_metric([view.model, C.BOUND_UPPER], a.upper)
            if view.stats.rate is not None:
                rate.add_metric([view.model], view.stats.rate.estimate)
        yield from (coverage, alpha, rate)
        yield CounterMetricFamily(
            C.VLLM_COUNTER_RESETS,
            "Times vLLM's counters went backwards (a vLLM restart).",
            value=snapshot.counter_resets,
        )
        totals = snapshot.vllm_log
        if totals is not None:
            yield CounterMetricFamily(
                C.VLLM_LOG_SPEC_LINES, "`SpecDecoding metrics` lines read.", value=totals.lines
            )
            yield CounterMetricFamily(
                C.VLLM_LOG_ACCEPTED_TOKENS,
                "Accepted tokens according to vLLM's log lines.",
                value=totals.accepted,
            )
            yield CounterMetricFamily(
                C.VLLM_LOG_DRAFT_TOKENS,
                "Draft tokens according to vLLM's log lines.",
                value=totals.drafted,
            )

    @staticmethod
    def _replica_cost(cost: CostSettings) -> Metric:
        family = GaugeMetricFamily(
            C.REPLICA_COST_PER_HOUR,
            "What the replica behind this sidecar costs per hour (price x accelerators), by "
            "variant; divided by output tokens/s it gives the cost per token.",
            labels=[C.LABEL_VARIANT],
        )
        n = cost.accelerators_per_replica
        assert cost.price_per_accelerator_hour is not None
        family.add_metric([C.VARIANT_SPEC], cost.price_per_accelerator_hour * n)
        if cost.baseline_price_per_accelerator_hour is not None:
            family.add_metric([C.VARIANT_BASELINE], cost.baseline_price_per_accelerator_hour * n)
        return family

    @staticmethod
    def _ab(router: ABRouter) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            C.AB_BASELINE_SHARE,
            "Configured share of traffic (by key hash) sent to the baseline upstream, 0..1.",
            value=router.cfg.baseline_percent / 100.0,
        )
        yield GaugeMetricFamily(
            C.AB_ROLLED_BACK,
            "1 while rolled back: every request goes to the baseline upstream.",
            value=1.0 if router.rolled_back else 0.0,
        )
        switches = CounterMetricFamily(
            C.AB_SWITCHES,
            "Rollback switches, by direction and by what switched (admin, file, auto).",
            labels=[C.LABEL_TO, C.LABEL_SOURCE],
        )
        for to in (ROLLED_BACK, ROLLED_FORWARD):
            for source in C.AB_SOURCES:
                switches.add_metric([to, source], router.switches[to, source])
        yield switches

    @staticmethod
    def _health(snapshot: Snapshot, health: HealthSnapshot) -> Iterator[Metric]:
        errors = CounterMetricFamily(
            C.PARSE_ERRORS,
            "Inputs specwatch could not read, by source and reason.",
            labels=[C.LABEL_SOURCE, C.LABEL_REASON],
        )
        for (source, reason), n in sorted(health.parse_errors.items()):
            errors.add_metric([source, reason], n)
        yield errors
        passthrough = CounterMetricFamily(
            C.PASSTHROUGH_REQUESTS,
            "Requests to other paths, passed through unobserved.",
            labels=[C.LABEL_STATUS_CLASS],
        )
        for status_class, n in sorted(health.passthrough.items()):
            passthrough.add_metric([status_class], n)
        yield passthrough
        folded = CounterMetricFamily(
            C.FOLDED_LABEL_VALUES,
            "Requests whose label value was folded into `other` by a cardinality cap.",
            labels=[C.LABEL_LABEL],
        )
        folded.add_metric([C.LABEL_MODEL], snapshot.folded_models)
        yield folded
        yield GaugeMetricFamily(
            C.ASYNCIO_TASKS,
            "Tasks alive in specwatch's event loop (a leak shows as growth).",
            value=_task_count(),
        )
        yield CounterMetricFamily(
            C.CYCLE_LOG_ERRORS,
            "Cycle-log lines that could not be written.",
            value=health.cycle_log_errors,
        )
        yield CounterMetricFamily(
            C.ANALYSIS_ERRORS,
            "Observations the analysis failed on (a bug: see the log).",
            value=health.analysis_errors,
        )
        overhead = HistogramMetricFamily(
            C.PROXY_OVERHEAD_SECONDS,
            "Time the proxy spends on a request before forwarding it upstream.",
        )
        _histogram(overhead, [], health.proxy_overhead)
        yield overhead
        if health.upstream_up is not None:
            yield GaugeMetricFamily(
                C.UPSTREAM_UP,
                "1 when the upstream's /health answered 200 at the last scrape.",
                value=1.0 if health.upstream_up else 0.0,
            )
        comparisons = CounterMetricFamily(
            C.SHADOW_COMPARISONS,
            "Greedy requests whose output was compared with the baseline's (shadow check).",
            labels=[C.LABEL_MODEL],
        )
        divergences = CounterMetricFamily(
            C.OUTPUT_DIVERGENCE,
            "Shadow comparisons whose outputs differed: speculation was not lossless.",
            labels=[C.LABEL_MODEL],
        )
        for model, n in sorted(health.shadow_comparisons.items()):
            comparisons.add_metric([model], n)
            divergences.add_metric([model], health.shadow_divergences.get(model, 0))
        skipped = CounterMetricFamily(
            C.SHADOW_SKIPPED,
            "Shadow comparisons not made: too many in flight, or the baseline failed.",
            labels=[C.LABEL_REASON],
        )
        for reason, n in sorted(health.shadow_skipped.items()):
            skipped.add_metric([reason], n)
        yield from (comparisons, divergences, skipped)
        info = InfoMetricFamily(C.BUILD_INFO.removesuffix("_info"), "specwatch build.")
        info.add_metric([], {"version": __version__})
        yield info
