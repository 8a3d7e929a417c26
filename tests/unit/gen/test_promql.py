"""What the generators share (gen/promql.py): Prometheus' durations both ways, the windows of
a rendering at a time scale, the recorded names' levels, and Student's t as a PromQL
expression evaluated here, at the table's edge and past it."""

from __future__ import annotations

import re

import pytest
from specwatch import conventions as C
from specwatch.analysis.counting.stats import t_quantile, t_table_df
from specwatch.gen import promql as Q


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(86400, "1d"), (3600, "1h"), (5400, "90m"), (60, "1m"), (90, "90s"), (1, "1s"),
     (2.5, "2500ms"), (0.001, "1ms"), (172800, "2d")],
)  # fmt: skip
def test_a_duration_in_the_largest_unit_that_divides_it_and_back(seconds: float, text: str) -> None:
    assert text == Q.duration(seconds)
    assert seconds == pytest.approx(Q.parse_duration(text))


@pytest.mark.parametrize("bad", [0, -5])
def test_a_duration_must_be_positive(bad: float) -> None:
    with pytest.raises(ValueError, match=f"^a duration must be positive, got {bad}$"):
        Q.duration(bad)


@pytest.mark.parametrize("bad", ["", "5", "m", "1.5h", "5w", "h5"])
def test_text_that_is_not_one_duration_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        Q.parse_duration(bad)


def test_a_renderings_windows_are_the_production_ones_over_its_time_scale() -> None:
    assert ("1h", "5m", "1m") == (Q.Windows()("1h"), Q.Windows()("5m"), Q.Windows()(60))
    fast = Q.Windows(60.0)
    assert ("1m", "5s", "1m", "500ms") == (fast("1h"), fast("5m"), fast("60m"), fast(30))
    with pytest.raises(ValueError, match="time scale must be positive"):
        Q.Windows(0.0)
    assert ("5m", "1h", "6h") == Q.zone_windows((3600.0, 300.0, 21600.0))


def test_the_recorded_names_carry_their_level_and_window() -> None:
    assert Q.rate("slice", "x_total", "5m") == C.recorded("slice", "x_total", "rate5m")
    assert Q.increase("model", "x_total", "1h") == C.recorded("model", "x_total", "increase1h")
    assert Q.alpha("model", "30m") == C.recorded("model", C.ACCEPTANCE_ALPHA, "ratio_rate30m")
    assert Q.robust_alpha("slice", "1h") == C.recorded("slice", C.ACCEPTANCE_ALPHA, "robust1h")
    assert Q.slo_burn_rate("6h") == C.recorded("slice", C.RECORDED_SLO_BURN_RATE, "ratio6h")
    assert Q.by(("a", "b")) == "a, b"
    assert Q.moments("model")[0] == C.MODEL_REQUESTS
    assert Q.moments("slice")[0] == C.SLICE_REQUESTS
    assert "cell:specwatch_x:robust30m" == C.recorded("cell", "specwatch_x", "robust30m")
    for level in ("slices", "SLICE", ""):  # a name no dashboard or alert reads
        with pytest.raises(ValueError, match="recorded series level"):
            C.recorded(level, "specwatch_x", "rate5m")
    for operation in ("INCREASE", "XXincreaseXX", "5m", ""):
        with pytest.raises(ValueError, match="recorded series operations"):
            C.recorded("cell", "specwatch_x", operation)


def evaluated(expr: str, df: float) -> float:
    """The t expression as Prometheus evaluates it on a series `df` of value `df`: PromQL's
    `==` and `>` with bool, round, ^ and the arithmetic, in Python."""
    python = expr.replace("^", "**").replace("== bool", "==").replace("> bool", ">")
    python = re.sub(r"round\(df\)", "rnd", python).replace("df", "d")
    return float(eval(python.replace("\n", " "), {"rnd": round(df), "d": df}))


@pytest.mark.parametrize("confidence", [0.95, 0.9995])
def test_students_t_in_promql_is_the_sidecars_on_the_table_and_past_it(confidence: float) -> None:
    expr = Q.t_expr("df", confidence)
    top = t_table_df(confidence)
    for df in (1.0, 2.0, float(top)):
        assert evaluated(expr, df) == pytest.approx(t_quantile(confidence, df), rel=1e-12)
    for df in (top + 1.0, 4 * top):
        assert evaluated(expr, df) == pytest.approx(t_quantile(confidence, df), rel=1e-4)
