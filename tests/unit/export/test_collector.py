"""The collector in memory: a fresh registry, a reading built by hand, values read back."""

from __future__ import annotations

from dataclasses import replace

import msgspec
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from specwatch import conventions as C
from specwatch.analysis.analyzer import Analyzer
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.drift.detector import DriftView
from specwatch.analysis.speed.speedup import Gain
from specwatch.analysis.views import Snapshot
from specwatch.core.health import Health
from specwatch.core.records import ABState, Latency, RequestRecord, SpecDecodeBlock
from specwatch.export.collector import SpecwatchCollector
from specwatch.export.exposition import Exposition
from specwatch.export.reading import Reading
from specwatch.settings import load_settings

# a reading without a resolved config: the run labels every series of the analysis carries
RUN = {"config": C.UNKNOWN_CONFIG, "track": C.TRACK_STABLE}
SLICE = {"model": "m", "ctx_bucket": "0-512", "task": "code", **RUN}
ROLLUP = {"model": "m", "ctx_bucket": "all", "task": "all", **RUN}


def record(i: int, accepted: tuple[int, ...]) -> RequestRecord:
    return RequestRecord(
        ts=float(i), request_id=str(i), model="m", task="code", outcome=C.Outcome.OBSERVED,
        prompt_tokens=20, completion_tokens=1 + sum(accepted) + len(accepted),
        spec=SpecDecodeBlock(3, (3,) * len(accepted), accepted), latency=Latency(tpot=0.01),
    )  # fmt: skip


def reading() -> Reading:
    settings = load_settings(
        zones={"min_trials": 10, "min_requests": 2, "min_dwell_seconds": 0},
        speedup={"cost_ratio": {"m": 0.05}},  # a known draft cost: gains are modelled
    )
    analyzer = Analyzer(settings, started=0.0)
    analyzer.ingest(record(1, (3, 0, 1)))  # accepted 4, trials 6
    analyzer.ingest(record(2, (2, 3)))  # accepted 5, trials 6
    analyzer.evaluate(5.0)
    ab = ABState(
        enabled=True, baseline_percent=25.0, key_header=C.Header.AB_KEY, rolled_back=True,
        held_by={C.ABSource.ADMIN: "test"}, changed_at=3.0,
        switches={(C.Switch.ROLLED_BACK, C.ABSource.ADMIN): 1},
    )  # fmt: skip
    return Reading(analyzer.snapshot(5.0), Health().snapshot(), ab)


@pytest.fixture
def registry() -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SpecwatchCollector(reading))
    return registry


def test_slice_counters_carry_the_per_request_sums(registry: CollectorRegistry) -> None:
    value = registry.get_sample_value
    assert 5 == value(C.SPEC_STEPS + "_total", SLICE)
    assert (9, 12) == (value(C.ACCEPTED_TOKENS + "_total", SLICE),
                       value(C.ACCEPTANCE_TRIALS + "_total", SLICE))  # fmt: skip
    assert 2 == value(C.SLICE_REQUESTS + "_total", SLICE)
    assert 4 * 4 + 5 * 5 == value(C.REQUEST_ACCEPTED_SQUARED + "_total", SLICE)
    assert 4 * 6 + 5 * 6 == value(C.REQUEST_ACCEPTED_X_TRIALS + "_total", SLICE)
    assert 6 * 6 + 6 * 6 == value(C.REQUEST_TRIALS_SQUARED + "_total", SLICE)
    by_position = {"position": "1", **SLICE}
    assert 4 == value(C.ACCEPTED_BY_POSITION + "_total", by_position)  # 3, 1, 2, 3 accepted > 0


def test_judgements_are_one_hot_zones_and_bounded_estimates(registry: CollectorRegistry) -> None:
    value = registry.get_sample_value
    zones = [value(C.ZONE, {**ROLLUP, "zone": z}) or 0.0 for z in C.Zone]
    assert 1.0 == sum(zones)
    estimate, lower, upper = (
        value(C.ACCEPTANCE_ALPHA, {**SLICE, "bound": b}) or 0.0 for b in C.Bound
    )
    assert estimate == pytest.approx(9 / 12)
    assert 0.0 < lower < estimate < upper
    estimate, lower, upper = (
        value(C.ESTIMATED_GAIN_RATIO, {**SLICE, "method": "modelled", "bound": b}) or 0.0
        for b in C.Bound
    )
    assert 0.0 < lower <= estimate <= upper


def test_the_ab_state_comes_from_its_snapshot(registry: CollectorRegistry) -> None:
    value = registry.get_sample_value
    assert 0.25 == value(C.AB_BASELINE_SHARE)
    assert 1.0 == value(C.AB_ROLLED_BACK)
    switched = {"to": str(C.Switch.ROLLED_BACK), "source": str(C.ABSource.ADMIN)}
    assert 1 == value(C.AB_SWITCHES + "_total", switched)


def test_every_family_is_the_metric_tables_with_its_type_and_labels(
    registry: CollectorRegistry,
) -> None:
    seen = set()
    for family in registry.collect():
        name = family.name + ("_info" if family.type == "info" else "")
        if name.startswith("process_"):
            continue
        metric = C.METRICS[name]
        assert metric.kind == family.type, name
        for sample in family.samples:
            extra = {"le"} if metric.kind == C.Kind.HISTOGRAM else set()
            assert set(sample.labels) <= set(metric.labels) | extra, (name, sample.labels)
        seen.add(name)
    assert {C.SPEC_STEPS, C.ZONE, C.AB_SWITCHES, C.BUILD_INFO, C.PARSE_ERRORS} <= seen


def test_counts_merge_with_their_moments() -> None:
    a, b = Counts.of_request([3], [1], 4), Counts.of_request([3, 3], [3, 0], 4)
    a.merge(b)
    assert (2, 1 + 9, 1 * 2 + 3 * 4, 4 + 16) == (a.requests, a.aa, a.at, a.tt)


def one_changed(snapshot: Snapshot, change: str) -> Snapshot:
    """The snapshot with one input of its first slice's groups changed, all else the same
    objects (as the analysis shares a quiet slice's between snapshots)."""
    view = snapshot.slices[0]
    window, total = view.window.copy(), view.since_start.copy()
    if change == "zone":
        view = replace(view, zone=C.Zone.RED)
    elif change == "gain":
        view = replace(view, gain=Gain(0.7, C.GainMethod.MEASURED, 0.6, 0.8))
    elif change == "drift":
        view = replace(view, drift=DriftView(2.5, True, 3.0, 0.5, 0.4, 2.0, 1))
    elif change == "window":  # the same statistics object: only the window's sizes moved
        window.trials += 1
        window.requests += 1
        view = replace(view, window=window)
    elif change == "since_start":
        total.merge(Counts.of_request((3, 3), (1, 2), 8))
        view = replace(view, since_start=total)
    histograms = {
        name: {key: h.copy() for key, h in per_key.items()}
        for name, per_key in snapshot.histograms.items()
    }
    if change == "histogram":
        histogram = next(iter(histograms[C.TPOT_SECONDS].values()))
        histogram.observe(0.3)
    return replace(snapshot, slices=(view, *snapshot.slices[1:]), histograms=histograms)


@pytest.mark.parametrize(
    "change", ["zone", "gain", "drift", "window", "since_start", "histogram", "nothing"]
)
def test_a_slices_kept_groups_are_made_again_when_any_of_their_inputs_changes(
    change: str,
) -> None:
    """The collector keeps a slice's groups while the values they come from are equal: each
    of those values, changed alone, shows in the next scrape as a new collector writes it."""
    first = reading()
    second = replace(first, snapshot=one_changed(first.snapshot, change))
    readings = iter((first, second))
    kept = Exposition(SpecwatchCollector(lambda: next(readings)))
    before = kept.render()
    after = kept.render()
    assert after == Exposition(SpecwatchCollector(lambda: second)).render()
    assert (after == before) == (change == "nothing")


@pytest.mark.parametrize("k", [5, 6, 40])
def test_a_draft_longer_than_the_positions_counted_keeps_metrics_whole(k: int) -> None:
    """A K past `limits.max_position` (5 here; 16 by default: a longer EAGLE tree or ngram
    lookahead, or one malformed response) once broke every scrape after it: the per-position
    runs were labelled up to K but counted up to the cap. Positions past the cap are not
    series (the cap bounds them); totals count every token. Both writers, same text."""
    settings = load_settings(limits={"max_position": 5})
    analyzer = Analyzer(settings, started=0.0)
    accepted = (k, 2, 0, min(k, 5))
    spec = SpecDecodeBlock(k, (k,) * 4, accepted)
    analyzer.ingest(msgspec.structs.replace(record(1, accepted), spec=spec))
    collector = SpecwatchCollector(lambda: Reading(analyzer.snapshot(2.0), Health().snapshot()))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = Exposition(collector).render().decode()
    assert text == generate_latest(registry).decode()
    value = registry.get_sample_value
    assert sum(accepted) == value(C.ACCEPTED_TOKENS + "_total", SLICE)
    assert 4 * k == value(C.DRAFT_TOKENS + "_total", SLICE)
    runs = [line for line in text.splitlines() if line.startswith(C.ACCEPTED_BY_POSITION)]
    positions = [line for line in runs if 'ctx_bucket="0-512"' in line]
    assert min(k, 5) == len(positions)
    assert 3 == value(C.ACCEPTED_BY_POSITION + "_total", {"position": "1", **SLICE})
    assert 2 == value(C.ACCEPTED_BY_POSITION + "_total", {"position": str(min(k, 5)), **SLICE})
