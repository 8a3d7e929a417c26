"""Goodput: a request's decode time, the slices' TPOT with its interval, and the comparison of
two configs' TPOT within load buckets (analysis/speed/goodput.py, analysis/compare/goodput.py)."""

from __future__ import annotations

import math
import random

import pytest
from specwatch import conventions as C
from specwatch.analysis.compare.goodput import (
    FASTER,
    INSUFFICIENT,
    SAME,
    SLOWER,
    combined_ratio,
    compare_tpot,
    verdict,
)
from specwatch.analysis.compare.same_load import Pair, load_slopes, log_variance, own_spread
from specwatch.analysis.counting.slicing import CtxBuckets
from specwatch.analysis.counting.stats import Interval, robust_variance, t_quantile
from specwatch.analysis.counting.sums import DecodeSums, Sums
from specwatch.analysis.speed.goodput import GoodputTracker, decode_of, tpot_interval
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.settings import load_settings


def record(
    tpot: float | None,
    tokens: int,
    *,
    prompt: int = 100,
    in_flight: int | None = 1,
    spec: bool = True,
    variant: str = C.VARIANT_SPEC,
    source: str | None = None,
    ts: float = 1000.0,
) -> RequestRecord:
    steps = max(1, (tokens - 1) // 3)
    block = SpecDecodeBlock(3, (3,) * steps, (2,) * steps) if spec else None
    return RequestRecord(
        ts=ts,
        request_id="r",
        model="m",
        task="chat",
        outcome=C.Outcome.OBSERVED,
        prompt_tokens=prompt,
        completion_tokens=tokens,
        spec=block,
        latency=Latency(tpot=tpot, tpot_source=source),
        variant=variant,
        in_flight=in_flight,
    )


def sums(pairs: list[tuple[float, float]]) -> Sums:
    out = Sums()
    for x, y in pairs:
        out.add(x, y)
    return out


def test_a_requests_decode_time_is_its_tpot_over_the_tokens_after_the_first() -> None:
    decoded = decode_of(record(0.02, 11))
    assert decoded is not None
    assert decoded[0] == pytest.approx(0.2)
    assert decoded[1] == 10
    assert decode_of(record(0.02, 1)) is None  # nothing decoded after the first token
    assert decode_of(record(None, 11)) is None
    assert decode_of(record(float("nan"), 11)) is None


def test_a_slices_tpot_is_the_ratio_of_sums_and_counts_speculative_requests_only() -> None:
    settings = load_settings(ctx_buckets="512")
    tracker = GoodputTracker(settings, CtxBuckets(settings.ctx_buckets))
    tracker.add(record(0.01, 101), "m")  # 1.0 s over 100 tokens
    tracker.add(record(0.03, 11), "m")  # 0.3 s over 10 tokens
    tracker.add(record(0.5, 11, spec=False, variant=C.VARIANT_BASELINE), "m")
    tracker.add(record(0.5, 11, spec=False), "m")  # no speculative block: not speculation
    tracker.add(record(0.02, 21, source=C.TpotSource.STREAM), "m")  # 0.4 s over 20
    views = tracker.views(1000.0)
    view = views["m", "0-512", "chat"]
    assert view.requests == 3
    assert view.tpot is not None
    assert view.tpot.estimate == pytest.approx(1.7 / 130)  # not the mean of 0.01, 0.03, 0.02
    assert views["m", C.ALL, C.ALL].requests == 3
    assert tracker.sources == {"m": {"vllm": 2, "stream": 1}}


def test_a_request_is_in_the_ctx_bucket_of_its_first_step_and_its_load_bucket() -> None:
    settings = load_settings(ctx_buckets="512")
    tracker = GoodputTracker(settings, CtxBuckets(settings.ctx_buckets))
    tracker.add(record(0.01, 11, prompt=511), "m")  # its first step is at position 512
    tracker.add(record(0.01, 11, prompt=510, in_flight=None), "m")
    cells = tracker.since_start()
    assert set(cells) == {("m", "512+", "chat", "1"), ("m", "0-512", "chat", "unknown")}


def test_the_tpot_interval_is_symmetric_on_the_log_scale_with_students_t() -> None:
    rng = random.Random(3)
    s = sums([(rng.uniform(0.1, 2.0), float(rng.randrange(5, 200))) for _ in range(12)])
    interval = tpot_interval(s, 0.95)
    assert interval is not None
    ratio = s.x / s.y
    sd = math.sqrt(robust_variance(s.requests, s.x, s.y, s.xx, s.xy, s.yy)) / ratio
    half = t_quantile(0.95, 11) * sd
    assert interval.estimate == pytest.approx(ratio)
    assert math.log(interval.upper / ratio) == pytest.approx(half, rel=1e-12)
    assert math.log(ratio / interval.lower) == pytest.approx(half, rel=1e-12)
    assert tpot_interval(sums([(0.2, 10.0)]), 0.95) is None  # one request: no variance


def test_verdicts_read_the_whole_interval_of_the_ratio() -> None:
    assert verdict(Interval(1.1, 1.01, 1.2), 0.03) == SLOWER
    assert verdict(Interval(0.9, 0.8, 0.99), 0.03) == FASTER
    assert verdict(Interval(1.0, 0.98, 1.02), 0.03) == SAME
    assert verdict(Interval(1.0, 0.96, 1.02), 0.03) == INSUFFICIENT
    assert verdict(Interval(1.02, 0.99, 1.05), 0.03) == INSUFFICIENT  # above 1, not surely
    assert verdict(Interval(0.98, 0.95, 1.01), 0.03) == INSUFFICIENT  # below 1, not surely
    assert verdict(None, 0.03) == INSUFFICIENT
    # the edges: a bound at exactly 1 is not sure of either side; the margin's edge is inside
    assert verdict(Interval(1.05, 1.0, 1.1), 0.03) == INSUFFICIENT
    assert verdict(Interval(0.95, 0.9, 1.0), 0.03) == INSUFFICIENT
    assert verdict(Interval(1.0, 0.97, 1.03), 0.03) == SAME


def test_the_combined_ratio_weighs_each_load_bucket_by_the_after_sides_tokens() -> None:
    rng = random.Random(5)

    def side(tpot: float, n: int) -> Sums:
        return sums([(tpot * y * rng.uniform(0.8, 1.2), y) for y in (20.0, 40.0, 60.0) * n])

    low = (side(0.010, 10), side(0.008, 10))
    high = (side(0.020, 10), side(0.022, 3))  # the after side has a third of its tokens here
    got = combined_ratio([Pair.alone(*low), Pair.alone(*high)], {}, 0.95)
    assert got is not None
    interval, adjustment = got
    assert adjustment == 1.0  # no load moments: nothing moved
    w_low = low[1].y / (low[1].y + high[1].y)

    def log_ratio(pair: tuple[Sums, Sums]) -> float:
        before, after = pair
        return math.log((after.x / after.y) / (before.x / before.y))

    want = w_low * log_ratio(low) + (1 - w_low) * log_ratio(high)
    assert math.log(interval.estimate) == pytest.approx(want, rel=1e-12)


def cells(
    rng: random.Random, tpot_by_load: dict[str, float], per_load: dict[str, int]
) -> dict[tuple[str, ...], Sums]:
    """A side's cells for one slice of model m: per load bucket `per_load` requests whose
    TPOT varies around the bucket's (a log-normal factor per request)."""
    out: dict[tuple[str, ...], Sums] = {}
    for load, n in per_load.items():
        out["m", "0-512", "chat", load] = sums(
            [
                (tpot_by_load[load] * y * math.exp(rng.gauss(0, 0.3)), y)
                for y in (float(rng.randrange(20, 200)) for _ in range(n))
            ]
        )
    return out


TPOT_BY_LOAD = {"1-4": 0.010, "5-16": 0.020}


def test_a_canary_at_lighter_load_is_not_called_faster_for_its_load() -> None:
    """Same config on both sides; the canary runs most of its requests at the light load where
    TPOT is half: its raw TPOT is far lower, and the comparison within load buckets says no
    more than `same` or `insufficient` (a raw ratio of sums would say faster)."""
    rng = random.Random(7)
    stable = cells(rng, TPOT_BY_LOAD, {"1-4": 30, "5-16": 170})
    canary = cells(rng, TPOT_BY_LOAD, {"1-4": 170, "5-16": 30})
    raw = sum(s.x for s in canary.values()) / sum(s.y for s in canary.values())
    raw /= sum(s.x for s in stable.values()) / sum(s.y for s in stable.values())
    assert raw < 0.8
    slices, models = compare_tpot(stable, canary, 0.95, 0.03, 5, 30)
    assert [row.verdict for row in (*slices, *models)] != [FASTER, FASTER]
    assert {row.verdict for row in (*slices, *models)} <= {SAME, INSUFFICIENT}
    assert models[0].loads_compared == 2


def test_a_slower_canary_is_slower_in_its_slice_and_model() -> None:
    rng = random.Random(11)
    stable = cells(rng, TPOT_BY_LOAD, {"1-4": 100, "5-16": 100})
    canary = cells(rng, {k: v * 1.15 for k, v in TPOT_BY_LOAD.items()}, {"1-4": 100, "5-16": 100})
    slices, models = compare_tpot(stable, canary, 0.95, 0.03, 5, 30)
    assert [row.verdict for row in slices] == [SLOWER]
    assert [row.verdict for row in models] == [SLOWER]
    ratio = models[0].ratio
    assert ratio is not None
    assert ratio.lower < 1.15 < ratio.upper


def test_loads_one_side_did_not_see_are_left_out_and_said() -> None:
    rng = random.Random(13)
    stable = cells(rng, TPOT_BY_LOAD, {"1-4": 100})
    canary = cells(rng, TPOT_BY_LOAD, {"1-4": 40, "5-16": 100})
    _, models = compare_tpot(stable, canary, 0.95, 0.03, 5, 30)
    assert models[0].loads_compared == 1
    assert models[0].caveat is not None
    assert "loads the before side did not see" in models[0].caveat


def test_a_slice_below_the_request_gate_is_insufficient() -> None:
    rng = random.Random(17)
    stable = cells(rng, TPOT_BY_LOAD, {"1-4": 100})
    canary = cells(rng, {k: v * 1.5 for k, v in TPOT_BY_LOAD.items()}, {"1-4": 29})
    slices, _ = compare_tpot(stable, canary, 0.95, 0.03, 5, 30)
    assert [row.verdict for row in slices] == [INSUFFICIENT]
    assert slices[0].ratio is None


def test_each_model_keeps_its_own_family() -> None:
    """A model's bounds do not move when another model is compared beside it."""
    rng = random.Random(19)
    stable = cells(rng, TPOT_BY_LOAD, {"1-4": 60, "5-16": 60})
    canary = cells(rng, TPOT_BY_LOAD, {"1-4": 60, "5-16": 60})
    alone, _ = compare_tpot(stable, canary, 0.95, 0.03, 5, 30)
    other = {("n", *key[1:]): value for key, value in stable.items()}
    with_other, _ = compare_tpot({**stable, **other}, {**canary, **other}, 0.95, 0.03, 5, 30)
    mine = [row for row in with_other if row.key[0] == "m"]
    assert [row.ratio for row in mine] == [row.ratio for row in alone]


def test_a_side_below_the_request_gate_is_insufficient_whichever_side_it_is() -> None:
    """Both sides held to the minimum timed requests: 29 stable requests against 100 canary
    ones (50% slower) compare nothing, as 29 canary ones against 100 stable do."""
    rng = random.Random(23)
    slow = {k: v * 1.5 for k, v in TPOT_BY_LOAD.items()}
    for before, after in (({"1-4": 29}, {"1-4": 100}), ({"1-4": 100}, {"1-4": 29})):
        stable, canary = cells(rng, TPOT_BY_LOAD, before), cells(rng, slow, after)
        slices, models = compare_tpot(stable, canary, 0.95, 0.03, 5, 30)
        assert [INSUFFICIENT, INSUFFICIENT] == [row.verdict for row in (*slices, *models)]
        assert slices[0].reason is not None
        assert "at least 30 a side" in slices[0].reason


def test_where_the_slices_are_the_models_each_cell_is_counted_once() -> None:
    """Cells keyed (model, load) (`--by model`): a slice is its model, and its rollup holds
    each request once, not twice."""
    rng = random.Random(29)
    stable = {(k[0], k[-1]): v for k, v in cells(rng, TPOT_BY_LOAD, {"1-4": 20}).items()}
    canary = {(k[0], k[-1]): v for k, v in cells(rng, TPOT_BY_LOAD, {"1-4": 20}).items()}
    slices, models = compare_tpot(stable, canary, 0.95, 0.03, 5, 30)
    assert [20] == [row.before.requests for row in models]
    assert [] == slices  # the models are the slices: their rows only
    assert [20] == [row.after.requests for row in models]
    assert [INSUFFICIENT] == [row.verdict for row in models]  # 20 a side: below the gate


def test_the_family_is_the_slices_compared_not_every_slice_seen() -> None:
    """A slice too thin to compare takes no share of its model's error budget: the compared
    slice's bounds are those it has without the thin one beside it."""
    rng = random.Random(31)
    stable = cells(rng, TPOT_BY_LOAD, {"1-4": 80})
    canary = cells(rng, TPOT_BY_LOAD, {"1-4": 80})
    alone, _ = compare_tpot(stable, canary, 0.95, 0.03, 5, 30)
    (few,) = cells(rng, TPOT_BY_LOAD, {"1-4": 8}).values()
    thin = {("m", "0-512", "code", "1-4"): few}
    beside, _ = compare_tpot({**stable, **thin}, {**canary, **thin}, 0.95, 0.03, 5, 30)
    assert [INSUFFICIENT] == [row.verdict for row in beside if row.key[2] == "code"]
    (compared,) = [row for row in beside if row.key[2] == "chat"]
    assert compared.ratio == alone[0].ratio


def test_a_sides_log_variance_is_the_cluster_robust_one_with_n_over_n_minus_1() -> None:
    """Var(log TPOT) from the sums equals the per-request form: n / (n - 1) x sum of each
    request's (x_i - T y_i)^2 over (T sum y)^2. Three requests: the n - 1 matters."""
    requests = [(1.0, 50.0), (3.0, 100.0), (1.2, 40.0)]
    s = sums(requests)
    t = s.x / s.y
    by_hand = sum((x - t * y) ** 2 for x, y in requests) / (t * s.y) ** 2 * 3 / 2
    assert log_variance(s, own_spread(s)) == pytest.approx(by_hand, rel=1e-12)
    assert own_spread(s).df == 2


def test_the_combined_interval_has_welchs_degrees_of_freedom_over_the_cells() -> None:
    """Two cells of few requests: the half-width is Student's t at Welch-Satterthwaite's df,
    (sum of the weighted variances)^2 over the sum of each one's square over its df,
    computed here by hand from each side's variance."""
    rng = random.Random(37)

    def side(tpot: float, n: int) -> Sums:
        return sums([(tpot * y * rng.uniform(0.7, 1.3), y) for y in (20.0, 50.0) * n])

    pairs = [Pair.alone(side(0.010, 3), side(0.011, 2)), Pair.alone(side(0.02, 2), side(0.02, 4))]
    got = combined_ratio(pairs, {}, 0.95)
    assert got is not None
    interval, _ = got
    total = sum(pair.after.y for pair in pairs)
    variance = shares = 0.0
    for pair in pairs:
        w = pair.after.y / total
        for sums_, spread in zip((pair.before, pair.after), pair.spreads, strict=True):
            v = log_variance(sums_, spread)
            variance += w * w * v
            shares += (w * w * v) ** 2 / spread.df
    half = t_quantile(0.95, variance * variance / shares) * math.sqrt(variance)
    assert math.log(interval.upper / interval.estimate) == pytest.approx(half, rel=1e-9)
    assert math.log(interval.estimate / interval.lower) == pytest.approx(half, rel=1e-9)


def test_the_load_slope_is_the_pooled_within_cell_regression_computed_by_hand() -> None:
    """kappa per (model, load bucket) from two cells (one a side): sum over cells of
    sum y_i b_i (t_i / T_g - 1) over sum y_i (b_i - B_g)^2; its variance the cells' e_g x
    sum y_i^2 (b_i - B_g)^2 over the denominator squared; df n - 2 per cell. A cell without
    loads, or of one request, adds nothing."""
    rng = random.Random(53)
    cells_: list[list[tuple[float, float, float]]] = []  # (seconds, tokens, load) a request
    sides = []
    for key in (("m", "0-512", "chat", "5-8"), ("m", "0-512", "code", "5-8")):
        requests = []
        for _ in range(12):
            tokens, load = float(rng.randrange(20, 200)), float(rng.randrange(5, 9))
            tpot = 0.01 * (1 + 0.04 * (load - 6)) * rng.uniform(0.9, 1.1)
            requests.append((tpot * tokens, tokens, load))
        cells_.append(requests)
        s = DecodeSums()
        for x, y, b in requests:
            s.add_request(x, y, b, 10.0)
        sides.append({key: s})
    untimed = DecodeSums()
    untimed.add_request(1.0, 100.0, None, 10.0)
    untimed.add_request(1.0, 100.0, None, 10.0)
    lone = DecodeSums()
    lone.add_request(1.0, 100.0, 6.0, 10.0)
    sides.append({("m", "0-512", "chat", "5-8"): untimed, ("m", "x", "chat", "5-8"): lone})
    slopes = load_slopes(sides)
    num = den = var = 0.0
    for requests in cells_:
        x, y = sum(r[0] for r in requests), sum(r[1] for r in requests)
        t, b_mean = x / y, sum(r[1] * r[2] for r in requests) / y
        e = sum((r[0] - t * r[1]) ** 2 for r in requests) / t**2 / sum(r[1] ** 2 for r in requests)
        num += sum(r[1] * r[2] * (r[0] / r[1] / t - 1) for r in requests)
        den += sum(r[1] * (r[2] - b_mean) ** 2 for r in requests)
        var += e * sum(r[1] ** 2 * (r[2] - b_mean) ** 2 for r in requests)
    (slope,) = slopes.values()
    assert ("m", "5-8") in slopes
    assert slope.slope == pytest.approx(num / den, rel=1e-9)
    assert slope.variance == pytest.approx(var / den**2, rel=1e-9)
    assert slope.df == 24 - 2 * 2


def test_each_view_holds_the_window_the_start_and_the_engine_step_by_hand() -> None:
    """Three speculative requests, 1.7 s over 130 decode tokens and 33 + 3 + 6 listed steps:
    per slice, rollup and load bucket the window's and the start's TPOT and the step's time;
    past the window, the window's are gone and the start's stay."""
    settings = load_settings(ctx_buckets="512")
    tracker = GoodputTracker(settings, CtxBuckets(settings.ctx_buckets))
    for tpot, tokens in ((0.01, 101), (0.03, 11), (0.02, 21)):
        tracker.add(record(tpot, tokens), "m")
    views = tracker.views(1000.0)
    assert {("m", "0-512", "chat"), ("m", C.ALL, C.ALL), ("m", "load", "1")} == set(views)
    for view in views.values():
        assert (3, 3) == (view.requests, view.requests_since_start)
        assert view.seconds == pytest.approx(1.7 / 130)
        assert view.seconds_since_start == pytest.approx(1.7 / 130)
        assert view.step_seconds == pytest.approx(1.7 / 42)
        assert view.tpot_since_start is not None
        assert view.tpot_since_start.estimate == pytest.approx(1.7 / 130)
    later = tracker.views(1000.0 + 2 * settings.window.length_seconds)["m", C.ALL, C.ALL]
    assert (0, None, None, 3) == (
        later.requests,
        later.seconds,
        later.tpot,
        later.requests_since_start,
    )
    assert later.seconds_since_start == pytest.approx(1.7 / 130)
