"""The model-wide causes (schedule_not_applied, engine_disagreement) and no_acceptance, read
through the analyzer at their gates: each named exactly at its edge, with its whole detail, and
not one step short of it (analysis/causes/rules.py)."""

from __future__ import annotations

from typing import Any

import pytest
from specwatch import conventions as C
from specwatch.analysis.analyzer import Analyzer, Snapshot
from specwatch.core.records import RequestRecord
from specwatch.settings import load_settings
from specwatch.upstream.specconfig import spec_config

from tests.support.analysis import k4_record

SCHEDULE = [[1, 4, 4], [5, 16, 2]]  # K 4 up to 4 in flight, K 2 from 5 to 16


def snapshot_of(records: list[RequestRecord], **settings: Any) -> Snapshot:
    analyzer = Analyzer(load_settings(**settings), started=1.8e9)
    config: dict[str, Any] = {"method": "ngram", "num_speculative_tokens": 4}
    config["num_speculative_tokens_per_batch_size"] = SCHEDULE
    analyzer.set_config(spec_config(config, "0.32.0", "stable"))
    for r in records:
        analyzer.ingest(r)
    now = max(r.ts for r in records) + 1
    analyzer.evaluate(now)
    return analyzer.snapshot(now)


def causes(snapshot: Snapshot, kind: str) -> dict[str, dict[str, Any]]:
    """Per slice (`ctx/task`, the rollup `all/all`), the detail of `kind` where named."""
    return {
        f"{v.key.ctx_bucket}/{v.key.task}": c.detail
        for v in (*snapshot.slices, *snapshot.rollups)
        for c in v.causes
        if c.kind == kind
    }


def scheduled(requests: int, steps: int, over: int) -> list[RequestRecord]:
    """`requests` at 16 in flight (the schedule's K 2), each of `steps` steps of which `over`
    drafted 4."""
    drafted = (4,) * over + (2,) * (steps - over)
    return [k4_record(i, drafted, (1,) * steps, in_flight=16) for i in range(requests)]


def test_a_schedule_not_applied_at_its_three_gates_is_named_on_every_slice_with_its_detail() -> (
    None
):
    """10 requests of 20 steps (the 200-step and 10-request gates), half of them over."""
    found = causes(snapshot_of(scheduled(10, 20, 10)), C.CauseKind.SCHEDULE_NOT_APPLIED)
    detail = {"steps": 200, "over_share": 0.5, "schedule": SCHEDULE}
    assert {"0-512/chat": detail, f"{C.ALL}/{C.ALL}": detail} == found


@pytest.mark.parametrize(
    ("requests", "steps", "over"),
    [
        (9, 25, 25),  # 225 steps all over, from 9 requests
        (10, 19, 19),  # 190 steps from 10 requests
        (10, 20, 9),  # 90 of 200 over: 0.45
    ],
)
def test_a_schedule_one_short_of_a_gate_is_not_named(requests: int, steps: int, over: int) -> None:
    found = causes(snapshot_of(scheduled(requests, steps, over)), C.CauseKind.SCHEDULE_NOT_APPLIED)
    assert {} == found


def disagreeing(reported: int, disagreeing: int) -> list[RequestRecord]:
    """`reported` requests of 20 steps accepting 1 a step (tau 2.0), `disagreeing` of them
    reporting 2.5."""
    return [
        k4_record(i, (4,) * 20, (1,) * 20, reported_tau=2.5 if i < disagreeing else 2.004)
        for i in range(reported)
    ]


def test_an_engine_disagreeing_at_its_gates_is_named_on_the_rollup_with_its_detail() -> None:
    """5 requests of 100 (the 5-request and 5% gates) report tau 2.5 where their steps say 2.0;
    the rest within rounding."""
    found = causes(snapshot_of(disagreeing(100, 5)), C.CauseKind.ENGINE_DISAGREEMENT)
    detail = {
        "requests": 5,
        "share": 0.05,
        "reported_tau": 2.5,
        "recomputed_tau": 2.0,
        "vllm_version": "0.32.0",
    }
    assert {f"{C.ALL}/{C.ALL}": detail} == found


@pytest.mark.parametrize(("reported", "disagreeing_"), [(80, 4), (101, 5)])
def test_an_engine_one_short_of_a_gate_is_not_named(reported: int, disagreeing_: int) -> None:
    """4 disagreeing (5%) or 5 of 101 (4.95%)."""
    found = causes(
        snapshot_of(disagreeing(reported, disagreeing_)), C.CauseKind.ENGINE_DISAGREEMENT
    )
    assert {} == found


def test_no_acceptance_at_exactly_the_zone_gates_is_named_with_its_upper_bound() -> None:
    """Requests accepting nothing, the zone gates set to exactly the window's requests and
    trials: named, its detail the slice's upper bound; one request more asked: not."""
    records = [k4_record(i, (4,) * 10, (0,) * 10) for i in range(30)]
    probe = snapshot_of(records)
    (view,) = probe.slices
    requests, trials = view.window.requests, view.window.trials
    assert (30, 300) == (requests, trials)
    at_gates = {"min_requests": requests, "min_trials": trials}
    snapshot = snapshot_of(records, zones=at_gates)
    (view,) = snapshot.slices
    assert view.stats.alpha is not None
    upper = view.stats.alpha.upper
    assert upper <= 0.02
    found = causes(snapshot, C.CauseKind.NO_ACCEPTANCE)
    assert {"upper": upper} == found["0-512/chat"]
    for short in ({"min_requests": requests + 1}, {"min_trials": trials + 1}):
        found = causes(snapshot_of(records, zones={**at_gates, **short}), C.CauseKind.NO_ACCEPTANCE)
        assert "0-512/chat" not in found


def test_the_step_causes_are_named_on_the_slice_and_its_rollup_with_their_detail() -> None:
    """Through the analyzer, each by-position rule's finding is the slice's cause (and its
    rollup's), whole: a cliff at position 3 (steps accepting 2 of 4, always); a first position
    at 30% behind later ones at 58 of 73 (the same ladder in every request); later positions at
    a quarter behind a first at 80%."""
    cliff = [k4_record(i, (4,) * 10, (2,) * 10) for i in range(30)]
    found = causes(snapshot_of(cliff), C.CauseKind.POSITION_CLIFF)
    detail = {"position": 3, "ctx_bucket": "0-512"}
    assert {"0-512/chat": detail, f"{C.ALL}/{C.ALL}": detail} == found

    ladder = (0,) * 70 + (1,) * 6 + (2,) * 5 + (3,) * 4 + (4,) * 15
    found = causes(
        snapshot_of([k4_record(i, (4,) * 100, ladder) for i in range(10)]),
        C.CauseKind.FIRST_POSITION_DEFICIT,
    )
    detail = {"first": pytest.approx(0.3), "later": pytest.approx(58 / 73), "requests": 10}
    assert {"0-512/chat": detail, f"{C.ALL}/{C.ALL}": detail} == found

    falling = (0,) * 20 + (1,) * 60 + (2,) * 15 + (3,) * 4 + (4,) * 1
    found = causes(
        snapshot_of([k4_record(i, (4,) * 100, falling) for i in range(10)]),
        C.CauseKind.LATER_POSITIONS_COLLAPSE,
    )
    detail = {"first": pytest.approx(0.8), "later": pytest.approx(0.25), "positions": 3}
    assert {"0-512/chat": detail, f"{C.ALL}/{C.ALL}": detail} == found


def test_the_tracker_counts_requests_with_and_without_vllms_block_and_the_extremes() -> None:
    """per_request_data: (with the block, without it) per model; extremes: per model, the
    requests of each extreme kind (a model never seen: none)."""
    analyzer = Analyzer(load_settings(), started=1.8e9)
    tracker = analyzer._causes
    for with_data in (True, True, False):
        tracker.served("m", with_data)
    assert {"m": (2, 1)} == tracker.per_request_data()
    for i in range(3):
        analyzer.ingest(k4_record(i, (4,) * 10, (4,) * 10))  # a loop: every draft accepted
    analyzer.ingest(k4_record(3, (4,) * 40, (0,) * 40))  # nothing accepted
    assert {C.Extreme.HIGH: 3, C.Extreme.LOW: 1} == tracker.extremes("m")
    assert {} == tracker.extremes("other")


def test_repetition_is_named_with_the_loops_share_and_the_rate_without_them_by_hand() -> None:
    """27 requests of 40 steps accepting 2 of 4 (3 trials a step: 2,160 of 3,240) and 3 loops
    of 80 steps accepting all (960 of 960): alpha 3,120 / 4,200, 2 / 3 without the loops."""
    records = [k4_record(i, (4,) * 40, (2,) * 40) for i in range(27)]
    records += [k4_record(27 + i, (4,) * 80, (4,) * 80) for i in range(3)]
    found = causes(snapshot_of(records), C.CauseKind.REPETITION_SUSPECTED)
    want = {
        "requests": 3,
        "share": pytest.approx(0.1),
        "alpha": pytest.approx(3120 / 4200),
        "alpha_without": pytest.approx(2 / 3),
    }
    assert want == found["0-512/chat"]
