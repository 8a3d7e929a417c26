"""A scrape-time Collector: the metric contract, rendered from one reading per scrape.

Names, help texts and label names come from the metric table (conventions.METRICS); this module
only fills in values. It holds no state of its own and never touches live objects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

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
from specwatch.analysis.stats import Interval
from specwatch.analysis.windows import Histogram
from specwatch.export.status import Reading
from specwatch.health import HealthSnapshot
from specwatch.model import ABState, RequestKey, SliceKey
from specwatch.settings import CostSettings

_FAMILIES: dict[C.Kind, Any] = {
    C.Kind.COUNTER: CounterMetricFamily,
    C.Kind.GAUGE: GaugeMetricFamily,
    C.Kind.HISTOGRAM: HistogramMetricFamily,
}


def family(name: str) -> Any:
    """An empty family of metric `name`, as the metric table describes it."""
    spec = C.METRICS[name]
    return _FAMILIES[spec.kind](spec.name, spec.help, labels=list(spec.labels))


def _labels(key: SliceKey | RequestKey) -> list[str]:
    return list(key)


def _bounds(target: Any, labels: list[str], interval: Interval) -> None:
    target.add_metric([*labels, C.Bound.ESTIMATE], interval.estimate)
    target.add_metric([*labels, C.Bound.LOWER], interval.lower)
    target.add_metric([*labels, C.Bound.UPPER], interval.upper)


def _histogram(target: Any, labels: list[str], histogram: Histogram) -> None:
    target.add_metric(labels, buckets=histogram.cumulative(), sum_value=histogram.sum)


def _task_count() -> float:
    try:
        return float(len(asyncio.all_tasks()))
    except RuntimeError:  # collected outside the event loop (a test, a CLI)
        return 0.0


class SpecwatchCollector(Collector):
    """Reads a fresh reading at every scrape."""

    def __init__(self, read: Callable[[], Reading], cost: CostSettings | None = None) -> None:
        self._read = read
        self._cost = cost

    def collect(self) -> Iterator[Metric]:
        reading = self._read()
        snapshot = reading.snapshot
        if reading.ab is not None and reading.ab.enabled:
            yield from self._ab(reading.ab)
        if self._cost is not None and self._cost.price_per_accelerator_hour is not None:
            yield self._replica_cost(self._cost)
        yield from self._slice_counters(snapshot)
        yield from self._requests(snapshot, reading.health)
        yield from self._histograms(snapshot)
        yield from self._judgements(snapshot)
        yield from self._advice_and_mix(snapshot)
        yield from self._by_load(snapshot)
        yield from self._vllm(snapshot)
        if reading.health is not None:
            yield from self._health(snapshot, reading.health)
        info = InfoMetricFamily(C.BUILD_INFO.removesuffix("_info"), C.METRICS[C.BUILD_INFO].help)
        info.add_metric([], {C.Label.VERSION: __version__})
        yield info

    @staticmethod
    def _slice_counters(snapshot: Snapshot) -> Iterator[Metric]:
        values: dict[str, Callable[[Any], int]] = {
            C.SPEC_STEPS: lambda c: c.steps,
            C.DRAFT_TOKENS: lambda c: c.drafted,
            C.ACCEPTED_TOKENS: lambda c: c.accepted,
            C.ACCEPTANCE_TRIALS: lambda c: c.trials,
            C.SLICE_REQUESTS: lambda c: c.requests,
            C.REQUEST_ACCEPTED_SQUARED: lambda c: c.aa,
            C.REQUEST_ACCEPTED_X_TRIALS: lambda c: c.at,
            C.REQUEST_TRIALS_SQUARED: lambda c: c.tt,
        }
        families = {name: family(name) for name in values}
        by_position = family(C.ACCEPTED_BY_POSITION)
        drafted_by_position = family(C.DRAFTED_BY_POSITION)
        for view in snapshot.slices:
            labels, total = _labels(view.key), view.since_start
            for name, value in values.items():
                families[name].add_metric(labels, value(total))
            k = total.max_drafted
            pairs = zip(total.by_position[:k], total.drafted_by_position[:k], strict=True)
            for i, (n, m) in enumerate(pairs):
                position = [*labels, str(i + 1)]
                by_position.add_metric(position, n)
                drafted_by_position.add_metric(position, m)
        yield from families.values()
        yield by_position
        yield drafted_by_position
        steps, accepted = family(C.DRAFT_LENGTH_STEPS), family(C.DRAFT_LENGTH_ACCEPTED)
        for view in snapshot.rollups:
            for d, n, a in view.since_start.by_drafted_length():
                steps.add_metric([view.key.model, str(d)], n)
                accepted.add_metric([view.key.model, str(d)], a)
        yield from (steps, accepted)

    @staticmethod
    def _requests(snapshot: Snapshot, health: HealthSnapshot | None) -> Iterator[Metric]:
        requests = family(C.REQUESTS)
        for (key, outcome), n in sorted(snapshot.requests.items(), key=lambda kv: str(kv[0])):
            requests.add_metric([*_labels(key), outcome], n)
        for variant, n in sorted((health.dropped_by_variant if health else {}).items()):
            requests.add_metric([C.OTHER, C.UNKNOWN_CTX, C.OTHER, variant, C.Outcome.DROPPED], n)
        yield requests
        prompt, completion = family(C.PROMPT_TOKENS), family(C.COMPLETION_TOKENS)
        for key, (p, c) in snapshot.tokens.items():
            prompt.add_metric(_labels(key), p)
            completion.add_metric(_labels(key), c)
        yield prompt
        yield completion

    @staticmethod
    def _histograms(snapshot: Snapshot) -> Iterator[Metric]:
        for name, per_key in snapshot.histograms.items():
            target = family(name)
            for key, histogram in per_key.items():
                _histogram(target, _labels(key), histogram)
            yield target

    @staticmethod
    def _judgements(snapshot: Snapshot) -> Iterator[Metric]:
        names = (C.ZONE, C.ACCEPTANCE_ALPHA, C.ACCEPTANCE_RATE, C.MEAN_ACCEPTANCE_LENGTH,
                 C.WINDOW_TRIALS, C.WINDOW_REQUESTS, C.ESTIMATED_GAIN_RATIO,
                 C.DRIFT_STATISTIC, C.DRIFT_ALARM)  # fmt: skip
        f = {name: family(name) for name in names}
        views: tuple[SliceView, ...] = snapshot.slices + snapshot.rollups
        for view in views:
            labels = _labels(view.key)
            for zone in C.Zone:
                f[C.ZONE].add_metric([*labels, zone], 1.0 if view.zone == zone else 0.0)
            stats = view.stats
            if stats.alpha is not None:
                _bounds(f[C.ACCEPTANCE_ALPHA], labels, stats.alpha)
            if stats.rate is not None:
                f[C.ACCEPTANCE_RATE].add_metric(labels, stats.rate.estimate)
            if stats.tau is not None:
                f[C.MEAN_ACCEPTANCE_LENGTH].add_metric(labels, stats.tau.estimate)
            f[C.WINDOW_TRIALS].add_metric(labels, view.window.trials)
            f[C.WINDOW_REQUESTS].add_metric(labels, view.window.requests)
            if view.gain is not None:
                gain = view.gain
                interval = Interval(gain.ratio, gain.lower, gain.upper)
                _bounds(f[C.ESTIMATED_GAIN_RATIO], [*labels, gain.method], interval)
            if view.drift is not None and view.drift.statistic is not None:
                f[C.DRIFT_STATISTIC].add_metric(labels, view.drift.statistic)
                f[C.DRIFT_ALARM].add_metric(labels, 1.0 if view.drift.alarm else 0.0)
        yield from f.values()

    @staticmethod
    def _advice_and_mix(snapshot: Snapshot) -> Iterator[Metric]:
        advised = family(C.ADVISED_NUM_SPECULATIVE_TOKENS)
        for view in snapshot.rollups:
            if view.advice is not None:
                advised.add_metric([view.key.model], view.advice.best_k)
        yield advised
        psi, change = family(C.TRAFFIC_MIX_PSI), family(C.ACCEPTANCE_CHANGE)
        for model, mix in (snapshot.mix or {}).items():
            psi.add_metric([model, C.Label.CTX_BUCKET], mix.psi_ctx_bucket)
            psi.add_metric([model, C.Label.TASK], mix.psi_task)
            d = mix.decomposition
            change.add_metric([model, C.MixPart.MIX], d.mix)
            change.add_metric([model, C.MixPart.RATE], d.rate)
            change.add_metric([model, C.MixPart.TOTAL], d.total)
        yield from (psi, change)

    @staticmethod
    def _by_load(snapshot: Snapshot) -> Iterator[Metric]:
        """Model x batch-size bucket: counters since the start, the K table, windowed gains."""
        accepted, trials = family(C.LOAD_ACCEPTED_TOKENS), family(C.LOAD_ACCEPTANCE_TRIALS)
        seconds, tokens = family(C.LOAD_DECODE_SECONDS), family(C.LOAD_DECODE_TOKENS)
        for cell in snapshot.load_cells:
            labels = [cell.model, cell.load]
            accepted.add_metric(labels, cell.accepted)
            trials.add_metric(labels, cell.trials)
            for variant, value in cell.decode_seconds.items():
                seconds.add_metric([*labels, variant], value)
                tokens.add_metric([*labels, variant], cell.decode_tokens[variant])
        yield from (accepted, trials, seconds, tokens)
        advised = family(C.LOAD_ADVISED_K)
        for table in snapshot.load:
            for row in table.ranges:
                advised.add_metric([table.model, row.label], row.k)
        gains = family(C.LOAD_GAIN_RATIO)
        for table in snapshot.load_window:
            for row in table.ranges:
                if row.method is not None and row.gain is not None:
                    lower = row.gain if row.lower is None else row.lower
                    upper = row.gain if row.upper is None else row.upper
                    interval = Interval(row.gain, lower, upper)
                    _bounds(gains, [table.model, row.label, row.method], interval)
        yield from (advised, gains)

    @staticmethod
    def _vllm(snapshot: Snapshot) -> Iterator[Metric]:
        coverage = family(C.COVERAGE_RATIO)
        alpha, rate = family(C.VLLM_ACCEPTANCE_ALPHA), family(C.VLLM_ACCEPTANCE_RATE)
        running = family(C.VLLM_RUNNING)
        for view in snapshot.engine:
            if view.coverage is not None:
                coverage.add_metric([view.model], view.coverage)
            if view.running is not None:
                running.add_metric([view.model], view.running)
            if view.stats.alpha is not None:
                _bounds(alpha, [view.model], view.stats.alpha)
            if view.stats.rate is not None:
                rate.add_metric([view.model], view.stats.rate.estimate)
        yield from (coverage, alpha, rate, running)
        resets = family(C.VLLM_COUNTER_RESETS)
        resets.add_metric([], snapshot.counter_resets)
        yield resets
        totals = snapshot.vllm_log
        if totals is not None:
            for name, value in ((C.VLLM_LOG_SPEC_LINES, totals.lines),
                                (C.VLLM_LOG_ACCEPTED_TOKENS, totals.accepted),
                                (C.VLLM_LOG_DRAFT_TOKENS, totals.drafted)):  # fmt: skip
                target = family(name)
                target.add_metric([], value)
                yield target

    @staticmethod
    def _replica_cost(cost: CostSettings) -> Metric:
        target = family(C.REPLICA_COST_PER_HOUR)
        n = cost.accelerators_per_replica
        assert cost.price_per_accelerator_hour is not None
        target.add_metric([C.Variant.SPEC], cost.price_per_accelerator_hour * n)
        if cost.baseline_price_per_accelerator_hour is not None:
            target.add_metric([C.Variant.BASELINE], cost.baseline_price_per_accelerator_hour * n)
        return target  # type: ignore[no-any-return]  # a family built from the table

    @staticmethod
    def _ab(ab: ABState) -> Iterator[Metric]:
        share, rolled = family(C.AB_BASELINE_SHARE), family(C.AB_ROLLED_BACK)
        share.add_metric([], ab.baseline_percent / 100.0)
        rolled.add_metric([], 1.0 if ab.rolled_back else 0.0)
        switches = family(C.AB_SWITCHES)
        for (to, source), n in sorted(ab.switches.items()):
            switches.add_metric([to, source], n)
        yield from (share, rolled, switches)

    @staticmethod
    def _health(snapshot: Snapshot, health: HealthSnapshot) -> Iterator[Metric]:
        errors = family(C.PARSE_ERRORS)
        for (source, reason), n in sorted(health.parse_errors.items()):
            errors.add_metric([source, reason], n)
        passthrough = family(C.PASSTHROUGH_REQUESTS)
        for status_class, n in sorted(health.passthrough.items()):
            passthrough.add_metric([status_class], n)
        folded = family(C.FOLDED_LABEL_VALUES)
        folded.add_metric([C.Label.MODEL], snapshot.folded_models)
        yield from (errors, passthrough, folded)
        for name, value in ((C.ASYNCIO_TASKS, _task_count()),
                            (C.CYCLE_LOG_ERRORS, health.cycle_log_errors),
                            (C.ANALYSIS_ERRORS, health.analysis_errors)):  # fmt: skip
            target = family(name)
            target.add_metric([], value)
            yield target
        in_flight = family(C.UPSTREAM_IN_FLIGHT)
        for variant, n in sorted(health.in_flight.items()):
            in_flight.add_metric([variant], n)
        yield in_flight
        overhead = family(C.PROXY_OVERHEAD_SECONDS)
        _histogram(overhead, [], health.proxy_overhead)
        yield overhead
        if health.upstream_up is not None:
            up = family(C.UPSTREAM_UP)
            up.add_metric([], 1.0 if health.upstream_up else 0.0)
            yield up
        comparisons, divergences = family(C.SHADOW_COMPARISONS), family(C.OUTPUT_DIVERGENCE)
        for model, n in sorted(health.shadow_comparisons.items()):
            comparisons.add_metric([model], n)
            divergences.add_metric([model], health.shadow_divergences.get(model, 0))
        skipped = family(C.SHADOW_SKIPPED)
        for reason, n in sorted(health.shadow_skipped.items()):
            skipped.add_metric([reason], n)
        yield from (comparisons, divergences, skipped)
