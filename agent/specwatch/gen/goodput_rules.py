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

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.canary import (
    CANARY,
    CORNISH_FISHER,
    STABLE,
    family_count,
    family_z,
    ratio_bound,
    recorded_name,
)
from specwatch.gen.goodput_cells import BUCKET, cell_rules, slope_name
from specwatch.gen.template import PromQL, Recording
from specwatch.settings import Settings

LEVER = PromQL("""
    sum by (${labels}, ${load}) (
      ${weight}
      * ${shift} * ${has_slope}
    )
""")

ADJUSTMENT = PromQL("""
    exp(-sum by (${labels}) (
      ${lever}
      * on(${bucket}) group_left() ${slope}
    ))
    or ${log_ratio} * 0 + 1
""")

# the cells' part and, where a slope was learnt, the load's part
WITH_LOAD_PART = PromQL("""
    ${cells}
    + (
      sum by (${labels}) (${load_part})
      or ${cells} * 0
    )
""")

TPOT_COMPARED = PromQL("""
    ${log_ratio} * 0 + 1
    and on(${labels}) ${requests}{side="${canary}"} >= ${least}
    and on(${labels}) ${requests}{side="${stable}"} >= ${least}
""")

RATIO_BOUND = PromQL("""
    exp(${log_ratio} ${sign} ${t} * sqrt(${variance}))
    and on(${labels}) ${compared}
""")


def _level_rules(level: str, settings: Settings) -> list[Recording]:
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
        Recording(
            names["log_ratio"],
            f"sum by ({labels}) ({weight} * {log_ratio})",
        ),
        Recording(
            lever,
            LEVER(
                labels=labels, load=C.Label.LOAD, weight=weight, shift=shift, has_slope=has_slope
            ),
        ),
        Recording(
            names["adjustment"],
            ADJUSTMENT(
                labels=labels,
                lever=lever,
                bucket=bucket,
                slope=slope_name(settings),
                log_ratio=names["log_ratio"],
            ),
        ),
        Recording(
            names["variance"],
            WITH_LOAD_PART(cells=cells_variance, labels=labels, load_part=load_part),
        ),
        Recording(
            names["df_part"],
            WITH_LOAD_PART(
                cells=cells_df, labels=labels, load_part=f"({load_part}) ^ 2 / {slope_df}"
            ),
        ),
        Recording(
            names["requests"],
            f"sum by ({labels}, {C.Label.SIDE}) ({requests})",
        ),
        Recording(
            compared,
            TPOT_COMPARED(
                log_ratio=names["log_ratio"],
                labels=labels,
                requests=names["requests"],
                canary=CANARY,
                stable=STABLE,
                least=least,
            ),
        ),
        Recording(
            names["df"],
            (f"{names['variance']} ^ 2 / ({names['df_part']} > 0)\nand on({labels}) {compared}"),
        ),
        Recording(
            names["t"],
            CORNISH_FISHER(z=z, df=names["df"]),
        ),
        Recording(
            ratio_bound(level, "estimate", settings),
            f"exp({names['log_ratio']})\nand on({labels}) {compared}",
        ),
        *(
            Recording(
                ratio_bound(level, bound, settings),
                RATIO_BOUND(
                    log_ratio=names["log_ratio"],
                    sign=sign,
                    t=names["t"],
                    variance=names["variance"],
                    labels=labels,
                    compared=compared,
                ),
            )
            for bound, sign in (("lower", "-"), ("upper", "+"))
        ),
    ]


def z_name(settings: Settings) -> str:
    return recorded_name("model", C.RECORDED_CANARY_TPOT_Z, settings)


def goodput_rules(settings: Settings, windows: Q.Windows) -> list[Recording]:
    """Every recording rule of the canary's goodput comparison, in the order they read."""
    family = recorded_name("model", C.RECORDED_CANARY_TPOT_COMPARED, settings, "count")
    first = [rule for level in Q.LEVELS for rule in _level_rules(level, settings)[:7]]
    rest = [rule for level in Q.LEVELS for rule in _level_rules(level, settings)[7:]]
    return [
        *cell_rules(settings, windows),
        *first,
        Recording(family, family_count(C.RECORDED_CANARY_TPOT_COMPARED, settings)),
        Recording(z_name(settings), family_z(family, settings.canary.confidence)),
        *rest,
    ]
