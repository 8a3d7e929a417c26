"""The draft's cost from step times against drafted tokens (analysis/speed/draft_cost.py), and the
modelled gain it gives where no A/B baseline runs."""

from __future__ import annotations

import math
import random

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from specwatch import conventions as C
from specwatch.analysis.counting.slicing import CtxBuckets
from specwatch.analysis.replay import replay
from specwatch.analysis.speed.draft_cost import DraftCost, _Moments
from specwatch.analysis.speed.goodput import GoodputTracker
from specwatch.analysis.speed.speedup import ASSUMED, ESTIMATED, Cost
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.settings import load_settings

TARGET_STEP = 0.004


def fill(cost: DraftCost, rng: random.Random, c: float, ks: tuple[int, ...], n: int) -> None:
    """`n` requests, each drafting one K of `ks` (a schedule), each step a(1 + c K) with a
    per-request factor (sd 0.15) and per-step noise, at two loads (the target's step differs)."""
    for i in range(n):
        k, load = rng.choice(ks), i % 2
        steps = rng.randrange(10, 60)
        base = TARGET_STEP * (1.0 + 0.5 * load) * math.exp(rng.gauss(0, 0.15))
        seconds = sum(base * (1.0 + c * k) * rng.uniform(0.9, 1.1) for _ in range(steps))
        cost.add("m", load, steps, k * steps, seconds)


def test_the_cost_is_found_where_k_varies_and_its_interval_holds_it() -> None:
    held = 0
    for seed in range(40):
        cost = DraftCost(0.95)
        fill(cost, random.Random(seed), 0.05, (1, 3, 5, 7), 400)
        estimate = cost.estimate("m")
        assert estimate is not None
        held += estimate.lower <= 0.05 <= estimate.upper
        assert estimate.requests == 400
    assert held >= 35  # 95% nominal: at least 35 of 40 (fails at a 79% coverage 1 time in 100)


def test_under_one_fixed_k_nothing_identifies_the_cost() -> None:
    cost = DraftCost(0.95)
    fill(cost, random.Random(1), 0.05, (4,), 400)
    assert cost.estimate("m") is None
    assert cost.estimate("other") is None


def test_a_cost_too_uncertain_to_use_is_not_given() -> None:
    cost = DraftCost(0.95)
    fill(cost, random.Random(2), 0.002, (1, 3, 5, 7), 60)  # a cost lost in the noise
    assert cost.estimate("m") is None


def _record(
    i: int, k: int, seconds_per_step: float, steps: int, in_flight: int = 2
) -> RequestRecord:
    return RequestRecord(
        ts=1000.0 + i,
        request_id=f"r{i}",
        model="m",
        task="chat",
        outcome=C.Outcome.OBSERVED,
        prompt_tokens=100,
        completion_tokens=steps * (k + 1) + 1,
        spec=SpecDecodeBlock(k, (k,) * steps, (k - 1,) * steps),
        latency=Latency(tpot=seconds_per_step * steps / (steps * (k + 1))),
        in_flight=in_flight,
    )


def test_without_a_baseline_the_gain_is_modelled_on_the_estimated_cost() -> None:
    """A schedule that drafts 2 or 6: the step times tell c = 0.05 (4 ms + 0.2 ms a drafted
    token) and the model's gain is modelled on it, with its interval."""
    rng = random.Random(3)
    records = []
    for i in range(400):
        k = 2 if i % 2 else 6
        per_step = 0.004 * (1 + 0.05 * k) * math.exp(rng.gauss(0, 0.05))
        records.append(_record(i, k, per_step, rng.randrange(10, 40)))
    analyzer, end = replay(records, load_settings(ctx_buckets="512"))
    (rollup,) = analyzer.snapshot(end).rollups
    gain = rollup.gain
    assert gain is not None
    assert gain.cost_source == "estimated"
    assert gain.cost_ratio == pytest.approx(0.05, rel=0.1)
    assert gain.cost_lower is not None
    assert gain.cost_upper is not None
    assert gain.cost_lower < 0.05 < gain.cost_upper


@given(
    st.lists(
        st.tuples(
            st.floats(0.0, 8.0),  # x: drafted tokens a step
            st.floats(1e-4, 0.5),  # s: seconds a step
            st.integers(1, 500).map(float),  # w: steps
        ),
        max_size=40,
    )
)
def test_the_unrolled_moments_are_the_plain_sums(requests: list[tuple[float, ...]]) -> None:
    """`_Moments` keeps 21 sums in fields of their own (the compiled build's fast path): each
    is the plain sum over requests of w x^q s^p, and of w^2 x^q s^p."""
    moments = _Moments()
    for x, s, w in requests:
        moments.add(x, s, w)
    sums = [
        sum(w for _, _, w in requests),
        sum(w * x for x, _, w in requests),
        sum(w * x**2 for x, _, w in requests),
        sum(w * x * s for x, s, w in requests),
        sum(w * s for _, s, w in requests),
    ]
    squares = [
        [sum(w**2 * x**q * s**p for x, s, w in requests) for q in range(5)] for p in range(3)
    ]
    assert len(requests) == moments.n
    assert moments.sums == pytest.approx(sums, rel=1e-9, abs=1e-12)
    for row, plain in zip(moments.squares, squares, strict=True):
        assert row == pytest.approx(plain, rel=1e-9, abs=1e-12)


def test_a_spread_of_drafted_tokens_past_the_bar_in_sd_identifies_the_cost() -> None:
    """The bar is on the standard deviation (MIN_SPREAD, 0.5 tokens), read as the variance
    against its square: adaptive K moving 0.6 tokens either way (variance 0.36) identifies c;
    0.4 (0.16) does not."""
    for moved, identified in ((0.6, True), (0.4, False)):
        cost, rng = DraftCost(0.95), random.Random(5)
        for i in range(600):
            x = 4.0 + (moved if i % 2 else -moved)
            steps = 40
            seconds = sum(0.004 * (1 + 0.1 * x) * rng.uniform(0.98, 1.02) for _ in range(steps))
            cost.add("m", 0, steps, round(x * steps), seconds)
        assert (cost.estimate("m") is not None) == identified


def test_the_cost_is_the_line_over_steps_each_request_weighted_by_its_steps() -> None:
    """c = b / a of the least-squares line of seconds a step on drafted tokens a step, every
    request weighted by its steps (a step is the unit): computed here by hand."""
    rng = random.Random(6)
    cost = DraftCost(0.95)
    rows = []
    for _ in range(200):
        steps, x = rng.randrange(2, 80), float(rng.choice((1, 3, 5, 7)))
        s = 0.004 * (1 + 0.05 * x) * (1.3 if steps < 10 else 1.0) * rng.uniform(0.9, 1.1)
        cost.add("m", 0, steps, round(x * steps), s * steps)
        rows.append((x, s, float(steps)))
    w = sum(r[2] for r in rows)
    mx, ms = (sum(r[2] * r[k] for r in rows) / w for k in (0, 1))
    b = sum(r[2] * (r[0] - mx) * (r[1] - ms) for r in rows) / sum(
        r[2] * (r[0] - mx) ** 2 for r in rows
    )
    estimate = cost.estimate("m")
    assert estimate is not None
    assert estimate.ratio == pytest.approx(b / (ms - b * mx), rel=1e-9)


def test_the_cost_is_read_within_a_load_bucket_not_across_loads() -> None:
    """A batch-size schedule: 2 in flight drafting 2, 16 in flight drafting 6, the target's
    step slower at 16 and drafting free (c = 0). Within a load K never moves, so nothing
    identifies c; across loads the slower steps would read as a cost of drafting."""
    rng = random.Random(7)
    records = []
    for i in range(400):
        k, flight = (2, 2) if i % 2 else (6, 16)
        per_step = (0.004 if flight == 2 else 0.006) * math.exp(rng.gauss(0, 0.05))
        records.append(_record(i, k, per_step, rng.randrange(10, 40), flight))
    settings = load_settings(ctx_buckets="512")
    tracker = GoodputTracker(settings, CtxBuckets(settings.ctx_buckets))
    for record in records:
        tracker.add(record, "m")
    assumed = Cost(0.1, ASSUMED)
    assert assumed == tracker.cost("m", assumed)
    # the same schedule at one load: K moves within it and c (0.25 here) is found
    steady = GoodputTracker(settings, CtxBuckets(settings.ctx_buckets))
    for record in records:
        steady.add(msgspec.structs.replace(record, in_flight=2), "m")
    assert ESTIMATED == steady.cost("m", assumed).source
