"""Canary against stable on goodput in PromQL: per slice and per model the ratio canary /
stable of the decode time per output token (TPOT), compared at the same load and combined at
the canary's mix, with analysis/compare/goodput.py's interval (the alert that acts on it is
gen/goodput_alert.py's; its two factors gen/goodput_factors.py's).

Per cell (a slice's load bucket) each track's TPOT is the ratio of its decode seconds to its
decode tokens over the canary window, summed across pods; the variance of its log is
n / (n - 1) x e x yy / y^2, e the requests' squared relative deviation pooled over the slice's
cells per track (analysis/compare/same_load.py). Per model and load bucket kappa, the load's
relative slope, is learnt within each cell and track (both tracks, every slice) from the load
moments (conventions/counters.py). A cell is paired where both tracks timed `tpot_min_cell_requests`
requests (and, where their mean loads differ, a slope was learnt); the stable side is its
config with the most requests in the cell. A paired cell's log-ratio is moved to the canary's
mean load by kappa x the loads' difference. Per slice (and per model, over all its cells) the
log-ratios are weighted by their shares of the canary's decode tokens; the variance is the
weighted sum of the cells' plus, per load bucket, (the weighted loads' difference)^2
Var(kappa), and the degrees of freedom Welch-Satterthwaite's. A slice (model) is compared
where its paired cells hold `zones.min_requests` timed requests on each side; the family is a
model's slices compared and its rollup, the quantile gen/canary.py's.
"""

from __future__ import annotations

from typing import Any

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.canary import CANARY, STABLE, family_z, ratio_bound, recorded_name
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


def _spread_rules(settings: Settings, part: dict[str, str]) -> list[dict[str, Any]]:
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
        {"record": tpot, "expr": f"{x} / ({y} > 0)"},
        {
            "record": deviation,
            "expr": (
                f"clamp_min({xx} - 2 * {tpot} * {xy} + {tpot} ^ 2 * {yy}, 0) / ({tpot} > 0) ^ 2"
                f"\nand {n} >= 2"
            ),
        },
        {
            "record": spread,
            "expr": (
                f"sum by ({slice_}) ({deviation})\n"
                f"/ (sum by ({slice_}) ({yy} and on({cell}) {deviation}) > 0)"
            ),
        },
        {
            "record": spread_df,
            "expr": f"clamp_min(sum by ({slice_}) ({n} - 1 and on({cell}) {deviation}), 1)",
        },
        {
            "record": recorded_name("cell", C.RECORDED_GOODPUT_LOG_VARIANCE, settings),
            "expr": (
                f"{n} / clamp_min({n} - 1, 1)\n"
                f"* on({slice_}) group_left() {spread}\n"
                f"* {yy} / ({y} > 0) ^ 2\nand on({cell}) {deviation}"
            ),
        },
        {
            "record": recorded_name("cell", C.RECORDED_GOODPUT_SPREAD_DF, settings),
            "expr": f"{deviation} * 0 + on({slice_}) group_left() {spread_df}",
        },
        *_slope_rules(settings, part),
    ]


def _slope_rules(settings: Settings, part: dict[str, str]) -> list[dict[str, Any]]:
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
        {"record": load, "expr": f"{yb} / ({y} > 0)\nand {yb} > 0"},
        {
            "record": slope_part,
            "expr": f"{xb} / {tpot} - {yb}\nand on({cell}) {deviation}\nand on({cell}) {load}",
        },
        {
            "record": slope_spread,
            "expr": f"clamp_min({ybb} - {yb} * {load}, 0)\nand on({cell}) {deviation}",
        },
        {
            "record": variance_part,
            "expr": (
                f"{deviation} / {yy}\n"
                f"* clamp_min({yybb} - 2 * {load} * {yyb} + {load} ^ 2 * {yy}, 0)"
            ),
        },
        {
            "record": slope_name(settings),
            "expr": f"sum by ({bucket}) ({slope_part})\n/ {denominator}",
        },
        {
            "record": slope_name(settings, C.RECORDED_GOODPUT_SLOPE_VARIANCE),
            "expr": f"sum by ({bucket}) ({variance_part})\n/ {denominator} ^ 2",
        },
        {
            "record": slope_name(settings, C.RECORDED_GOODPUT_SLOPE_DF),
            "expr": (
                f"clamp_min(\n  sum by ({bucket}) ({n} and on({cell}) {slope_spread})\n"
                f"  - 2 * count by ({bucket}) ({slope_spread}),\n  1\n)\n"
                f"and on({bucket}) {slope_name(settings)}"
            ),
        },
    ]


def slope_name(settings: Settings, metric: str = C.RECORDED_GOODPUT_SLOPE) -> str:
    return recorded_name("load", metric, settings)


def increases(settings: Settings) -> dict[str, str]:
    """Each sum's recorded increase over the canary window, by its short name (SUMS)."""
    return {name: recorded_name("cell", metric, settings, "increase") for name, metric in SUMS}


def _cell_rules(settings: Settings, windows: Q.Windows) -> list[dict[str, Any]]:
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
    rules: list[dict[str, Any]] = [
        {"record": part[name], "expr": f"sum by ({cell}) (increase({metric}_total[{span}]))"}
        for name, metric in SUMS
    ]
    rules += _spread_rules(settings, part)
    rules += [
        {
            "record": chosen,
            "expr": (
                f'label_replace(\n  topk by ({pair}) (1, {n}{{track="{STABLE}"}}),\n'
                f'  "{C.Label.BASELINE_CONFIG}", "$1", "{C.Label.CONFIG}", "(.*)"\n)'
            ),
        },
        {
            "record": shift,
            "expr": (f"{joined(load, '-', load)}\nor {joined(n, '*', n)} * 0"),
        },
        {
            "record": paired,
            "expr": (
                f"{joined(n, '>= bool', n)} * 0 + 1\n"
                f'and on({cell}) {n}{{track="{CANARY}"}} >= {least}\n'
                f"and on({pair}) {stable(n)} >= {least}\n"
                f'and on({cell}) {log_variance}{{track="{CANARY}"}}\n'
                f"and on({pair}) {stable(log_variance)}\n"
                f"unless on({cell}) ({shift} != 0 unless on({bucket}) {slope_name(settings)})"
            ),
        },
        {
            "record": recorded_name("cell", C.RECORDED_CANARY_TPOT_LOG_RATIO, settings),
            "expr": f"ln({joined(tpot, '/', tpot)})\n- {moved}\nand on({cell}) {paired}",
        },
        {
            "record": recorded_name("cell", C.RECORDED_CANARY_TPOT_VARIANCE, settings),
            "expr": f"({joined(log_variance, '+', log_variance)})\nand on({cell}) {paired}",
        },
        {
            "record": recorded_name("cell", C.RECORDED_CANARY_TPOT_DF_PART, settings),
            "expr": (
                f'{log_variance}{{track="{CANARY}"}} ^ 2\n'
                f'/ {spread_df}{{track="{CANARY}"}}\n'
                f"+ on({pair}) group_left({C.Label.BASELINE_CONFIG}) "
                f"({stable(log_variance)} ^ 2 / {stable(spread_df)})\n"
                f"and on({cell}) {paired}"
            ),
        },
        {
            "record": recorded_name("cell", C.RECORDED_CANARY_TPOT_TOKENS, settings),
            "expr": canary(y),
        },
        {
            "record": recorded_name("cell", C.RECORDED_CANARY_TPOT_REQUESTS, settings),
            "expr": (
                f'label_replace({canary(n)}, "{C.Label.SIDE}", "{CANARY}", "", "")\n'
                f"or label_replace({paired} * on({pair}) group_left() {stable(n)}, "
                f'"{C.Label.SIDE}", "{STABLE}", "", "")'
            ),
        },
    ]
    return rules


def _level_rules(level: str, settings: Settings) -> list[dict[str, Any]]:
    """Per slice or model: the canary-weighted log-ratio, its variance and degrees of freedom,
    whether it is compared, and the ratio's bounds at the family-wise quantile."""
    labels = Q.by((*Q.LEVELS[level], C.Label.BASELINE_CONFIG))
    tokens = recorded_name("cell", C.RECORDED_CANARY_TPOT_TOKENS, settings)
    weight = f"({tokens}\n/ on({labels}) group_left() sum by ({labels}) ({tokens}))"
    log_ratio = recorded_name("cell", C.RECORDED_CANARY_TPOT_LOG_RATIO, settings)
    variance = recorded_name("cell", C.RECORDED_CANARY_TPOT_VARIANCE, settings)
    df_part = recorded_name("cell", C.RECORDED_CANARY_TPOT_DF_PART, settings)
    requests = recorded_name("cell", C.RECORDED_CANARY_TPOT_REQUESTS, settings)
    shift = recorded_name("cell", C.RECORDED_CANARY_TPOT_LOAD_SHIFT, settings)
    bucket = Q.by(BUCKET)
    has_slope = f"on({bucket}) group_left() ({slope_name(settings)} * 0 + 1)"
    names = {
        "log_ratio": recorded_name(level, C.RECORDED_CANARY_TPOT_LOG_RATIO, settings),
        "variance": recorded_name(level, C.RECORDED_CANARY_TPOT_VARIANCE, settings),
        "df_part": recorded_name(level, C.RECORDED_CANARY_TPOT_DF_PART, settings),
        "requests": recorded_name(level, C.RECORDED_CANARY_TPOT_REQUESTS, settings, "sum"),
        "compared": recorded_name(level, C.RECORDED_CANARY_TPOT_COMPARED, settings, "bool"),
        "df": recorded_name(level, C.RECORDED_CANARY_TPOT_DF, settings),
        "t": recorded_name(level, C.RECORDED_CANARY_TPOT_T, settings),
        "lever": recorded_name(level, C.RECORDED_CANARY_TPOT_LOAD_LEVER, settings),
        "adjustment": recorded_name(level, C.RECORDED_CANARY_TPOT_LOAD_ADJUSTMENT, settings),
    }
    # per load bucket: sum of weight x shift, and its part of the variance (kappa's)
    lever = names["lever"]
    slope_variance = (
        f"on({bucket}) group_left() {slope_name(settings, C.RECORDED_GOODPUT_SLOPE_VARIANCE)}"
    )
    slope_df = f"on({bucket}) group_left() {slope_name(settings, C.RECORDED_GOODPUT_SLOPE_DF)}"
    load_part = f"{lever} ^ 2 * {slope_variance}"
    least = settings.zones.min_requests
    by_family = f"{C.Label.MODEL}, {C.Label.CONFIG}"
    z = f"({names['df']} * 0 + on({by_family}) group_left {z_name(settings)})"
    compared = names["compared"]
    cells_variance = f"sum by ({labels}) ({weight} ^ 2 * {variance})"
    cells_df = f"sum by ({labels}) ({weight} ^ 4 * {df_part})"
    return [
        {
            "record": names["log_ratio"],
            "expr": f"sum by ({labels}) ({weight} * {log_ratio})",
        },
        {
            "record": lever,
            "expr": (
                f"sum by ({labels}, {C.Label.LOAD}) (\n  {weight}\n  * {shift} * {has_slope}\n)"
            ),
        },
        {
            "record": names["adjustment"],
            "expr": (
                f"exp(-sum by ({labels}) (\n  {lever}\n  * on({bucket}) group_left() "
                f"{slope_name(settings)}\n))\nor {names['log_ratio']} * 0 + 1"
            ),
        },
        {
            "record": names["variance"],
            "expr": (
                f"{cells_variance}\n+ (\n  sum by ({labels}) ({load_part})\n"
                f"  or {cells_variance} * 0\n)"
            ),
        },
        {
            "record": names["df_part"],
            "expr": (
                f"{cells_df}\n+ (\n  sum by ({labels}) (({load_part}) ^ 2 / {slope_df})\n"
                f"  or {cells_df} * 0\n)"
            ),
        },
        {
            "record": names["requests"],
            "expr": f"sum by ({labels}, {C.Label.SIDE}) ({requests})",
        },
        {
            "record": compared,
            "expr": (
                f"{names['log_ratio']} * 0 + 1\n"
                f'and on({labels}) {names["requests"]}{{side="{CANARY}"}} >= {least}\n'
                f'and on({labels}) {names["requests"]}{{side="{STABLE}"}} >= {least}'
            ),
        },
        {
            "record": names["df"],
            "expr": (
                f"{names['variance']} ^ 2 / ({names['df_part']} > 0)\nand on({labels}) {compared}"
            ),
        },
        {
            "record": names["t"],
            "expr": (
                f"{z}\n+ ({z} ^ 3 + {z}) / (4 * {names['df']})\n"
                f"+ (5 * {z} ^ 5 + 16 * {z} ^ 3 + 3 * {z}) / (96 * {names['df']} ^ 2)"
            ),
        },
        {
            "record": ratio_bound(level, "estimate", settings),
            "expr": f"exp({names['log_ratio']})\nand on({labels}) {compared}",
        },
        *(
            {
                "record": ratio_bound(level, bound, settings),
                "expr": (
                    f"exp({names['log_ratio']} {sign} {names['t']} * sqrt({names['variance']}))"
                    f"\nand on({labels}) {compared}"
                ),
            }
            for bound, sign in (("lower", "-"), ("upper", "+"))
        ),
    ]


def z_name(settings: Settings) -> str:
    return recorded_name("model", C.RECORDED_CANARY_TPOT_Z, settings)


def goodput_rules(settings: Settings, windows: Q.Windows) -> list[dict[str, Any]]:
    """Every recording rule of the canary's goodput comparison, in the order they read."""
    family = recorded_name("model", C.RECORDED_CANARY_TPOT_COMPARED, settings, "count")
    by_family = f"{C.Label.MODEL}, {C.Label.CONFIG}"
    compared = [
        recorded_name(level, C.RECORDED_CANARY_TPOT_COMPARED, settings, "bool")
        for level in Q.LEVELS
    ]
    counts = [f"count by ({by_family}) ({name})" for name in compared]
    first = [rule for level in Q.LEVELS for rule in _level_rules(level, settings)[:7]]
    rest = [rule for level in Q.LEVELS for rule in _level_rules(level, settings)[7:]]
    return [
        *_cell_rules(settings, windows),
        *first,
        {
            "record": family,
            "expr": f"({counts[0]}\n+ on({by_family}) {counts[1]})\nor {counts[0]}\nor {counts[1]}",
        },
        {"record": z_name(settings), "expr": family_z(family, settings.canary.confidence)},
        *rest,
    ]
