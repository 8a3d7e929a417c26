"""A scrape-time Collector: the metric contract, rendered from one reading per scrape.

Names, help texts and label names come from the metric table (conventions.METRICS); this module
only fills in values, as groups of samples (export/families.py) that the text writer
(export/exposition.py) renders and prometheus-client's families mirror (`collect`, for a
registry and its `get_sample_value`). It never touches live objects. What it keeps from one
reading to the next is only what it made: a slice's groups, made again when the values they
come from changed (`_Kept`), so that at a scrape the writer meets the very tuples it wrote
last time for every quiet slice.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable, Iterator
from operator import attrgetter, itemgetter
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from specwatch import __version__
from specwatch import conventions as C
from specwatch.analysis.analyzer import SliceView, Snapshot
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.speed.speedup import INSUFFICIENT
from specwatch.core.health import HealthSnapshot
from specwatch.core.records import RequestKey, SpecConfig
from specwatch.core.turns import finish
from specwatch.export import model_families, ops_families
from specwatch.export.families import Family, Group, bounds_group, histogram_group, run_labels
from specwatch.export.model_families import Run
from specwatch.export.reading import Reading
from specwatch.settings import CostSettings

# a slice's since-start counters: the family and the Counts attribute it reads
_SLICE_COUNTERS = (
    (C.SPEC_STEPS, "steps"),
    (C.DRAFT_TOKENS, "drafted"),
    (C.ACCEPTED_TOKENS, "accepted"),
    (C.ACCEPTANCE_TRIALS, "trials"),
    (C.SLICE_REQUESTS, "requests"),
    (C.REQUEST_ACCEPTED_SQUARED, "aa"),
    (C.REQUEST_ACCEPTED_X_TRIALS, "at"),
    (C.REQUEST_TRIALS_SQUARED, "tt"),
)
_SINCE_START = attrgetter(*(attribute for _, attribute in _SLICE_COUNTERS))
# a model's request moments: its rollup counts each request once, with its whole sums
_MODEL_COUNTERS = (
    C.MODEL_REQUESTS,
    C.MODEL_REQUEST_ACCEPTED_SQUARED,
    C.MODEL_REQUEST_ACCEPTED_X_TRIALS,
    C.MODEL_REQUEST_TRIALS_SQUARED,
)
_MODEL_MOMENTS = attrgetter("requests", "aa", "at", "tt")
_COUNTER_NAMES = tuple(name for name, _ in _SLICE_COUNTERS)
_BOUNDS = (C.Bound.ESTIMATE.value, C.Bound.LOWER.value, C.Bound.UPPER.value)
_ZONES = tuple(zone.value for zone in C.Zone)
_ONE_HOT: dict[str, tuple[float, ...]] = {
    zone: tuple(1.0 if z == zone else 0.0 for z in C.Zone) for zone in C.Zone
}
_NONE_HOT = (0.0,) * len(_ZONES)


_Outcome = tuple[RequestKey, str]  # a request slice and an outcome: a requests_total series
_JUDGEMENTS = (
    C.ZONE,
    C.ACCEPTANCE_ALPHA,
    C.ACCEPTANCE_RATE,
    C.MEAN_ACCEPTANCE_LENGTH,
    C.WINDOW_TRIALS,
    C.WINDOW_REQUESTS,
    C.ESTIMATED_GAIN_RATIO,
    C.DRIFT_STATISTIC,
    C.DRIFT_ALARM,
)


def _counter_groups(labels: tuple[str, ...], total: Counts) -> tuple[Group, ...]:
    """A slice's group in each since-start counter family, then its two per-position runs
    (up to the largest K drafted, but not past the positions counted: limits.max_position)."""
    k = min(total.max_drafted, len(total.by_position))
    positions = run_labels(k)
    return (
        *[(labels, None, (value,)) for value in _SINCE_START(total)],
        (labels, positions, tuple(total.by_position[:k])),
        (labels, positions, tuple(total.drafted_by_position[:k])),
    )


def _columns(names: tuple[str, ...], parts: list[tuple[Group | None, ...]]) -> Iterator[Family]:
    """Family `names[i]` holds every part's i-th group, in the parts' order."""
    for i, name in enumerate(names):
        target = Family(name)
        target.groups = list(map(itemgetter(i), parts))
        yield target


def _judgement_groups(view: SliceView, run: Run) -> tuple[Group | None, ...]:
    """A slice's or rollup's group in each of `_JUDGEMENTS`, None where it has none."""
    labels, stats, gain = (*view.key, *run), view.stats, view.gain
    statistic = None if view.drift is None else view.drift.statistic
    alarm = view.drift is not None and view.drift.alarm
    return (
        (labels, _ZONES, _ONE_HOT.get(view.zone, _NONE_HOT)),
        bounds_group(labels, stats.alpha),
        None if stats.rate is None else (labels, None, (stats.rate.estimate,)),
        None if stats.tau is None else (labels, None, (stats.tau.estimate,)),
        (labels, None, (view.window.trials,)),
        (labels, None, (view.window.requests,)),
        None
        if gain is None or gain.method == INSUFFICIENT
        else ((*labels, gain.method), _BOUNDS, (gain.ratio, gain.lower, gain.upper)),
        None if statistic is None else (labels, None, (statistic,)),
        None if statistic is None else (labels, None, (1.0 if alarm else 0.0,)),
    )


def _causes(snapshot: Snapshot, run: Run) -> list[Family]:
    """A series per cause found (few: most slices have none) and per numeric field of it, the
    extremes per model, and acceptance per sampling mode."""
    causes, details = Family(C.CAUSE), Family(C.CAUSE_DETAIL)
    extremes = Family(C.EXTREME_REQUESTS)
    for view in snapshot.slices + snapshot.rollups:
        for cause in view.causes:
            labels = (*view.key, *run, cause.kind)
            causes.add(labels, 1.0)
            for name, value in sorted(cause.detail.items()):
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    details.add((*labels, name), float(value))
    for model, kinds in sorted((snapshot.extremes or {}).items()):
        for kind in C.Extreme:
            extremes.add((model, *run, kind), kinds.get(kind, 0))
    sampling = [Family(f) for f in (C.SAMPLING_REQUESTS, C.SAMPLING_ACCEPTED, C.SAMPLING_TRIALS)]
    for model, modes in sorted(snapshot.sampling.items()):
        for mode, seen in modes.items():
            values = (seen.requests, seen.accepted, seen.trials)
            for family, value in zip(sampling, values, strict=True):
                family.add((model, *run, mode), value)
    return [causes, details, extremes, *sampling]


def _config_info(config: SpecConfig) -> Family:
    info = Family(C.SPEC_CONFIG_INFO)
    k = config.num_speculative_tokens
    optional = (config.method, config.draft, None if k is None else str(k), config.vllm_version)
    labels = (
        config.id,
        config.track,
        *(value or "" for value in optional),
        config.speculation,
        config.engine,
    )
    info.add(labels, 1.0)
    return info


class _Kept:
    """Groups by key with the values they were made from, for the next reading: when a key's
    values are equal (compared as values, at once when they are the same objects, as the
    analysis' snapshots share a quiet slice's), its groups are the ones made before. Holds the
    keys of the last reading only."""

    __slots__ = ("_before", "_now")

    def __init__(self) -> None:
        self._before: dict[Hashable, tuple[object, Any]] = {}
        self._now: dict[Hashable, tuple[object, Any]] = {}

    def turn(self) -> None:
        """A new reading: what the last one made is what this one may reuse."""
        if self._now:
            self._before, self._now = self._now, {}

    def get(self, key: Hashable, inputs: object) -> Any | None:
        """The groups kept for `key` if made from equal inputs (never empty: `get() or put()`)."""
        kept = self._before.get(key)
        if kept is None or (kept[0] is not inputs and kept[0] != inputs):
            return None
        self._now[key] = kept
        return kept[1]

    def put(self, key: Hashable, inputs: object, groups: Any) -> Any:
        self._now[key] = (inputs, groups)
        return groups


class SpecwatchCollector(Collector):
    """Reads a fresh reading at every scrape."""

    def __init__(self, read: Callable[[], Reading], cost: CostSettings | None = None) -> None:
        self._read = read
        self._cost = cost
        self._counters, self._judged = _Kept(), _Kept()
        self._histogram: dict[str, _Kept] = {}  # per family
        # the requests' (key, outcome)s sorted, with their labels, while no key comes or goes
        self._request_order: tuple[set[_Outcome], list[tuple[_Outcome, tuple[str, ...]]]]
        self._request_order = (set(), [])
        self._run: Run | None = None

    def collect(self) -> Iterator[Metric]:
        for target in self.families():
            yield target.to_metric()

    def read(self) -> Reading:
        """A reading of the live analysis: taken on the event loop, which owns it."""
        return self._read()

    def families(self, reading: Reading | None = None) -> list[Family]:
        """Every family of one reading (a new one by default), in the order of the exposition.
        Reads nothing but `reading` and what this collector made itself."""
        return finish(self.families_in_turns(self._read() if reading is None else reading))

    def families_in_turns(self, reading: Reading) -> Generator[None, None, list[Family]]:
        """`families`, in turns (a part of the exposition each, a few milliseconds at most at
        full cardinality): yields between them."""
        snapshot = reading.snapshot
        config = reading.config
        run: Run = (
            (C.UNKNOWN_CONFIG, C.TRACK_STABLE) if config is None else (config.id, config.track)
        )
        if run != self._run:  # (once: when the config is resolved, before any analysis)
            self._run, self._counters, self._judged = run, _Kept(), _Kept()
            self._histogram, self._request_order = {}, (set(), [])
        for kept in (self._counters, self._judged):
            kept.turn()
        out: list[Family] = []
        if reading.ab is not None and reading.ab.enabled:
            out += ops_families.ab(reading.ab)
        if self._cost is not None and self._cost.price_per_accelerator_hour is not None:
            out.append(ops_families.replica_cost(self._cost))
        out += yield from self._slice_counters(snapshot, run)
        yield
        out += self._requests(snapshot, reading.health, run)
        yield
        out += self._histograms(snapshot, run)
        yield
        out += self._judgements(snapshot, run)
        out += _causes(snapshot, run)
        yield
        out += model_families.advice_and_mix(snapshot, run)
        out += model_families.by_load(snapshot, run)
        out += model_families.goodput(snapshot, run)
        out += model_families.latency_slos(snapshot, run)
        out += model_families.vllm(snapshot, run)
        if reading.health is not None:
            out += ops_families.health(snapshot, reading.health, run)
        info = Family(C.BUILD_INFO)
        info.add((__version__,), 1.0)
        out.append(info)
        if config is not None:
            out.append(_config_info(config))
        changes = Family(C.CONFIG_CHANGES)
        changes.add((), reading.config_changes)
        out.append(changes)
        return out

    def _slice_counters(self, snapshot: Snapshot, run: Run) -> Generator[None, None, list[Family]]:
        """In steps of 128 slices (a slice whose counts moved costs ~30 us)."""
        kept, parts = self._counters, []
        for i, view in enumerate(snapshot.slices, 1):
            if not i % 128:
                yield
            key, total = view.key, view.since_start
            labels = (*key, *run)
            parts.append(
                kept.get(key, total) or kept.put(key, total, _counter_groups(labels, total))
            )
        names = (*_COUNTER_NAMES, C.ACCEPTED_BY_POSITION, C.DRAFTED_BY_POSITION)
        steps, accepted = Family(C.DRAFT_LENGTH_STEPS), Family(C.DRAFT_LENGTH_ACCEPTED)
        moments = [Family(name) for name in _MODEL_COUNTERS]
        for view in snapshot.rollups:
            total, model = view.since_start, (view.key.model, *run)
            for d, n, a in total.by_drafted_length():
                steps.add((*model, str(d)), n)
                accepted.add((*model, str(d)), a)
            if view.source == C.SliceSource.PROXY:  # vLLM's own counters have no requests
                for family, value in zip(moments, _MODEL_MOMENTS(total), strict=True):
                    family.add(model, value)
        return [*_columns(names, parts), steps, accepted, *moments]

    def _requests(
        self, snapshot: Snapshot, health: HealthSnapshot | None, run: Run
    ) -> Iterator[Family]:
        counts = snapshot.requests
        keys, order = self._request_order
        if counts.keys() != keys:  # sorted again only when a key came (or went)
            ordered = sorted(counts, key=str)
            order = [(key, (*key[0], *run, key[1])) for key in ordered]
            self._request_order = (set(counts), order)
        requests = Family(C.REQUESTS)
        requests.groups = [(labels, None, (counts[key],)) for key, labels in order]
        for variant, n in sorted((health.dropped_by_variant if health else {}).items()):
            dropped = (C.OTHER, C.UNKNOWN_CTX, C.OTHER, variant, *run, C.Outcome.DROPPED)
            requests.add(dropped, n)
        yield requests
        prompt, completion = Family(C.PROMPT_TOKENS), Family(C.COMPLETION_TOKENS)
        tokens = snapshot.tokens.items()
        prompt.groups = [((*key, *run), None, (p,)) for key, (p, _) in tokens]
        completion.groups = [((*key, *run), None, (c,)) for key, (_, c) in tokens]
        yield prompt
        yield completion

    def _histograms(self, snapshot: Snapshot, run: Run) -> Iterator[Family]:
        for name, per_key in snapshot.histograms.items():
            kept = self._histogram.get(name)
            if kept is None:
                kept = self._histogram[name] = _Kept()
            kept.turn()
            target = Family(name)
            groups = target.groups
            for key, histogram in per_key.items():
                groups.append(
                    kept.get(key, histogram)
                    or kept.put(key, histogram, histogram_group((*key, *run), histogram))
                )
            yield target

    def _judgements(self, snapshot: Snapshot, run: Run) -> Iterator[Family]:
        kept, parts = self._judged, []
        for view in snapshot.slices + snapshot.rollups:
            window = view.window
            inputs = (view.stats, window.trials, window.requests, view.zone, view.gain, view.drift)
            parts.append(
                kept.get(view.key, inputs)
                or kept.put(view.key, inputs, _judgement_groups(view, run))
            )
        # one place per view: a view without an interval holds its place (None)
        yield from _columns(_JUDGEMENTS, parts)
