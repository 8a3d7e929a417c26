"""The goodput comparison's cells in PromQL: per cell (a slice's load bucket) and track TPOT,
its log variance from the slice's pooled spread, the load's slope per model and load bucket,
and the cells paired canary with stable at the same load (gen/goodput_rules.py's module
docstring says the whole method; this is its first half)."""

from __future__ import annotations

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.canary import (
    CANARY,
    CHOSEN,
    STABLE,
    recorded_name,
)
from specwatch.gen.template import PromQL, Recording
from specwatch.settings import Settings

CELL: tuple[str, ...] = (*Q.SLICE, C.Label.LOAD)
PAIR: tuple[str, ...] = tuple(label for label in CELL if label not in C.RUN_LABELS)
BUCKET: tuple[str, ...] = (C.Label.MODEL, C.Label.LOAD)  # where the load's slope is learnt
# each counter's short name in the rules, in C.GOODPUT_CELL_COUNTERS' order
SUMS = tuple(
    zip(
        ("n", "x", "y", "xx", "xy", "yy", "yb", "xb", "ybb", "yyb", "yybb", "s", "ss", "xs", "ys"),
        C.GOODPUT_CELL_COUNTERS,
        strict=True,
    )
)


# a request's squared relative deviation from its cell's TPOT, summed over the cell's requests
DEVIATION = PromQL("""
    clamp_min(${xx} - 2 * ${tpot} * ${xy} + ${tpot} ^ 2 * ${yy}, 0) / (${tpot} > 0) ^ 2
    and ${n} >= 2
""")

# the slice's pooled spread: deviations over the squared tokens of the cells that have one
SPREAD = PromQL("""
    sum by (${slice}) (${deviation})
    / (sum by (${slice}) (${yy} and on(${cell}) ${deviation}) > 0)
""")

# a cell's log variance of TPOT from the pooled spread
LOG_VARIANCE = PromQL("""
    ${n} / clamp_min(${n} - 1, 1)
    * on(${slice}) group_left() ${spread}
    * ${yy} / (${y} > 0) ^ 2
    and on(${cell}) ${deviation}
""")

SLOPE_VARIANCE_PART = PromQL("""
    ${deviation} / ${yy}
    * clamp_min(${yybb} - 2 * ${load} * ${yyb} + ${load} ^ 2 * ${yy}, 0)
""")

SLOPE_DF = PromQL("""
    clamp_min(
      sum by (${bucket}) (${n} and on(${cell}) ${slope_spread})
      - 2 * count by (${bucket}) (${slope_spread}),
      1
    )
    and on(${bucket}) ${slope}
""")

# a cell is paired where both sides have the requests, a variance, and a slope if loads differ
PAIRED = PromQL("""
    ${both} * 0 + 1
    and on(${cell}) ${n}{track="${canary}"} >= ${least}
    and on(${pair}) ${stable_n} >= ${least}
    and on(${cell}) ${log_variance}{track="${canary}"}
    and on(${pair}) ${stable_log_variance}
    unless on(${cell}) (${shift} != 0 unless on(${bucket}) ${slope})
""")

# the parts of Welch's degrees of freedom, canary's and stable's
TPOT_DF_PART = PromQL("""
    ${log_variance}{track="${canary}"} ^ 2
    / ${spread_df}{track="${canary}"}
    + on(${pair}) group_left(${baseline_config}) (${stable_part})
    and on(${cell}) ${paired}
""")

SIDE_REQUESTS = PromQL("""
    label_replace(${canary_n}, "side", "${canary}", "", "")
    or label_replace(${paired} * on(${pair}) group_left() ${stable_n}, "side", "${stable}", "", "")
""")


def stable_side(series: str, settings: Settings) -> str:
    """A stable cell's series on the stable config each canary cell compares with (the one
    with the most requests in the cell), `baseline_config` added."""
    chosen = recorded_name("cell", C.RECORDED_CANARY_TPOT_BASELINE, settings, "increase")
    return (
        f'({series}{{track="{STABLE}"}} * on({Q.by(CELL)}) '
        f"group_left({C.Label.BASELINE_CONFIG}) ({chosen} * 0 + 1))"
    )


def joined_sides(left: str, op: str, right: str, settings: Settings) -> str:
    """`left` of each canary cell `op` `right` of the stable cell it compares with."""
    return (
        f'{left}{{track="{CANARY}"}}\n{op} on({Q.by(PAIR)}) '
        f"group_left({C.Label.BASELINE_CONFIG}) {stable_side(right, settings)}"
    )


def _spread_rules(settings: Settings, part: dict[str, str]) -> list[Recording]:
    """Per cell and track TPOT and the requests' squared relative deviation; per slice and
    track the pooled spread and its degrees of freedom, and each cell's log variance from it;
    then the load's slope (_slope_rules)."""
    n, x, y, xx, xy, yy = (part[name] for name in ("n", "x", "y", "xx", "xy", "yy"))
    cell, slice_ = Q.by(CELL), Q.by(Q.SLICE)
    tpot = recorded_name("cell", C.RECORDED_GOODPUT_TPOT, settings, "ratio")
    deviation = recorded_name("cell", C.RECORDED_GOODPUT_DEVIATION, settings)
    spread = recorded_name("slice", C.RECORDED_GOODPUT_SPREAD, settings)
    spread_df = recorded_name("slice", C.RECORDED_GOODPUT_SPREAD_DF, settings)
    return [
        Recording(tpot, f"{x} / ({y} > 0)"),
        Recording(deviation, DEVIATION(xx=xx, xy=xy, yy=yy, tpot=tpot, n=n)),
        Recording(spread, SPREAD(slice=slice_, deviation=deviation, yy=yy, cell=cell)),
        Recording(
            spread_df,
            f"clamp_min(sum by ({slice_}) ({n} - 1 and on({cell}) {deviation}), 1)",
        ),
        Recording(
            recorded_name("cell", C.RECORDED_GOODPUT_LOG_VARIANCE, settings),
            LOG_VARIANCE(
                n=n, slice=slice_, spread=spread, yy=yy, y=y, cell=cell, deviation=deviation
            ),
        ),
        Recording(
            recorded_name("cell", C.RECORDED_GOODPUT_SPREAD_DF, settings),
            f"{deviation} * 0 + on({slice_}) group_left() {spread_df}",
        ),
        *_slope_rules(settings, part),
    ]


def _slope_rules(settings: Settings, part: dict[str, str]) -> list[Recording]:
    """Per cell and track the mean load and the slope's parts; per model and load bucket the
    load's relative slope, its variance and degrees of freedom, from the variation of load
    within each cell and track (analysis/compare/same_load.load_slopes)."""
    n, y, yy, yb, xb = part["n"], part["y"], part["yy"], part["yb"], part["xb"]
    ybb, yyb, yybb = part["ybb"], part["yyb"], part["yybb"]
    cell, bucket = Q.by(CELL), Q.by(BUCKET)
    tpot = recorded_name("cell", C.RECORDED_GOODPUT_TPOT, settings, "ratio")
    deviation = recorded_name("cell", C.RECORDED_GOODPUT_DEVIATION, settings)
    load = recorded_name("cell", C.RECORDED_GOODPUT_MEAN_LOAD, settings, "ratio")
    slope_part = recorded_name("cell", C.RECORDED_GOODPUT_SLOPE_PART, settings)
    slope_spread = recorded_name("cell", C.RECORDED_GOODPUT_SLOPE_SPREAD, settings)
    variance_part = recorded_name("cell", C.RECORDED_GOODPUT_SLOPE_VARIANCE_PART, settings)
    denominator = f"(sum by ({bucket}) ({slope_spread}) > 0)"
    return [
        Recording(load, f"{yb} / ({y} > 0)\nand {yb} > 0"),
        Recording(
            slope_part,
            f"{xb} / {tpot} - {yb}\nand on({cell}) {deviation}\nand on({cell}) {load}",
        ),
        Recording(
            slope_spread,
            f"clamp_min({ybb} - {yb} * {load}, 0)\nand on({cell}) {deviation}",
        ),
        Recording(
            variance_part,
            SLOPE_VARIANCE_PART(deviation=deviation, yy=yy, yybb=yybb, load=load, yyb=yyb),
        ),
        Recording(
            slope_name(settings),
            f"sum by ({bucket}) ({slope_part})\n/ {denominator}",
        ),
        Recording(
            slope_name(settings, C.RECORDED_GOODPUT_SLOPE_VARIANCE),
            f"sum by ({bucket}) ({variance_part})\n/ {denominator} ^ 2",
        ),
        Recording(
            slope_name(settings, C.RECORDED_GOODPUT_SLOPE_DF),
            SLOPE_DF(
                bucket=bucket, n=n, cell=cell, slope_spread=slope_spread, slope=slope_name(settings)
            ),
        ),
    ]


def slope_name(settings: Settings, metric: str = C.RECORDED_GOODPUT_SLOPE) -> str:
    return recorded_name("load", metric, settings)


def increases(settings: Settings) -> dict[str, str]:
    """Each sum's recorded increase over the canary window, by its short name (SUMS)."""
    return {name: recorded_name("cell", metric, settings, "increase") for name, metric in SUMS}


def cell_rules(settings: Settings, windows: Q.Windows) -> list[Recording]:
    """Per cell and track: the counters' increases, TPOT, its log variance, the mean load;
    the stable config each cell compares with; the paired cells, the canary's load less
    stable's, their log-ratio at the same load, its variance, the parts of Welch's degrees
    of freedom, the canary's decode tokens and each side's requests."""
    span, cell, pair = windows(settings.canary.window_seconds), Q.by(CELL), Q.by(PAIR)
    bucket = Q.by(BUCKET)
    least = settings.canary.tpot_min_cell_requests
    part = increases(settings)
    n, y = part["n"], part["y"]
    tpot = recorded_name("cell", C.RECORDED_GOODPUT_TPOT, settings, "ratio")
    log_variance = recorded_name("cell", C.RECORDED_GOODPUT_LOG_VARIANCE, settings)
    spread_df = recorded_name("cell", C.RECORDED_GOODPUT_SPREAD_DF, settings)
    load = recorded_name("cell", C.RECORDED_GOODPUT_MEAN_LOAD, settings, "ratio")
    chosen = recorded_name("cell", C.RECORDED_CANARY_TPOT_BASELINE, settings, "increase")
    paired = recorded_name("cell", C.RECORDED_CANARY_TPOT_PAIRED, settings, "bool")
    shift = recorded_name("cell", C.RECORDED_CANARY_TPOT_LOAD_SHIFT, settings)

    def stable(series: str) -> str:
        return stable_side(series, settings)

    def joined(left: str, op: str, right: str) -> str:
        return joined_sides(left, op, right, settings)

    def canary(series: str) -> str:
        """A canary cell's series on its paired rows, baseline_config kept (group_left: a
        one-to-one match on() would keep the matched labels only)."""
        return f'{paired} * on({cell}) group_left() {series}{{track="{CANARY}"}}'

    # the slope's part of a cell's log-ratio: 0 where no slope was learnt (the shift is then 0)
    moved = f"({shift} * on({bucket}) group_left() {slope_name(settings)}\nor {shift} * 0)"
    rules: list[Recording] = [
        Recording(part[name], f"sum by ({cell}) (increase({metric}_total[{span}]))")
        for name, metric in SUMS
    ]
    rules += _spread_rules(settings, part)
    rules += [
        Recording(
            chosen,
            CHOSEN(
                pair=pair,
                trials=n,
                stable=STABLE,
                baseline_config=C.Label.BASELINE_CONFIG,
                config=C.Label.CONFIG,
            ),
        ),
        Recording(
            shift,
            (f"{joined(load, '-', load)}\nor {joined(n, '*', n)} * 0"),
        ),
        Recording(
            paired,
            PAIRED(
                both=joined(n, ">= bool", n),
                cell=cell,
                n=n,
                canary=CANARY,
                least=least,
                pair=pair,
                stable_n=stable(n),
                log_variance=log_variance,
                stable_log_variance=stable(log_variance),
                shift=shift,
                bucket=bucket,
                slope=slope_name(settings),
            ),
        ),
        Recording(
            recorded_name("cell", C.RECORDED_CANARY_TPOT_LOG_RATIO, settings),
            f"ln({joined(tpot, '/', tpot)})\n- {moved}\nand on({cell}) {paired}",
        ),
        Recording(
            recorded_name("cell", C.RECORDED_CANARY_TPOT_VARIANCE, settings),
            f"({joined(log_variance, '+', log_variance)})\nand on({cell}) {paired}",
        ),
        Recording(
            recorded_name("cell", C.RECORDED_CANARY_TPOT_DF_PART, settings),
            TPOT_DF_PART(
                log_variance=log_variance,
                canary=CANARY,
                spread_df=spread_df,
                pair=pair,
                baseline_config=C.Label.BASELINE_CONFIG,
                cell=cell,
                paired=paired,
                stable_part=f"{stable(log_variance)} ^ 2 / {stable(spread_df)}",
            ),
        ),
        Recording(
            recorded_name("cell", C.RECORDED_CANARY_TPOT_TOKENS, settings),
            canary(y),
        ),
        Recording(
            recorded_name("cell", C.RECORDED_CANARY_TPOT_REQUESTS, settings),
            SIDE_REQUESTS(
                canary_n=canary(n),
                canary=CANARY,
                paired=paired,
                pair=pair,
                stable_n=stable(n),
                stable=STABLE,
            ),
        ),
    ]
    return rules
