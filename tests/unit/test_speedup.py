from __future__ import annotations

import pytest
from specwatch import conventions as C
from specwatch.analysis.analyzer import Analyzer
from specwatch.analysis.speedup import MEASURED, MODELLED, gain_of, modelled_gain
from specwatch.model import Latency, RequestRecord, SpecDecodeBlock
from specwatch.settings import Settings, load_settings


def all_accepted_at_20ms(settings: Settings) -> Analyzer:
    analyzer = Analyzer(settings, started=0.0)
    for i in range(10):
        analyzer.ingest(
            RequestRecord(
                ts=float(i), request_id=str(i), model="m", task="code", outcome=C.Outcome.OBSERVED,
                prompt_tokens=50, completion_tokens=40,
                spec=SpecDecodeBlock(3, (3,) * 10, (3,) * 10), latency=Latency(tpot=0.020),
            )
        )  # fmt: skip
    return analyzer


def test_the_modelled_gain_is_tau_over_the_cost_of_drafting() -> None:
    # alpha 0.8, K = 4, i.i.d.: tau = (1 - 0.8^5) / 0.2 = 3.3616; c = 0.05 -> 3.3616 / 1.2
    tau = (1 - 0.8**5) / (1 - 0.8)
    assert pytest.approx(2.8013, abs=1e-4) == modelled_gain(tau, 4, 0.05)


def test_a_baseline_makes_the_gain_measured() -> None:
    gain = gain_of(tau=2.0, k=4, cost_ratio=0.05, baseline_tpot=0.030, spec_tpot=0.020)
    assert gain is not None
    assert (MEASURED, 1.5) == (gain.method, pytest.approx(gain.ratio))
    modelled = gain_of(tau=2.0, k=4, cost_ratio=0.05)
    assert modelled is not None
    assert MODELLED == modelled.method
    assert gain_of(tau=None, k=4, cost_ratio=0.05) is None


def test_a_measured_gain_below_one_makes_the_zone_red_despite_good_acceptance() -> None:
    settings = load_settings(
        zones={"min_trials": 30, "min_requests": 3, "min_dwell_seconds": 0},
        speedup={"baseline_tpot_ms": {"m": 10.0}},
    )
    # ten requests, every draft accepted (tau 4), at twice the baseline's 10 ms per token
    analyzer = all_accepted_at_20ms(settings)
    analyzer.evaluate(10.0)
    snapshot = analyzer.snapshot(10.0)
    (rollup,) = snapshot.rollups
    assert rollup.gain is not None
    assert (MEASURED, C.Zone.RED) == (rollup.gain.method, rollup.zone)
    assert pytest.approx(0.5) == rollup.gain.ratio
    # no latency per slice: modelled, with the c the measurement implies (7/3), and slower too
    (slice_view,) = snapshot.slices
    assert slice_view.gain is not None
    assert (MODELLED, C.Zone.RED) == (slice_view.gain.method, slice_view.zone)
    assert pytest.approx(4 / (1 + 3 * 7 / 3)) == slice_view.gain.ratio


def test_without_a_configured_c_it_is_estimated_from_the_measured_latency() -> None:
    # baseline 10 ms per token; with speculation 20 ms per token at tau = 4 (3 of 3 accepted):
    # a step takes 80 ms against 10 ms, so c = (80 / 10 - 1) / 3 = 2.33: drafting is the cost
    settings = load_settings(
        zones={"min_trials": 30, "min_requests": 3, "min_dwell_seconds": 0},
        speedup={"baseline_tpot_ms": {"m": 10.0}},
    )
    analyzer = all_accepted_at_20ms(settings)
    (rollup,) = analyzer.snapshot(10.0).rollups
    assert rollup.advice is not None
    assert (0, 1.0) == (rollup.advice.best_k, rollup.advice.best_speedup)
    (_, expected_at_1, speedup_at_1) = rollup.advice.table[1]
    assert pytest.approx(2.0 / (1 + 7 / 3)) == speedup_at_1
    assert 2.0 == expected_at_1
