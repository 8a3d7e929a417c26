"""What a TPOT comparison says (analysis/compare/goodput.py): its JSON row field by field
against docs/status.schema.json, its reasons and caveats word for word, each at its edge."""

from __future__ import annotations

import math
import random

import jsonschema
import orjson
import pytest
from specwatch.analysis.compare.goodput import INSUFFICIENT, combined_ratio, compare_tpot
from specwatch.analysis.compare.same_load import LoadSlope, Pair, Spread
from specwatch.analysis.counting.stats import t_quantile
from specwatch.analysis.counting.sums import Sums

from tests.support import ROOT

NAMES = ("model", "ctx_bucket", "task")
TPOT = {"1-4": 0.010, "5-16": 0.020, "17-64": 0.030}


def side(
    rng: random.Random, per_load: dict[str, int], tokens: float = 30.0
) -> dict[tuple[str, ...], Sums]:
    """Cells of model m's one slice: per load bucket, requests of `tokens` decode tokens each
    whose TPOT varies around the bucket's (a log-normal factor a request)."""
    out: dict[tuple[str, ...], Sums] = {}
    for load, n in per_load.items():
        cell = Sums()
        for _ in range(n):
            cell.add(TPOT[load] * tokens * math.exp(rng.gauss(0, 0.3)), tokens)
        out["m", "0-512", "chat", load] = cell
    return out


def row_schema() -> dict[str, object]:
    schema = orjson.loads((ROOT / "docs" / "status.schema.json").read_bytes())
    return {"$ref": "#/$defs/change_tpot_row", "$defs": schema["$defs"]}


def test_a_rows_json_is_the_schemas_with_each_sides_requests_tpot_and_load() -> None:
    rng = random.Random(3)
    before, after = side(rng, {"1-4": 60}), side(rng, {"1-4": 60})
    (row,), _ = compare_tpot(before, after, 0.95, 0.03, 5, 30)
    shown = row.as_dict(NAMES, ("before", "after"))
    jsonschema.validate(shown, row_schema(), cls=jsonschema.Draft202012Validator)
    assert ("m", "0-512", "chat") == (shown["model"], shown["ctx_bucket"], shown["task"])
    for name, sums in (("before", before), ("after", after)):
        (cell,) = sums.values()
        assert 60 == shown[name]["requests"]
        assert cell.x / cell.y == pytest.approx(shown[name]["tpot_seconds"], rel=1e-12)
        assert shown[name]["mean_load"] is None  # these cells carry no load
    assert row.ratio is not None
    want = {"estimate": row.ratio.estimate, "lower": row.ratio.lower, "upper": row.ratio.upper}
    assert want == shown["ratio"]
    assert (row.verdict, row.reason, 1) == (shown["verdict"], shown["reason"], 1)
    assert 1 == shown["loads_compared"]
    assert row.load_adjustment == shown["load_adjustment"] == 1.0
    assert shown["factors"] is None  # no engine steps in these cells
    # the sides named as `compare` names them
    assert {"a", "b"} <= set(row.as_dict(NAMES, ("a", "b")))


def test_sides_whose_loads_do_not_overlap_say_so_with_each_sides_loads() -> None:
    rng = random.Random(5)
    before, after = side(rng, {"1-4": 40}), side(rng, {"5-16": 40, "17-64": 40})
    (row,), (model,) = compare_tpot(before, after, 0.95, 0.03, 5, 30)
    assert INSUFFICIENT == row.verdict == model.verdict
    assert row.reason == (
        "the two sides' loads do not overlap (before at 1-4 in flight, after at 17-64, 5-16): "
        "no comparison at the same load, and none extrapolated"
    )
    # a before side that timed no load at all (4 requests: below a cell's 5) overlaps nothing
    # either, and says so as too few requests, not as loads apart
    (thin,), _ = compare_tpot(side(rng, {"1-4": 4}), after, 0.95, 0.03, 5, 30)
    assert thin.reason == (
        "too few requests timed at loads both sides saw: 0 before, 0 after (at least 30 a side)"
    )


def test_too_few_requests_at_the_loads_both_saw_says_each_sides_count() -> None:
    rng = random.Random(7)
    before, after = side(rng, {"1-4": 29, "5-16": 50}), side(rng, {"1-4": 100})
    (row,), _ = compare_tpot(before, after, 0.95, 0.03, 5, 30)
    assert row.reason == (
        "too few requests timed at loads both sides saw: 29 before, 100 after (at least 30 a side)"
    )


def test_exactly_the_minimum_a_side_is_compared_and_a_wide_interval_says_so() -> None:
    """30 a side (the gate) with TPOT varying 30% a request: compared, too wide for a verdict."""
    rng = random.Random(11)
    (row,), _ = compare_tpot(side(rng, {"1-4": 30}), side(rng, {"1-4": 30}), 0.95, 0.03, 5, 30)
    assert row.ratio is not None
    assert INSUFFICIENT == row.verdict
    assert "the interval is too wide to tell slower, faster or the same" == row.reason


@pytest.mark.parametrize(("unpaired", "said"), [(10, True), (9, False)])
def test_a_fifth_of_the_after_sides_tokens_at_loads_only_it_saw_is_a_caveat(
    unpaired: int, said: bool
) -> None:
    """40 requests of 30 tokens at the load both saw, 10 (a fifth of the after side's tokens:
    the bar) at one only the after side saw: said, with the share; 9 (18%): not."""
    rng = random.Random(13)
    before, after = side(rng, {"1-4": 40}), side(rng, {"1-4": 40, "5-16": unpaired})
    (row,), _ = compare_tpot(before, after, 0.95, 0.03, 5, 30)
    caveat = (
        "20% of the after side's decode tokens ran at loads the before side did not see: "
        "judged on the loads both saw"
    )
    assert (caveat if said else None) == row.caveat


def test_the_combined_ratio_with_a_load_slope_by_hand() -> None:
    """Two cells of one load bucket whose sides' loads differ (shifts 1.5 and -0.5) and a
    learnt slope: the estimate less slope x shift per cell, the slope's variance on the
    weighted shifts' sum, Welch-Satterthwaite over the cells' sides and the slope."""
    rng = random.Random(17)
    cells = []
    for shift, spreads in ((1.5, (Spread(0.04, 5.0), Spread(0.09, 7.0))),
                           (-0.5, (Spread(0.02, 3.0), Spread(0.05, 4.0)))):  # fmt: skip
        before, after = Sums(), Sums()
        for side, n in ((before, 3), (after, 4)):
            for _ in range(n):
                side.add(0.01 * 30 * math.exp(rng.gauss(0, 0.2)), 30.0)
        cells.append(Pair(before, after, ("m", "1-4"), shift, spreads, after.y))
    slope = LoadSlope(0.1, 0.0004, 12.0)
    found = combined_ratio(cells, {("m", "1-4"): slope}, 0.95)
    assert found is not None
    interval, adjustment = found
    total = sum(c.weight for c in cells)
    estimate = variance = shares = lever = 0.0
    for c in cells:
        w = c.weight / total
        v_b, v_a = c.log_variances()
        ratio = (c.after.x / c.after.y) / (c.before.x / c.before.y)
        estimate += w * (math.log(ratio) - slope.slope * c.shift)
        variance += w * w * (v_b + v_a)
        shares += w**4 * (v_b**2 / c.spreads[0].df + v_a**2 / c.spreads[1].df)
        lever += w * c.shift
    part = lever * lever * slope.variance
    variance += part
    shares += part * part / slope.df
    half = t_quantile(0.95, variance * variance / shares) * math.sqrt(variance)
    assert math.log(interval.estimate) == pytest.approx(estimate, rel=1e-12)
    assert math.log(interval.lower) == pytest.approx(estimate - half, rel=1e-9)
    assert math.log(interval.upper) == pytest.approx(estimate + half, rel=1e-9)
    assert math.log(adjustment) == pytest.approx(-slope.slope * lever, rel=1e-12)


def test_the_tokens_at_loads_only_the_after_side_saw_are_summed_over_its_cells() -> None:
    """Two such cells of 150 tokens each beside 1,200 at the shared load: 20%, said; 299 tokens
    in one (19.9%): not."""
    rng = random.Random(19)
    before = side(rng, {"1-4": 40})
    two = {**side(rng, {"1-4": 40}), **side(rng, {"5-16": 5}), **side(rng, {"17-64": 5})}
    (row,), _ = compare_tpot(before, two, 0.95, 0.03, 5, 30)
    assert row.caveat is not None
    assert row.caveat.startswith("20% of the after side's decode tokens")
    short = {**side(rng, {"1-4": 40}), **side(rng, {"5-16": 1}, tokens=299.0)}
    (row,), _ = compare_tpot(before, short, 0.95, 0.03, 5, 30)
    assert row.caveat is None


def test_a_slice_only_the_before_side_saw_is_insufficient_without_a_caveat() -> None:
    rng = random.Random(23)
    before = side(rng, {"1-4": 40})
    before["m", "0-512", "code", "1-4"] = next(iter(side(rng, {"1-4": 40}).values()))
    slices, _ = compare_tpot(before, side(rng, {"1-4": 40}), 0.95, 0.03, 5, 30)
    (code,) = [row for row in slices if row.key[2] == "code"]
    assert (INSUFFICIENT, None, 0) == (code.verdict, code.caveat, code.after.requests)
    shown = code.as_dict(NAMES, ("before", "after"))
    assert (None, None) == (shown["after"]["tpot_seconds"], shown["ratio"])
    assert shown["before"]["tpot_seconds"] is not None
