"""What the sidecar reads from the analyzer besides its snapshot's zones (analysis/analyzer.py):
vLLM's log lines summed, the sums kept across a restart, the models to stop routing to, and a
synthetic verifier's slices not judged."""

from __future__ import annotations

from dataclasses import replace

import msgspec
import pytest
from specwatch import conventions as C
from specwatch.analysis.counting.sums import Sums
from specwatch.core.records import (
    EngineLogRecord,
    RequestKey,
    SliceKey,
    SpecLogRecord,
    SpecTotals,
)
from specwatch.upstream.specconfig import spec_config
from structlog.testing import capture_logs

from tests.support.analysis import analyzer, engine_sample, record


def test_vllms_log_lines_are_summed_and_the_engine_line_is_the_latest() -> None:
    a = analyzer()
    for accepted, drafted in ((30, 40), (10, 20)):
        a.ingest_log(SpecLogRecord(accepted, drafted, None, ()))
    a.ingest_log(EngineLogRecord(0, 4, 1, 0.5, None, None))
    a.ingest_log(EngineLogRecord(0, 6, 0, 0.25, None, None))
    log = a.snapshot(1.0).vllm_log
    assert log is not None
    assert (2, 40, 60) == (log.lines, log.accepted, log.drafted)
    assert (6, 0, 0.25) == (log.running, log.waiting, log.kv_cache_usage)


def test_the_sums_kept_across_a_restart_are_alpha_hats_per_slice_and_rollup() -> None:
    """Two requests of 3 steps drafting 3: accepted 3 + 1 + 0 and 2 + 2 + 2; trials a + 1
    where a step stopped short, 3 where it took all: (3 + 2 + 1) and (3 + 3 + 3)."""
    a = analyzer()
    a.ingest(record(1.0, (3, 1, 0)))
    a.ingest(record(2.0, (2, 2, 2)))
    found = a.since_start_sums()
    slice_, rollup = SliceKey("m", "0-512", "code"), SliceKey("m", C.ALL, C.ALL)
    assert {slice_, rollup} <= set(found)
    want = Sums(2, 10, 15, 4**2 + 6**2, 4 * 6 + 6 * 9, 6**2 + 9**2)
    assert want == found[slice_] == found[rollup]


def test_the_models_red_overall_are_those_to_stop_routing_to() -> None:
    """Model `bad` accepts nothing, `good` everything: only bad's `all` zone is red."""
    a = analyzer()
    for i in range(30):
        a.ingest(record(float(i), (0,) * 20, model="bad"))
        a.ingest(record(float(i), (3,) * 20, model="good"))
    a.evaluate(31.0)
    assert {"bad"} == a.red_models()


def test_a_synthetic_verifiers_slices_are_not_judged_whatever_they_accept() -> None:
    a = analyzer()
    config = {"method": "ngram", "num_speculative_tokens": 3}
    a.set_config(spec_config({**config, "rejection_sample_method": "synthetic"}, None, "stable"))
    for i in range(30):
        a.ingest(record(float(i), (0,) * 20))
    a.evaluate(31.0)
    zones = {view.zone for view in (*a.snapshot(31.0).slices, *a.snapshot(31.0).rollups)}
    assert {C.Zone.NOT_APPLICABLE} == zones
    assert set() == a.red_models()


@pytest.mark.parametrize("change", ["log", "engine", "drift"])
def test_a_log_line_a_scrape_or_a_restored_drift_state_during_a_snapshot_stops_it(
    change: str,
) -> None:
    """A snapshot read in turns never mixes two moments: whatever changes the analysis in
    between (here the second change of its kind) makes it raise."""
    a = analyzer()
    a.ingest(record(1.0, (3, 1, 0)))
    drift = a.drift_state()

    def apply() -> None:
        if change == "log":
            a.ingest_log(SpecLogRecord(3, 4, None, ()))
        elif change == "engine":
            a.ingest_engine(engine_sample(1.0, 10, 12, 2))
        else:
            a.restore_drift(drift)

    apply()
    turns = a.snapshot_in_turns(2.0)
    next(turns)
    apply()
    with pytest.raises(RuntimeError, match="changed while it was read"):
        for _ in turns:
            pass


def test_a_steps_only_engine_is_covered_by_the_steps_the_proxy_saw() -> None:
    """SGLang counts verified steps and no draft tokens: two requests of 3 steps seen by the
    proxy between two scrapes 6 steps apart: covered whole."""
    a = analyzer()
    steps_only = replace(engine_sample(1.0, 10, 0, 0), model="m", draft_tokens=0.0)
    a.ingest_engine(steps_only)
    a.ingest(record(1.5, (1, 1, 1)))
    a.ingest(record(1.6, (2, 0, 1)))
    a.ingest_engine(replace(steps_only, ts=2.0, drafts=16.0))
    (engine,) = a.snapshot(2.0).engine
    assert engine.coverage == pytest.approx(1.0)


def test_a_model_judged_on_vllms_counters_without_per_request_data_is_said_once() -> None:
    """vLLM counts old-vllm's steps; its three answers came without the per-request block:
    one warning naming the model, the requests and the flags, however many evaluations."""
    a = analyzer()
    for i in range(3):
        a.ingest(record(float(i), (), model="old-vllm"))
    a.ingest_engine(engine_sample(1.0, 10, 12, 2))
    a.ingest_engine(engine_sample(4.0, 40, 50, 8))
    with capture_logs() as logs:
        a.evaluate(5.0)
        a.evaluate(15.0)
    said = [e for e in logs if e["event"] == "per_request_data_missing"]
    assert 1 == len(said)
    flags = list(C.per_request_flags(None))
    assert {"model": "old-vllm", "requests": 3, "vllm_version": None, "flags": flags} == {
        k: said[0][k] for k in ("model", "requests", "vllm_version", "flags")
    }


def test_a_snapshot_carries_every_part_of_the_analysis() -> None:
    """40 requests at 2 in flight, each accepting all it drafts (a loop: the high extreme),
    with vLLM's per-request block and a TPOT; a scrape, a counter reset. Each part of the
    snapshot holds what the analysis has, no part left empty or from another moment."""
    a = analyzer()
    for i in range(40):
        a.ingest(msgspec.structs.replace(record(float(i), (3,) * 12), in_flight=2))
    for ts, drafts in ((1.0, 100), (2.0, 10)):  # vLLM restarted between the scrapes
        a.ingest_engine(replace(engine_sample(ts, drafts, drafts, drafts // 3), model="m"))
    a.evaluate(40.0)
    snapshot = a.snapshot(40.0)
    assert {"m": {C.Extreme.HIGH: 40}} == snapshot.extremes
    assert {"m": (40, 0)} == snapshot.per_request_data
    assert 1 == snapshot.counter_resets
    assert ["m"] == [table.model for table in snapshot.load]
    assert ["m"] == [table.model for table in snapshot.load_window]
    (cell,) = snapshot.load_cells
    assert ("m", 40 * 36) == (cell.model, cell.accepted)  # 12 steps accepting 3, 40 requests
    assert {("m", "0-512", "code"), ("m", C.ALL, C.ALL), ("m", "load", "2-4")} <= set(
        snapshot.goodput
    )
    assert 40 == sum(s.requests for s, _ in snapshot.goodput_cells.values())
    assert {"m": {C.TpotSource.VLLM: 40}} == snapshot.tpot_sources
    (code,) = [v for v in snapshot.slices if v.key.task == "code"]
    (rollup,) = snapshot.rollups
    assert code.zone_since is not None
    assert code.evidence is not None
    assert rollup.advice is not None
    later = a.snapshot(40.0 + 2 * 3600)  # the load window has moved past every request
    assert () == later.load_window
    assert ["m"] == [table.model for table in later.load]


def test_requests_served_with_and_without_speculative_data_are_counted_per_model() -> None:
    """With vLLM's per-step block or an engine's totals: with data; an answer without either:
    without; an A/B baseline request or an error: neither."""
    a = analyzer()
    a.ingest(record(1.0, (2, 1)))
    totals = SpecTotals(drafted=12, accepted=9, steps=4)
    a.ingest(msgspec.structs.replace(record(2.0, ()), totals=totals))
    a.ingest(record(3.0, ()))
    a.ingest(msgspec.structs.replace(record(4.0, ()), variant=C.VARIANT_BASELINE))
    a.ingest(record(5.0, (), outcome=C.Outcome.UPSTREAM_ERROR))
    assert {"m": (2, 1)} == a.snapshot(6.0).per_request_data


def test_the_request_series_count_tokens_and_every_latency_and_the_slices_come_in_order() -> None:
    """Two requests of 100 prompt and 6 completion tokens (0.01 s to the first, 0.002 s a
    token after, 0.2 s whole): the tokens summed, each latency observed twice with its sum;
    slices of three ctx buckets listed in bucket order, not by name."""
    a = analyzer(ctx_buckets="512,2048")
    for ts, prompt in ((1.0, 100), (2.0, 100), (3.0, 3000), (4.0, 1000)):
        a.ingest(record(ts, (1, 2, 0), prompt=prompt))
    snapshot = a.snapshot(5.0)
    key = RequestKey("m", "0-512", "code", C.VARIANT_SPEC)
    assert (200, 12) == snapshot.tokens[key]
    for name, value in ((C.TTFT_SECONDS, 0.01), (C.TPOT_SECONDS, 0.002),
                        (C.REQUEST_DURATION_SECONDS, 0.2)):  # fmt: skip
        histogram = snapshot.histograms[name][key]
        assert 2 == histogram.count, name
        assert histogram.sum == pytest.approx(2 * value), name
    assert ["0-512", "512-2k", "2k+"] == [v.key.ctx_bucket for v in snapshot.slices]
