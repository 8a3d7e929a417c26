"""Two configs' TPOT at the same load, and its two factors (analysis/compare/same_load.py,
analysis/compare/factors.py, analysis/compare/goodput.py): the load's slope learnt within the
cells, never from the sides' difference; the factors multiply back to the ratio; which one
decides is said from the whole intervals."""

from __future__ import annotations

import math
import random

import pytest
from specwatch.analysis.compare.factors import (
    STEP_TIME,
    TOKENS_PER_STEP,
    factor_pairs,
    factor_part,
    factors_of,
)
from specwatch.analysis.compare.goodput import INSUFFICIENT, SAME, SLOWER, compare_tpot
from specwatch.analysis.compare.same_load import Pair, Spread, load_slopes, mean_load
from specwatch.analysis.counting.stats import Interval
from specwatch.analysis.counting.sums import DecodeSums, Sums

PER_REQUEST = 0.03  # each other request in flight adds this share of a step


def side(
    rng: random.Random, loads: range, n: int, step: float = 0.004, tokens_per_step: float = 2.5
) -> dict[tuple[str, ...], Sums]:
    """One slice's cells in load bucket 17-32: `n` requests at loads drawn from `loads`, each
    step costing `step` at one request in flight, 3% more per other one."""
    cell = DecodeSums()
    for _ in range(n):
        load = rng.choice(loads)
        y = float(rng.randrange(20, 300))
        steps = y / (tokens_per_step * rng.uniform(0.9, 1.1))
        x = steps * step * (1 + PER_REQUEST * (load - 1)) * math.exp(rng.gauss(0, 0.15))
        cell.add_request(x, y, float(load), steps)
    return {("m", "0-512", "chat", "17-32"): cell}


def compared(before: dict[tuple[str, ...], Sums], after: dict[tuple[str, ...], Sums]) -> object:
    _, models = compare_tpot(before, after, 0.95, 0.03, 5, 30)
    return models[0]


def test_equal_configs_at_other_loads_of_one_bucket_are_not_slower() -> None:
    """18 against 30 in flight, both in 17-32: the raw ratio is ~1.2; at the same load 1."""
    rng = random.Random(1)
    before, after = side(rng, range(17, 22), 400), side(rng, range(27, 33), 400)
    b, a = before["m", "0-512", "chat", "17-32"], after["m", "0-512", "chat", "17-32"]
    assert (a.x / a.y) / (b.x / b.y) > 1.18
    _, models = compare_tpot(before, after, 0.95, 0.03, 5, 30)
    (model,) = models
    assert model.ratio is not None
    assert model.verdict in (SAME, INSUFFICIENT)
    assert model.ratio.lower <= 1.0 <= model.ratio.upper
    assert model.load_adjustment is not None
    # the loads' effect out: 1 / 1.204, learnt from loads that vary by ~1.5 within each side
    # (its sd over seeds 0.038, its mean 0.830 over 60 of them)
    assert model.load_adjustment == pytest.approx(1 / 1.204, rel=0.1)
    assert model.caveat == (
        f"the two sides' loads differ within a load bucket: {1 / model.load_adjustment - 1:+.0%} "
        "of the raw ratio came from them and was taken out along a straight line of TPOT "
        "against load; where TPOT bends there (a KV-cache knee), put a load.batch_edges edge "
        "at the bend"
    )


def test_the_slope_is_learnt_within_the_cells_not_from_the_sides_difference() -> None:
    """Each side at one load per cell: no variation within a side, so no slope, however far
    apart the sides' loads; the cell is then not compared (no extrapolation)."""
    rng = random.Random(2)
    before, after = side(rng, range(18, 19), 100), side(rng, range(30, 31), 100)
    assert load_slopes((before, after)) == {}
    _, models = compare_tpot(before, after, 0.95, 0.03, 5, 30)
    assert models[0].ratio is None
    assert models[0].verdict == INSUFFICIENT
    varied = side(rng, range(17, 33), 400)
    (slope,) = load_slopes((varied,)).values()
    # d log TPOT / d load at the mean load (~24.5): 0.03 / (1 + 0.03 x 23.5)
    assert slope.slope == pytest.approx(0.03 / (1 + 0.03 * 23.5), rel=0.25)


def test_the_factors_multiply_back_to_the_ratio_and_name_the_dearer_step() -> None:
    rng = random.Random(3)
    before, after = side(rng, range(17, 33), 400), side(rng, range(17, 33), 400, step=0.0044)
    model = compare_tpot(before, after, 0.95, 0.03, 5, 30)[1][0]
    assert model.verdict == SLOWER
    assert model.ratio is not None
    assert model.factors is not None
    step, made = model.factors.step_time, model.factors.tokens_per_step
    assert model.ratio.estimate == pytest.approx(step.estimate / made.estimate, rel=1e-12)
    assert model.factors.deciding == (STEP_TIME,)
    assert model.factors.said.startswith("slower: each step costs")
    assert "tokens per step" in model.factors.said
    shown = model.as_dict(("model",), ("before", "after"))
    assert model.factors.as_dict() == shown["factors"]


def test_fewer_tokens_a_step_is_named_as_the_acceptance_factor() -> None:
    rng = random.Random(4)
    before = side(rng, range(17, 33), 400)
    after = side(rng, range(17, 33), 400, tokens_per_step=2.2)
    model = compare_tpot(before, after, 0.95, 0.03, 5, 30)[1][0]
    assert model.verdict == SLOWER
    assert model.factors is not None
    assert model.factors.deciding == (TOKENS_PER_STEP,)
    assert "each step yields" in model.factors.said
    assert "fewer tokens" in model.factors.said


def test_a_factor_is_named_on_its_whole_interval() -> None:
    """An estimate above 1 with an interval across it names nothing; both past 1 name both,
    the step first; `faster` reads the other way."""
    unsure, dearer = Interval(1.05, 0.98, 1.12), Interval(1.09, 1.05, 1.13)
    fewer, same = Interval(0.9, 0.86, 0.94), Interval(1.0, 0.99, 1.01)
    assert factors_of(unsure, same, "slower", 0.03).deciding == ()
    assert "neither factor alone is clear" in factors_of(unsure, same, "slower", 0.03).said
    both = factors_of(dearer, fewer, "slower", 0.03)
    assert both.deciding == (STEP_TIME, TOKENS_PER_STEP)
    assert both.said == (
        "slower: each step costs 9.0% more [+5.0%, +13.0%]; "
        "each step yields 10.0% fewer tokens [-14.0%, -6.0%]"
    )
    assert "tokens per step unchanged" in factors_of(dearer, same, "slower", 0.03).said
    assert factors_of(dearer, same, "faster", 0.03).deciding == ()
    cheaper = Interval(0.9, 0.86, 0.94)
    assert factors_of(cheaper, same, "faster", 0.03).deciding == (STEP_TIME,)
    assert factors_of(dearer, same, "same", 0.03).deciding == ()


def test_a_side_without_recorded_loads_is_compared_as_it_is() -> None:
    """Cells from a sidecar older than the load moments: no mean load, no adjustment."""
    rng = random.Random(5)
    plain = {key: Sums(*sums) for key, sums in side(rng, range(17, 33), 100).items()}
    assert mean_load(next(iter(plain.values()))) is None
    model = compare_tpot(plain, side(rng, range(17, 33), 100), 0.95, 0.03, 5, 30)[1][0]
    assert model.ratio is not None
    assert model.load_adjustment == 1.0
    assert model.factors is None  # steps unknown on one side


def _timed(seconds: float, tokens: float, steps: float) -> DecodeSums:
    s = DecodeSums()
    for share in (0.4, 0.6):
        s.add_request(seconds * share, tokens * share, 4.0, steps * share)
    return s


def test_factor_pairs_carry_each_factors_own_spread_and_the_shift_on_the_step_only() -> None:
    """The step time's pairs read spreads 0 and 1 (before, after), tokens per step's 2 and 3;
    the load's shift moves the step, not what it yields; a side without engine steps, or a
    slice without its spreads, gives no factors."""
    key: tuple[str, ...] = ("m", "0-512", "chat")
    spreads: tuple[dict[tuple[str, ...], Spread], ...] = tuple(
        {key: Spread(0.01 * (i + 1), 10.0 + i)} for i in range(4)
    )
    before, after = _timed(2.0, 200.0, 80.0), _timed(2.4, 200.0, 80.0)
    pair = Pair(before, after, ("m", "5-8"), 1.5, (spreads[0][key], spreads[1][key]), 200.0, key)
    got = factor_pairs([pair], spreads)
    assert got is not None
    (step,), (made,) = got
    assert (step.spreads, made.spreads) == (
        (spreads[0][key], spreads[1][key]),
        (spreads[2][key], spreads[3][key]),
    )
    assert (step.shift, made.shift) == (1.5, 0.0)
    assert (step.weight, made.weight, step.bucket) == (200.0, 200.0, ("m", "5-8"))
    assert step.after.x / step.after.y == pytest.approx(2.4 / 80.0)
    assert made.after.x / made.after.y == pytest.approx(200.0 / 80.0)
    stepless = Pair(before, _timed(2.4, 200.0, 0.0), ("m", "5-8"), 0.0, pair.spreads, 200.0, key)
    assert factor_pairs([pair, stepless], spreads) is None
    assert factor_pairs([pair], (*spreads[:3], dict[tuple[str, ...], Spread]())) is None
    assert factor_part(before, STEP_TIME).x == pytest.approx(2.0)
    assert factor_part(before, TOKENS_PER_STEP).x == pytest.approx(200.0)
    assert factor_part(Sums(2, 1.0, 10.0), STEP_TIME).requests == 0  # no steps known


def test_each_factor_is_said_at_its_edges() -> None:
    """A bound at exactly 1 moved nothing; the margin's edge is `unchanged`."""
    edge = Interval(1.05, 1.0, 1.1)
    assert "not measurably changed" in factors_of(edge, edge, "slower", 0.03).said
    assert factors_of(edge, edge, "slower", 0.03).deciding == ()
    inside = Interval(1.0, 0.97, 1.03)
    said = factors_of(inside, inside, "same", 0.03).said
    assert "each step's cost unchanged" in said
    assert "tokens per step unchanged" in said
    fewer = Interval(0.9, 0.85, 0.95)
    assert factors_of(inside, fewer, "slower", 0.03).deciding == (TOKENS_PER_STEP,)
    assert factors_of(fewer, inside, "faster", 0.03).deciding == (STEP_TIME,)
    assert factors_of(fewer, inside, "slower", 0.03).deciding == ()


def test_each_phrase_word_for_word_a_bound_at_1_moving_nothing_and_the_json_shape() -> None:
    cheaper, more = Interval(0.9, 0.85, 0.95), Interval(1.1, 1.05, 1.15)
    faster = factors_of(cheaper, more, "faster", 0.03)
    assert faster.said == (
        "faster: each step costs 10.0% less [-15.0%, -5.0%]; "
        "each step yields 10.0% more tokens [+5.0%, +15.0%]"
    )
    assert faster.as_dict() == {
        "step_time": {"estimate": 0.9, "lower": 0.85, "upper": 0.95},
        "tokens_per_step": {"estimate": 1.1, "lower": 1.05, "upper": 1.15},
        "deciding": [STEP_TIME, TOKENS_PER_STEP],
        "said": faster.said,
    }
    # an upper bound at exactly 1 is not below it, a lower bound at 1 not above it
    below, above = Interval(0.95, 0.9, 1.0), Interval(1.05, 1.0, 1.1)
    assert factors_of(below, above, "faster", 0.03).deciding == ()
    assert factors_of(above, below, "slower", 0.03).deciding == ()
    assert factors_of(Interval(1.5, 1.2, 2.5), below, "slower", 0.03).deciding == (STEP_TIME,)


def test_a_side_of_one_engine_step_has_factors_and_one_of_none_has_not() -> None:
    key: tuple[str, ...] = ("m", "0-512", "chat")
    one, none = _timed(0.02, 4.0, 1.0), _timed(0.02, 4.0, 0.0)
    assert 2 == factor_part(one, STEP_TIME).requests
    assert 0 == factor_part(none, STEP_TIME).requests
    spreads: tuple[dict[tuple[str, ...], Spread], ...] = tuple(
        {key: Spread(0.01, 10.0)} for _ in range(4)
    )
    for before, after, found in ((one, one, True), (none, one, False), (one, none, False)):
        pair = Pair(before, after, ("m", "1-4"), 0.0, (spreads[0][key], spreads[1][key]), 4.0, key)
        assert (factor_pairs([pair], spreads) is not None) == found
