"""Requests known only by their totals (llama.cpp): the rate is judged, alpha-hat and tau are
not made up, and the zone says it judged the rate."""

from __future__ import annotations

import random

from specwatch import conventions as C
from specwatch.core.records import Latency, RequestRecord, SliceKey, SpecTotals
from specwatch.store.cyclelog import from_line, to_line

from tests.support.analysis import analyzer


def totals_record(
    ts: float, drafted: int, accepted: int, steps: int | None = None
) -> RequestRecord:
    return RequestRecord(
        ts=ts,
        request_id=f"r{ts}",
        model="gguf",
        task="code",
        outcome=C.Outcome.OBSERVED,
        prompt_tokens=100,
        completion_tokens=accepted + 20,
        totals=SpecTotals(drafted, accepted, steps),
        latency=Latency(tpot=0.002),
    )


def traffic(rate: float, seed: int = 1, steps: bool = False) -> list[RequestRecord]:
    rng = random.Random(seed)
    out = []
    for i in range(60):
        drafted = rng.randint(20, 60)
        accepted = sum(rng.random() < rate for _ in range(drafted))
        out.append(totals_record(1.0 + i * 0.5, drafted, accepted, drafted // 3 if steps else None))
    return out


def test_the_rate_is_read_from_totals_and_alpha_hat_and_tau_are_not() -> None:
    a = analyzer()
    records = traffic(0.8)
    for r in records:
        a.ingest(r)
    a.evaluate(40.0)
    snapshot = a.snapshot(40.0)
    (rollup,) = snapshot.rollups
    (view,) = snapshot.slices
    assert view.key == SliceKey("gguf", "0-512", "code")
    drafted = sum(r.totals.drafted for r in records if r.totals)
    accepted = sum(r.totals.accepted for r in records if r.totals)
    for seen in (view, rollup):
        assert (seen.window.drafted, seen.window.accepted) == (drafted, accepted)
        assert seen.window.steps == seen.window.trials == 0
        assert seen.stats.rate is not None
        assert seen.stats.rate.estimate == accepted / drafted
        assert seen.stats.alpha is None
        assert seen.stats.tau is None
        assert seen.stats.per_position == ()
        assert seen.zone_metric == "rate"
        assert seen.zone == C.Zone.GREEN  # a rate of 0.8 over 60 requests: surely above 0.7


def test_a_low_rate_is_red_and_tau_is_read_where_the_engine_gives_steps() -> None:
    a = analyzer()
    for r in traffic(0.3, steps=True):
        a.ingest(r)
    a.evaluate(40.0)
    (rollup,) = a.snapshot(40.0).rollups
    assert rollup.zone == C.Zone.RED
    assert rollup.zone_metric == "rate"
    assert rollup.stats.tau is not None
    assert rollup.stats.alpha is None


def test_per_step_requests_keep_the_configured_metric() -> None:
    from tests.support.analysis import record

    a = analyzer()
    for i in range(40):
        a.ingest(record(1.0 + i, (3, 2, 3, 1, 3)))
    a.evaluate(45.0)
    (rollup,) = a.snapshot(45.0).rollups
    assert rollup.zone_metric == "alpha"


def test_a_cycle_log_keeps_totals_and_replay_reads_them_back() -> None:
    record = totals_record(5.0, 31, 29)
    line = to_line(record)
    assert b'"draft_tokens":31' in line
    assert b'"per_step_drafted":[]' in line
    assert from_line(line) == record
    with_steps = totals_record(5.0, 31, 29, steps=9)
    assert from_line(to_line(with_steps)) == with_steps


def test_a_totals_line_that_contradicts_itself_is_a_bad_line() -> None:
    import pytest
    from specwatch.store.cyclelog import BadLine

    line = to_line(totals_record(5.0, 31, 29)).replace(
        b'"accepted_tokens":29', b'"accepted_tokens":32'
    )
    with pytest.raises(BadLine, match="accepted_tokens > draft_tokens"):
        from_line(line)
