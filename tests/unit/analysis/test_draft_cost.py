"""The draft's cost from step times against drafted tokens (analysis/speed/draft_cost.py), and the
modelled gain it gives where no A/B baseline runs."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specwatch import conventions as C
from specwatch.analysis.replay import replay
from specwatch.analysis.speed.draft_cost import DraftCost, _Moments
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


def _record(i: int, k: int, seconds_per_step: float, steps: int) -> RequestRecord:
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
        in_flight=2,
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
