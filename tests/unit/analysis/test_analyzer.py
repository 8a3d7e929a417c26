from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from specwatch import conventions as C
from specwatch.analysis.analyzer import Analyzer, SliceView, Snapshot
from specwatch.core.records import (
    EngineLogRecord,
    Latency,
    RequestKey,
    RequestRecord,
    SliceKey,
    SpecLogRecord,
)
from specwatch.export.collector import SpecwatchCollector
from specwatch.export.reading import Reading
from specwatch.export.status import status_document
from specwatch.settings import load_settings
from structlog.testing import capture_logs

from tests.support.analysis import (
    MIXED_SETTINGS,
    analyzer,
    engine_sample,
    mixed_traffic,
    record,
    rendered,
)


def test_counts_land_in_the_slice_of_each_step_and_in_the_model_rollup() -> None:
    a = analyzer()
    a.ingest(record(1.0, (3, 3, 3), prompt=505))  # steps at 506, 510, 514: crosses 512
    snapshot = a.snapshot(2.0)
    steps = {view.key: view.since_start.steps for view in snapshot.slices}
    assert {SliceKey("m", "0-512", "code"): 2, SliceKey("m", "512-2k", "code"): 1} == steps
    (rollup,) = snapshot.rollups
    assert (SliceKey("m", C.ALL, C.ALL), 3, 1) == (
        rollup.key,
        rollup.since_start.steps,
        rollup.since_start.requests,
    )
    # the request-level series use the prompt's bucket
    assert {(RequestKey("m", "0-512", "code", "spec"), C.Outcome.OBSERVED): 1} == snapshot.requests


def test_a_request_across_ctx_buckets_is_one_unit_of_its_model_with_its_whole_moments() -> None:
    """Its rollup moments are those of its whole accepted tokens and trials, (a1 + a2)^2, not
    a1^2 + a2^2: the covariance between its buckets stays in the model's variance; and the
    per-model counters export exactly these."""
    from prometheus_client import CollectorRegistry
    from specwatch.export.reading import Reading

    a = analyzer()
    a.ingest(record(1.0, (3, 1, 2), prompt=505))  # 3 then 1 in 0-512 (trials 3 + 2), 2 after
    a.ingest(record(1.5, (0, 3), prompt=100))  # one bucket: its own moments either way
    snapshot = a.snapshot(2.0)
    (rollup,) = snapshot.rollups
    total = rollup.since_start
    assert (2, 9, 12) == (total.requests, total.accepted, total.trials)  # trials 5 + 3, 1 + 3
    assert (6 * 6 + 3 * 3, 6 * 8 + 3 * 4, 8 * 8 + 4 * 4) == (total.aa, total.at, total.tt)
    parts = [v.since_start for v in snapshot.slices]
    assert sum(p.aa for p in parts) == 4 * 4 + 2 * 2 + 3 * 3  # the slices split the request
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SpecwatchCollector(lambda: Reading(snapshot)))
    value = registry.get_sample_value
    model = {"model": "m", "config": C.UNKNOWN_CONFIG, "track": C.TRACK_STABLE}
    assert (2, 45, 60, 80) == (
        value(C.MODEL_REQUESTS + "_total", model),
        value(C.MODEL_REQUEST_ACCEPTED_SQUARED + "_total", model),
        value(C.MODEL_REQUEST_ACCEPTED_X_TRIALS + "_total", model),
        value(C.MODEL_REQUEST_TRIALS_SQUARED + "_total", model),
    )


def test_a_request_without_usage_counts_in_the_unknown_bucket() -> None:
    a = analyzer()
    a.ingest(record(1.0, (1,), prompt=None))
    assert [SliceKey("m", C.UNKNOWN_CTX, "code")] == [v.key for v in a.snapshot(1.0).slices]


def test_models_past_the_cap_fold_into_other_and_are_counted() -> None:
    a = analyzer(limits={"max_models": 2})
    for i in range(5):
        a.ingest(record(1.0, (1,), model=f"m{i}"))
    # a name from an error response (not served) never takes a place under the cap
    a.ingest(record(1.0, (), model="typo", outcome=C.Outcome.UPSTREAM_ERROR))
    snapshot = a.snapshot(1.0)
    assert {"m0", "m1", C.OTHER} == {view.key.model for view in snapshot.slices}
    assert 4 == snapshot.folded_models


def test_zone_changes_are_logged_once_with_the_evidence() -> None:
    a = analyzer()
    for i in range(20):
        a.ingest(record(float(i), (3, 3, 3, 3)))
    with capture_logs() as logs:
        a.evaluate(20.0)
        a.evaluate(21.0)
    changes = [entry for entry in logs if entry["event"] == "zone_changed"]
    assert 2 == len(changes)  # the slice and its model rollup, once each
    slice_change = next(entry for entry in changes if entry["task"] == "code")
    assert (C.Zone.INSUFFICIENT, C.Zone.GREEN, 240) == (
        slice_change["previous"],
        slice_change["zone"],
        slice_change["window_trials"],
    )


def test_the_window_forgets_while_since_start_remembers() -> None:
    a = analyzer()
    a.ingest(record(1.0, (2, 0)))
    a.ingest(record(100.0, (1,)))
    (view,) = a.snapshot(100.0).slices
    assert (3, 1) == (view.since_start.steps, view.window.steps)


def test_latency_and_acceptance_length_histograms_are_per_request_slice() -> None:
    a = analyzer()
    a.ingest(record(1.0, (3, 1)))
    histograms = a.snapshot(1.0).histograms
    key = RequestKey("m", "0-512", "code", C.VARIANT_SPEC)
    assert 1 == histograms[C.TTFT_SECONDS][key].count
    assert 3.0 == histograms[C.REQUEST_ACCEPTANCE_LENGTH][key].sum  # 1 + 4 / 2


def test_without_per_request_data_the_model_is_judged_on_vllms_own_counters() -> None:
    a = Analyzer(
        load_settings(zones={"min_trials": 30, "min_requests": 3, "min_dwell_seconds": 0}),
        started=0.0,
        fresh_engine=True,
    )
    a.ingest(record(1.0, (), model="old-vllm", outcome=C.Outcome.NO_SPEC_METRICS))
    a.ingest_engine(engine_sample(2.0, 300, 120, 0))  # alpha-hat 0.29 on 420 trials
    a.evaluate(3.0)
    snapshot = a.snapshot(3.0)
    assert [] == [view for view in snapshot.slices if view.window.steps]
    (rollup,) = snapshot.rollups
    assert (C.SliceSource.VLLM_METRICS, 300, C.Zone.RED) == (
        rollup.source,
        rollup.window.steps,
        rollup.zone,
    )
    (engine,) = snapshot.engine
    assert engine.coverage == 0.0  # vLLM counted draft tokens the proxy never saw
    assert rollup.since_start == engine.since_start  # vLLM's own counts since the start


def test_ab_baseline_requests_are_counted_apart_and_measure_the_gain() -> None:
    """Baseline requests land in request series with variant="baseline", never in acceptance
    counts (even if that upstream sent a spec block), and their TPOT makes the gain measured."""
    from msgspec.structs import replace

    a = analyzer(speedup={"min_baseline_requests": 3})
    for i in range(5):
        a.ingest(record(1.0 + i, (3, 3)))  # spec: tpot 2 ms
        base = replace(record(1.0 + i, (1,)), variant=C.VARIANT_BASELINE)
        a.ingest(replace(base, latency=Latency(ttft=0.01, tpot=0.005, e2e=0.4)))
    snapshot = a.snapshot(6.0)
    (rollup,) = snapshot.rollups
    assert 10 == rollup.since_start.steps  # five spec requests of two steps each
    by_variant: dict[str, int] = {}
    for (key, _), n in snapshot.requests.items():
        by_variant[key.variant] = by_variant.get(key.variant, 0) + n
    assert {"spec": 5, "baseline": 5} == by_variant
    assert rollup.gain is not None
    assert ("measured", 2.5) == (rollup.gain.method, round(rollup.gain.ratio, 6))


def test_a_thin_ab_window_gives_an_insufficient_gain_never_a_modelled_one() -> None:
    from msgspec.structs import replace

    a = analyzer(speedup={"min_baseline_requests": 20, "cost_ratio": {"m": 0.05}})
    a.ingest(record(1.0, (3, 3)))
    a.ingest(replace(record(1.0, (1,)), spec=None, variant=C.VARIANT_BASELINE))
    (rollup,) = a.snapshot(2.0).rollups
    assert rollup.gain is not None
    assert ("insufficient", 3600.0) == (rollup.gain.method, rollup.gain.window_seconds)
    assert not rollup.gain.slower
    (finer,) = a.snapshot(2.0).slices  # a finer slice has no baseline: modelled at the known c
    assert finer.gain is not None
    assert ("modelled", 0.05, "configured") == (
        finer.gain.method,
        finer.gain.cost_ratio,
        finer.gain.cost_source,
    )


def test_a_thin_window_is_measured_over_the_lookback() -> None:
    """20 requests a side over the hour, 2 in the last 5 minutes: the gain is the hour's."""
    from msgspec.structs import replace

    a = analyzer(speedup={"min_baseline_requests": 20})
    for i in range(20):
        ts = 100.0 + i * 170.0  # over the hour before 3500
        a.ingest(record(ts, (3, 3)))  # spec: tpot 2 ms
        base = replace(record(ts, (1,)), spec=None, variant=C.VARIANT_BASELINE)
        a.ingest(replace(base, latency=Latency(tpot=0.005)))
    (rollup,) = a.snapshot(3500.0).rollups
    assert rollup.gain is not None
    assert ("measured", 3600.0) == (rollup.gain.method, rollup.gain.window_seconds)
    assert 2.5 == pytest.approx(rollup.gain.ratio)
    (rollup,) = a.snapshot(3700.0 + 3600.0).rollups  # nothing left even in the lookback
    assert rollup.gain is not None
    assert "insufficient" == rollup.gain.method


def test_without_a_known_draft_cost_no_gain_is_modelled() -> None:
    """No baseline and no configured c: the assumed default is for the K advice only."""
    a = analyzer()
    a.ingest(record(1.0, (3, 3)))
    snapshot = a.snapshot(2.0)
    assert [None, None] == [view.gain for view in (*snapshot.slices, *snapshot.rollups)]
    assert all(view.advice is not None for view in snapshot.slices)


def short_drift_analyzer() -> Analyzer:
    """Drift on 1-second buckets (the demo's scale): a 12-bucket baseline ending 2 back."""
    drift = {"bucket_seconds": 1.0, "baseline_buckets": 12, "gap_buckets": 2,
             "min_baseline_buckets": 8, "min_bucket_trials": 5, "recent_buckets": 10}  # fmt: skip
    return analyzer(drift=drift)


def test_the_traffic_mix_shows_a_task_shift_in_psi_and_splits_the_change() -> None:
    """20 s of chat only, then 12 s of code only: PSI by task is major, by ctx bucket none."""
    car = short_drift_analyzer()
    for t in range(32):
        task = "chat" if t < 20 else "code"
        accepted = (1, 0, 2, 1) if task == "chat" else (3, 3, 2, 3)
        for j in range(4):
            car.ingest(record(t + j / 4, accepted, task=task))
        car.evaluate(t + 1.0)
    mix = car.snapshot(32.0).mix
    assert mix is not None
    view = mix["m"]
    assert view.psi_task > 0.25
    assert view.psi_ctx_bucket < 0.01
    assert view.decomposition.mix > 0  # more code, which accepts more: the mix part rises


def test_the_traffic_mix_is_read_once_per_bucket_but_sees_a_late_record() -> None:
    """The mix is kept while the clock stays in one drift bucket; a record that lands in a
    bucket already read (finished late) changes it at once, a record in the current one
    (not in either period) does not."""
    car = short_drift_analyzer()
    for t in range(30):
        for j in range(4):
            car.ingest(record(t + j / 4, (1, 0, 2, 1), task="chat"))
        car.evaluate(t + 1.0)
    before = car.snapshot(30.2).mix
    assert before is not None
    car.ingest(record(30.1, (3, 3, 3, 3), task="code"))  # the current bucket: not read yet
    assert car.snapshot(30.4).mix is before
    car.ingest(record(27.5, (3, 3, 3, 3), task="code"))  # late, into the recent period
    after = car.snapshot(30.6).mix
    assert after is not None
    assert after["m"].psi_task > before["m"].psi_task


def test_status_shows_each_slices_drift_once_it_has_a_baseline() -> None:

    car = short_drift_analyzer()
    for t in range(16):
        for j in range(4):
            car.ingest(record(t + j / 4, (2, 1, 3, 0)))
        car.evaluate(t + 1.0)
    document = status_document(Reading(car.snapshot(16.0)))
    (code,) = [s for s in document["slices"] if s["task"] == "code"]
    drift = code["drift"]
    assert drift is not None
    assert {"statistic", "alarm", "baseline_alpha", "threshold"} <= set(drift)
    assert drift["statistic"] is not None
    assert drift["baseline_alpha"] is not None


class _Forgetful(dict[SliceKey, Any]):
    """An analyzer's record per slice (of quiet slices, of kept views) that records nothing:
    every slice is evaluated, every view made afresh."""

    def __setitem__(self, key: SliceKey, value: Any) -> None:
        pass


@pytest.mark.parametrize("dwell", [0.0, 120.0])
@pytest.mark.parametrize("seed", range(4))
def test_passing_over_quiet_slices_changes_no_zone(seed: int, dwell: float) -> None:
    """Every zone state after every evaluation is what evaluating every slice gives: a finer
    slice left settled (insufficient, or a verdict past its dwell and horizon, no slower gain
    being timed), whose windows and cost did not move, is a fixed point. Slices of each zone
    are passed over."""
    zones = {**MIXED_SETTINGS["zones"], "min_dwell_seconds": dwell}
    settings = {**MIXED_SETTINGS, "zones": zones}
    passing, every = analyzer(**settings), analyzer(**settings)
    every._quiet = _Forgetful()
    passed_over: Counter[str] = Counter()
    next_evaluation, seen = 10.0, set()
    for item in mixed_traffic(seed):
        while item.ts >= next_evaluation:
            passing.evaluate(next_evaluation)
            every.evaluate(next_evaluation)
            assert passing._zones == every._zones, next_evaluation
            passed_over.update(passing._zones[key].zone for key in passing._quiet)
            seen |= {state.zone for state in every._zones.values()}
            next_evaluation += 10.0
        passing.ingest(item)
        every.ingest(item)
    assert {C.Zone.INSUFFICIENT, C.Zone.RED, C.Zone.YELLOW, C.Zone.GREEN} <= seen
    assert {C.Zone.INSUFFICIENT, C.Zone.YELLOW, C.Zone.GREEN} <= set(passed_over), passed_over


@pytest.mark.parametrize("seed", range(3))
def test_a_snapshot_keeps_a_finer_slices_view_only_while_it_is_what_making_it_gives(
    seed: int,
) -> None:
    """Snapshots between and at evaluations, through mixed traffic (every zone, drift, A/B
    moving the cost, windows emptying): every view equals the one made afresh, and quiet
    slices' views are shared from one snapshot to the next."""
    keeping, fresh = analyzer(**MIXED_SETTINGS), analyzer(**MIXED_SETTINGS)
    fresh._kept._views = _Forgetful()
    shared, next_evaluation = 0, 10.0
    before: dict[SliceKey, SliceView] = {}
    for item in mixed_traffic(seed):
        while item.ts >= next_evaluation:
            for at in (next_evaluation - 4.0, next_evaluation):  # a scrape, an evaluation
                if at == next_evaluation:
                    keeping.evaluate(at)
                    fresh.evaluate(at)
                kept, made = keeping.snapshot(at), fresh.snapshot(at)
                assert kept.slices == made.slices, at
                assert kept.rollups == made.rollups, at
                shared += sum(before.get(view.key) is view for view in kept.slices)
                before = {view.key: view for view in kept.slices}
            next_evaluation += 10.0
        keeping.ingest(item)
        fresh.ingest(item)
    assert shared > 0
    # then baseline requests alone, with the clock standing: they move m0's measured gain and
    # leave every window as it was, so only a view made again shows the new gain
    at = next_evaluation
    gains = set()
    for i in range(12):
        baseline = RequestRecord(
            ts=at, request_id="b", model="m0", task="code", outcome=C.Outcome.OBSERVED,
            prompt_tokens=100, completion_tokens=20, spec=None,
            latency=Latency(tpot=0.005 * (1 + i)), variant=C.VARIANT_BASELINE,
        )  # fmt: skip
        keeping.ingest(baseline)
        fresh.ingest(baseline)
        kept, made = keeping.snapshot(at), fresh.snapshot(at)
        assert kept.rollups == made.rollups, i
        gains |= {view.gain for view in kept.rollups if view.key.model == "m0"}
    assert len(gains) > 1


def test_a_snapshot_is_what_it_was_whatever_the_analysis_does_after() -> None:
    """/metrics writes a snapshot in a worker thread while the event loop goes on feeding the
    analysis (export/exposition.py): nothing a snapshot holds may be an object the analysis
    changes later. A snapshot every fifth evaluation, written again after the next stretch of
    mixed traffic (and vLLM's own counters, and evaluations), reads as it did when taken."""
    a = analyzer(**MIXED_SETTINGS)
    earlier: tuple[Snapshot, tuple[bytes, bytes]] | None = None
    next_evaluation, compared, drafts = 10.0, 0, 0
    for item in mixed_traffic(1):
        while item.ts >= next_evaluation:
            a.evaluate(next_evaluation)
            drafts += 40
            a.ingest_engine(engine_sample(next_evaluation, drafts, drafts, drafts // 8))
            a.ingest_log(SpecLogRecord(accepted=30, drafted=40, mean_acceptance_length=None,
                                       per_position=()))  # fmt: skip
            a.ingest_log(EngineLogRecord(0, drafts % 7, 1, 0.5, prompt_throughput=1.0,
                                         generation_throughput=2.0))  # fmt: skip
            if next_evaluation % 50.0 == 0.0:
                if earlier is not None:
                    assert rendered(earlier[0]) == earlier[1], next_evaluation
                    compared += 1
                snapshot = a.snapshot(next_evaluation)
                earlier = (snapshot, rendered(snapshot))
            next_evaluation += 10.0
        a.ingest(item)
    assert compared > 100


def test_every_snapshot_counts_each_latency_observed_before_it() -> None:
    """Snapshots copy only the histograms observed since the last one: each must still count
    every observation so far, per request slice, however they interleave with snapshots."""
    a = analyzer()
    rng = random.Random(3)
    expected: dict[str, int] = {}
    for i in range(60):
        task = rng.choice(("code", "chat", "rag"))
        a.ingest(record(float(i), (1, 2), task=task))
        expected[task] = expected.get(task, 0) + 1
        if rng.random() < 0.4:
            ttft = a.snapshot(float(i)).histograms[C.TTFT_SECONDS]
            assert expected == {key.task: h.count for key, h in ttft.items()}, i


def test_coverage_waits_for_the_scrape_that_counts_what_the_proxy_saw_since() -> None:
    """The proxy saw every draft token vLLM counted; requests that finished after the latest
    scrape are not held against it (they used to read as coverage 1.5)."""
    a = Analyzer(load_settings(), started=0.0, fresh_engine=True)
    for ts in (1.0, 2.0):
        a.ingest(record(ts, (3, 1, 0, 2), model="old-vllm"))  # 12 draft tokens each
    a.ingest_engine(engine_sample(3.0, 8, 12, 2))  # vLLM: 8 drafts x 3 = 24 draft tokens
    a.ingest(record(4.0, (3, 3, 3, 3), model="old-vllm"))  # not scraped yet
    (engine,) = a.snapshot(5.0).engine
    assert 1.0 == engine.coverage
