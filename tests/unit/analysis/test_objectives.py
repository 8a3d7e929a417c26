"""Latency objectives (analysis/counting/objectives.py): what counts as a good request, what as
an SLI event at all, and the attainment /status shows (docs/latency-slos.md)."""

from __future__ import annotations

import msgspec
import pytest
from specwatch import conventions as C
from specwatch.analysis.counting.objectives import ObjectiveCounts, judged
from specwatch.analysis.counting.slicing import LoadBuckets
from specwatch.core.records import Latency, RequestRecord
from specwatch.export.status import latency_slo_status
from specwatch.settings.slo import LatencyObjective

from tests.support.analysis import analyzer, record

R = C.SloResult
SLO = {"name": "chat", "ttft_ms": 500, "tpot_ms": 50, "objective": 0.99}


def timed(
    ttft: float | None, tpot: float | None, tokens: int | None = 20, task: str = "code"
) -> RequestRecord:
    base = record(10.0, (1, 2), task=task)
    return msgspec.structs.replace(
        base, latency=Latency(ttft=ttft, tpot=tpot), completion_tokens=tokens
    )


@pytest.mark.parametrize(
    ("ttft", "tpot", "tokens", "outcome", "expected"),
    [
        (0.5, 0.05, 20, C.Outcome.OBSERVED, R.GOOD),  # at the thresholds: met
        (0.501, 0.05, 20, C.Outcome.OBSERVED, R.TTFT_MISSED),
        (0.5, 0.0501, 20, C.Outcome.OBSERVED, R.TPOT_MISSED),
        (0.9, 0.09, 20, C.Outcome.NO_SPEC_METRICS, R.BOTH_MISSED),
        (0.1, None, 1, C.Outcome.OBSERVED, R.GOOD),  # one token: TTFT alone
        (0.9, None, 1, C.Outcome.OBSERVED, R.TTFT_MISSED),
        (0.1, None, 20, C.Outcome.OBSERVED, R.UNMEASURED),  # no TPOT past the first token
        (0.1, None, 2, C.Outcome.OBSERVED, R.UNMEASURED),  # two tokens: one after the first
        (0.1, None, None, C.Outcome.OBSERVED, R.UNMEASURED),
        (None, 0.01, 20, C.Outcome.OBSERVED, R.UNMEASURED),
        (0.1, 0.01, 20, C.Outcome.PARSE_ERROR, R.GOOD),  # served, timed, unreadable
        (None, None, None, C.Outcome.UPSTREAM_ERROR, R.ERROR),
        (None, None, None, C.Outcome.UPSTREAM_FAILED, R.ERROR),
        (0.1, 0.01, 20, C.Outcome.CLIENT_ABORTED, None),  # the client left: no event
        (None, None, None, C.Outcome.REJECTED, None),
        (None, None, None, C.Outcome.DROPPED, None),
    ],
)
def test_a_request_is_judged_on_its_own_ttft_and_tpot(
    ttft: float | None, tpot: float | None, tokens: int | None, outcome: str, expected: str | None
) -> None:
    request = msgspec.structs.replace(timed(ttft, tpot, tokens), outcome=outcome)
    assert expected == judged(request, 0.5, 0.05)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, None),  # the request's own fault: a bad body, a prompt past the context
        (404, None),
        (413, None),
        (408, R.ERROR),  # the server's: too slow, too busy, broken
        (429, R.ERROR),
        (500, R.ERROR),
        (503, R.ERROR),
        (None, R.ERROR),  # no answer at all (upstream_failed)
    ],
)
def test_an_error_is_bad_unless_the_request_earned_it(status: int | None, expected: str) -> None:
    for outcome in (C.Outcome.UPSTREAM_ERROR, C.Outcome.UPSTREAM_FAILED):
        request = msgspec.structs.replace(timed(None, None), outcome=outcome, status=status)
        assert expected == judged(request, 0.5, 0.05)


def test_each_objective_counts_the_requests_it_covers() -> None:
    counts = ObjectiveCounts(
        (
            LatencyObjective(name="all", ttft_ms=500, tpot_ms=50),
            LatencyObjective(name="m-code", model="m", task="code", ttft_ms=200, tpot_ms=50),
            LatencyObjective(name="other", model="n", ttft_ms=500, tpot_ms=50),
        ),
        LoadBuckets((1, 4)),
    )
    counts.add(msgspec.structs.replace(timed(0.3, 0.01, task="code"), in_flight=3), "m")
    counts.add(timed(0.3, 0.01, task="chat"), "m")  # its load unknown
    baseline = msgspec.structs.replace(timed(0.3, 0.01), in_flight=1, variant="baseline")
    counts.add(baseline, "m")
    assert counts.counts == {
        ("all", "m", "spec", R.GOOD): 2,
        ("m-code", "m", "spec", R.TTFT_MISSED): 1,
        ("all", "m", "baseline", R.GOOD): 1,
        ("m-code", "m", "baseline", R.TTFT_MISSED): 1,
    }
    # by load: speculation's requests whose load is known, in their batch-size bucket
    assert counts.by_load == {("all", "m", "2-4", "good"): 1, ("m-code", "m", "2-4", "bad"): 1}


def test_status_shows_attainment_and_the_budget_left_since_the_start() -> None:
    a = analyzer(latency_slos=[SLO])
    for i in range(200):  # 196 good, 2 late, 2 slow (2% bad where 1% is allowed), 5 unmeasured
        late, slow = i in (0, 1), i in (2, 3)
        a.ingest(timed(0.9 if late else 0.1, 0.09 if slow else 0.01, task="chat"))
    for _ in range(5):
        a.ingest(timed(None, 0.01))
    (row,) = latency_slo_status(a.snapshot(20.0))
    assert row["requests"] == 200
    assert row["good"] == 196
    assert row["by_result"] == {"good": 196, "ttft_missed": 2, "tpot_missed": 2, "unmeasured": 5}
    assert row["attainment"] == pytest.approx(0.98)
    assert row["error_budget_remaining"] == pytest.approx(1 - 0.02 / 0.01)  # -1: spent twice


def test_an_objective_whose_burns_cannot_page_is_refused() -> None:
    with pytest.raises(ValueError, match=r"give at least 0\.931"):
        LatencyObjective(name="x", ttft_ms=1, tpot_ms=1, objective=0.9)
