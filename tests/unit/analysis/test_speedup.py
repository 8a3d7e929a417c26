from __future__ import annotations

import math
from dataclasses import fields, replace
from typing import Any

import pytest
from specwatch import conventions as C
from specwatch.analysis.analyzer import Analyzer
from specwatch.analysis.counting.stats import Interval, t_quantile
from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.speed.speedup import (
    MEASURED,
    MODELLED,
    Cost,
    Gain,
    log_variance,
    measured_gain,
    modelled_gain,
)
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.settings import Settings, load_settings


def all_accepted_at_20ms(settings: Settings) -> Analyzer:
    analyzer = Analyzer(settings, started=0.0)
    for i in range(20):  # speedup.min_baseline_requests
        analyzer.ingest(
            RequestRecord(
                ts=i / 2, request_id=str(i), model="m", task="code", outcome=C.Outcome.OBSERVED,
                prompt_tokens=50, completion_tokens=40,
                spec=SpecDecodeBlock(3, (3,) * 10, (3,) * 10), latency=Latency(tpot=0.020),
            )
        )  # fmt: skip
    return analyzer


def test_the_modelled_gain_is_tau_over_the_cost_of_drafting() -> None:
    # alpha 0.8, K = 4, i.i.d.: tau = (1 - 0.8^5) / 0.2 = 3.3616; c = 0.05 -> 3.3616 / 1.2
    tau = (1 - 0.8**5) / (1 - 0.8)
    gain = modelled_gain(Interval(tau, tau - 0.12, tau + 0.12), 4, Cost(0.05, "configured"))
    assert MODELLED == gain.method
    assert pytest.approx(2.8013, abs=1e-4) == gain.ratio
    assert pytest.approx((tau - 0.12) / 1.2) == gain.lower
    assert pytest.approx((tau + 0.12) / 1.2) == gain.upper


def sums(pairs: list[tuple[float, float]]) -> Sums:
    out = Sums()
    for x, y in pairs:
        out.add(x, y)
    return out


def test_the_measured_gain_is_token_weighted_not_a_mean_of_requests() -> None:
    # speculation: a long answer at 10 ms/token and a short one at 40 ms/token. Pooled over
    # tokens that is (0.99 * 100 + 0.04 * 1 ... ) ~ 10.3 ms; the mean of the two would be 25 ms.
    spec = sums([(0.010 * 99, 99), (0.040 * 1, 1)] * 5)
    base = sums([(0.020 * 99, 99), (0.020 * 1, 1)] * 5)
    gain = measured_gain(spec, base, 0.95)
    assert gain is not None
    expected = 0.020 / ((0.010 * 99 + 0.040) / 100)
    assert MEASURED == gain.method
    assert pytest.approx(expected) == gain.ratio
    assert gain.lower < gain.ratio < gain.upper


def test_the_measured_gain_interval_widens_with_spread_between_requests() -> None:
    narrow = sums([(0.010 * 50, 50), (0.011 * 50, 50)] * 10)
    wide = sums([(0.005 * 50, 50), (0.016 * 50, 50)] * 10)
    base = sums([(0.020 * 50, 50)] * 20)
    tight, loose = measured_gain(narrow, base, 0.95), measured_gain(wide, base, 0.95)
    assert tight is not None
    assert loose is not None
    assert pytest.approx(tight.ratio) == loose.ratio
    assert loose.upper - loose.lower > 5 * (tight.upper - tight.lower)


@pytest.mark.parametrize("side", ["spec", "baseline"])
def test_times_whose_squares_overflow_measure_nothing_rather_than_an_exact_gain(
    side: str,
) -> None:
    """A replayed time of 1e300 ms per token: its square is inf, the robust variance read 0
    and the gain came out 'measured' with lower == upper. Now there is no measurement."""
    good = sums([(0.010 * 50, 50), (0.012 * 50, 50)] * 10)
    huge = sums([(0.010 * 50, 50), (1e297 * 50, 50)] * 10)
    spec, base = (huge, good) if side == "spec" else (good, huge)
    assert measured_gain(spec, base, 0.95) is None
    assert measured_gain(good, good, 0.95) is not None


def test_a_configured_baseline_is_a_constant_and_one_request_is_no_evidence() -> None:
    spec = sums([(0.010 * 50, 50), (0.012 * 50, 50)] * 10)
    gain = measured_gain(spec, None, 0.95, baseline_seconds_per_token=0.022)
    assert gain is not None
    assert pytest.approx(2.0) == gain.ratio
    assert measured_gain(sums([(0.5, 50)]), None, 0.95, 0.022) is None
    assert measured_gain(spec, None, 0.95) is None  # no baseline at all


def test_the_measured_gain_interval_covers_the_truth_about_as_claimed() -> None:
    """Lognormal per-request time per token (sd 0.3), 24 baseline and 80 speculative requests
    of 20..200 tokens: the 95% interval on the token-weighted gain covers the true 1.25."""
    import numpy as np

    rng = np.random.default_rng(5)
    covered, runs = 0, 400
    for _ in range(runs):

        def draw(n: int, median: float) -> Sums:
            tokens = rng.integers(20, 200, n)
            tpot = median * np.exp(rng.normal(0.0, 0.3, n))
            return sums([(float(t * m), float(t)) for t, m in zip(tokens, tpot, strict=True)])

        gain = measured_gain(draw(80, 0.016), draw(24, 0.020), 0.95)
        assert gain is not None
        covered += gain.lower <= 1.25 <= gain.upper
    assert 0.92 <= covered / runs <= 0.99


def test_a_measured_gain_below_one_makes_the_zone_red_despite_good_acceptance() -> None:
    settings = load_settings(
        zones={"min_trials": 30, "min_requests": 3, "min_dwell_seconds": 0, "slower_seconds": 0},
        speedup={"baseline_tpot_ms": {"m": 10.0}},
    )
    # twenty requests, every draft accepted (tau 4), at twice the baseline's 10 ms per token
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
        zones={"min_trials": 30, "min_requests": 3, "min_dwell_seconds": 0, "slower_seconds": 0},
        speedup={"baseline_tpot_ms": {"m": 10.0}},
    )
    analyzer = all_accepted_at_20ms(settings)
    (rollup,) = analyzer.snapshot(10.0).rollups
    assert rollup.advice is not None
    assert (0, 1.0) == (rollup.advice.best_k, rollup.advice.best_speedup)
    (_, expected_at_1, speedup_at_1) = rollup.advice.table[1]
    assert pytest.approx(2.0 / (1 + 7 / 3)) == speedup_at_1
    assert 2.0 == expected_at_1


def test_the_live_gain_weighs_each_request_by_its_decode_tokens() -> None:
    """Speculation: 9 answers of 100 tokens at 10 ms/token and 9 of 2 tokens at 40 ms; the
    baseline 20 ms/token. Pooled over tokens speculation takes 10.3 ms/token (gain 1.94); a
    mean over requests would say 25 ms (gain 0.8) and turn the model red for nothing."""
    settings = load_settings(
        speedup={"baseline_tpot_ms": {"m": 20.0}, "min_baseline_requests": 2},
    )
    analyzer = Analyzer(settings, started=0.0)
    for i in range(18):
        tokens, tpot = (100, 0.010) if i % 2 else (2, 0.040)
        analyzer.ingest(
            RequestRecord(
                ts=float(i), request_id=str(i), model="m", task="code",
                outcome=C.Outcome.OBSERVED, prompt_tokens=50, completion_tokens=tokens,
                spec=SpecDecodeBlock(3, (3, 3), (2, 1)), latency=Latency(tpot=tpot),
            )
        )  # fmt: skip
    (rollup,) = analyzer.snapshot(18.0).rollups
    assert rollup.gain is not None
    expected = 0.020 / ((0.010 * 99 + 0.040 * 1) / 100)
    assert MEASURED == rollup.gain.method
    assert pytest.approx(expected) == rollup.gain.ratio


def test_gains_equal_field_by_field_an_insufficient_ones_nan_equal_to_nan() -> None:
    """Compiled (mypyc) floats are unboxed: without its own __eq__ no two insufficient gains,
    nor one and itself, would be equal, and a view kept across snapshots never matched."""
    gain = Gain.insufficient(3600.0)
    assert gain == Gain.insufficient(3600.0)
    assert hash(gain) == hash(Gain.insufficient(3600.0))
    assert gain != Gain.insufficient(60.0)
    assert len(fields(Gain)) == len(gain._fields())  # every field compared
    modelled = modelled_gain(Interval(2.0, 1.8, 2.2), 3, Cost(0.1, "configured"))
    # another value of each field's own type (a compiled Gain checks them)
    others: dict[str, Any] = {
        "ratio": 0.5, "method": MEASURED, "lower": 0.5, "upper": 0.5, "window_seconds": 60.0,
        "cost_ratio": 0.5, "cost_source": "measured", "cost_lower": 0.05, "cost_upper": 0.5,
    }  # fmt: skip
    assert {field.name for field in fields(Gain)} == set(others)
    for name, value in others.items():
        assert modelled != replace(modelled, **{name: value}), name
    assert modelled == replace(modelled)


def test_the_measured_gain_has_welchs_df_and_needs_two_timed_requests_a_side() -> None:
    """base TPOT / spec TPOT, its bounds exp(-+t(df) sqrt(v_s + v_b)) with Welch's df by hand
    on sides of 3 and 5 requests; with a configured baseline, spec's variance alone at n - 1;
    one request a side, or nothing timed, gives no gain."""
    spec = sums([(0.8, 100.0), (1.1, 120.0), (0.5, 60.0)])
    base = sums([(1.0, 100.0), (1.5, 110.0), (0.6, 50.0), (2.0, 150.0), (1.2, 90.0)])
    gain = measured_gain(spec, base, 0.95)
    assert gain is not None
    v_s, v_b = log_variance(spec), log_variance(base)
    df = (v_s + v_b) ** 2 / (v_s**2 / 2 + v_b**2 / 4)
    spread = math.exp(t_quantile(0.95, df) * math.sqrt(v_s + v_b))
    ratio = (base.x / base.y) / (spec.x / spec.y)
    assert gain.ratio == pytest.approx(ratio, rel=1e-12)
    assert MEASURED == gain.method
    assert gain.upper == pytest.approx(ratio * spread, rel=1e-9)
    assert gain.lower == pytest.approx(ratio / spread, rel=1e-9)
    configured = measured_gain(spec, None, 0.95, baseline_seconds_per_token=0.01)
    assert configured is not None
    spread = math.exp(t_quantile(0.95, 2) * math.sqrt(v_s))
    assert configured.upper == pytest.approx(0.01 / (spec.x / spec.y) * spread, rel=1e-9)
    assert measured_gain(spec, None, 0.95) is None  # no baseline at all
    one = sums([(1.0, 100.0)])
    assert measured_gain(one, base, 0.95) is None
    assert measured_gain(spec, one, 0.95) is None
    assert measured_gain(spec, sums([(1.0, 100.0), (1.1, 100.0)]), 0.95) is not None
    assert measured_gain(sums([(0.0, 100.0), (0.0, 50.0)]), base, 0.95) is None  # untimed
    assert measured_gain(spec, sums([(1.0, 0.0), (1.0, 0.0)]), 0.95) is None  # no tokens
