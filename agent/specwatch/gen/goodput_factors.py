"""TPOT's two factors in PromQL, canary over stable: the step's time (decode seconds over engine
steps, at the same load) and the tokens a step yields (decode tokens over engine steps), per
slice and per model, with analysis/compare/goodput.py's intervals. TPOT's ratio is the one over
the other exactly: the same cells (gen/goodput_rules.py's paired ones), the same weights (the
canary's decode tokens), and the load's adjustment on the step's time only (load moves what a
step costs, not what it yields).

Each factor is computed as TPOT is: per cell and track its ratio and each request's squared
relative deviation; per slice and track the deviation pooled over the load buckets; per cell
the log variance from it; per paired cell the log-ratio, its variance and Welch's parts; per
slice and model the weighted sums, the degrees of freedom, Student's t by Cornish-Fisher at
TPOT's family-wise quantile, and the ratio with its bounds. A slice (model) has its factors
where every paired cell has engine steps on both sides (not a sidecar older than them).
"""

from __future__ import annotations

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.canary import CANARY, CORNISH_FISHER, recorded_name
from specwatch.gen.goodput_cells import (
    BUCKET,
    CELL,
    DEVIATION,
    LOG_VARIANCE,
    PAIR,
    SPREAD,
    TPOT_DF_PART,
    joined_sides,
    slope_name,
    stable_side,
)
from specwatch.gen.goodput_rules import z_name
from specwatch.gen.template import Recording
from specwatch.settings import Settings

# a factor's sums: (numerator, denominator, numerator^2, numerator x denominator, denominator^2)
FACTORS: dict[str, tuple[str, str, str, str, str]] = {
    C.FACTOR_STEP_TIME: ("x", "s", "xx", "xs", "ss"),
    C.FACTOR_TOKENS_PER_STEP: ("y", "s", "yy", "ys", "ss"),
}


def factor_bound(level: str, factor: str, bound: str, settings: Settings) -> str:
    """A factor's recorded ratio canary / stable (`estimate`) or its `lower` / `upper` bound."""
    suffix = "_ratio" if bound == "estimate" else f"_ratio_{bound}"
    return recorded_name(level, C.canary_factor(factor, suffix), settings)


def _cell_rules(factor: str, settings: Settings, part: dict[str, str]) -> list[Recording]:
    """Per cell and track the factor's ratio, deviation, log variance and its degrees of
    freedom (the slice's pooled ones); per slice and track the pooled spread."""
    num, den, nn, nd, dd = (part[name] for name in FACTORS[factor])
    n = part["n"]
    cell, slice_ = Q.by(CELL), Q.by(Q.SLICE)
    ratio = recorded_name("cell", C.goodput_factor(factor), settings, "ratio")
    deviation = recorded_name("cell", C.goodput_factor(factor, "_deviation"), settings)
    spread = recorded_name("slice", C.goodput_factor(factor, "_spread"), settings)
    spread_df = recorded_name("slice", C.goodput_factor(factor, "_spread_df"), settings)
    return [
        Recording(ratio, f"{num} / ({den} > 0)"),
        Recording(
            deviation,
            DEVIATION(xx=nn, xy=nd, yy=dd, tpot=ratio, n=n),
        ),
        Recording(
            spread,
            SPREAD(slice=slice_, deviation=deviation, yy=dd, cell=cell),
        ),
        Recording(
            spread_df,
            f"clamp_min(sum by ({slice_}) ({n} - 1 and on({cell}) {deviation}), 1)",
        ),
        Recording(
            recorded_name("cell", C.goodput_factor(factor, "_log_variance"), settings),
            LOG_VARIANCE(
                n=n, slice=slice_, spread=spread, yy=dd, y=den, cell=cell, deviation=deviation
            ),
        ),
        Recording(
            recorded_name("cell", C.goodput_factor(factor, "_spread_df"), settings),
            f"{deviation} * 0 + on({slice_}) group_left() {spread_df}",
        ),
    ]


def _paired_rules(factor: str, settings: Settings) -> list[Recording]:
    """Per paired cell (TPOT's) where both sides have the factor: its log-ratio (the step's
    time moved to the canary's load as TPOT's is), variance and Welch's parts."""
    cell, pair = Q.by(CELL), Q.by(PAIR)
    ratio = recorded_name("cell", C.goodput_factor(factor), settings, "ratio")
    log_variance = recorded_name("cell", C.goodput_factor(factor, "_log_variance"), settings)
    spread_df = recorded_name("cell", C.goodput_factor(factor, "_spread_df"), settings)
    paired = recorded_name("cell", C.RECORDED_CANARY_TPOT_PAIRED, settings, "bool")
    log_ratio = recorded_name("cell", C.canary_factor(factor, "_log_ratio"), settings)
    shift = recorded_name("cell", C.RECORDED_CANARY_TPOT_LOAD_SHIFT, settings)
    moved = (
        f"\n- ({shift} * on({Q.by(BUCKET)}) group_left() {slope_name(settings)}\nor {shift} * 0)"
        if factor == C.FACTOR_STEP_TIME
        else ""
    )
    both = (
        f'and on({cell}) {log_variance}{{track="{CANARY}"}}\n'
        f"and on({pair}) {stable_side(log_variance, settings)}"
    )
    stable_lv = stable_side(log_variance, settings)
    return [
        Recording(
            log_ratio,
            (
                f"ln({joined_sides(ratio, '/', ratio, settings)}){moved}\n"
                f"and on({cell}) {paired}\n{both}"
            ),
        ),
        Recording(
            recorded_name("cell", C.canary_factor(factor, "_variance"), settings),
            (
                f"({joined_sides(log_variance, '+', log_variance, settings)})\n"
                f"and on({cell}) {log_ratio}"
            ),
        ),
        Recording(
            recorded_name("cell", C.canary_factor(factor, "_df_part"), settings),
            TPOT_DF_PART(
                log_variance=log_variance,
                canary=CANARY,
                spread_df=spread_df,
                pair=pair,
                baseline_config=C.Label.BASELINE_CONFIG,
                cell=cell,
                paired=log_ratio,
                stable_part=f"{stable_lv} ^ 2 / {stable_side(spread_df, settings)}",
            ),
        ),
    ]


def _level_rules(factor: str, level: str, settings: Settings) -> list[Recording]:
    """Per slice or model: the factor's weighted log-ratio, variance (the step's time with
    kappa's part, as TPOT's), degrees of freedom, t, and its ratio with bounds, where TPOT
    is compared and every paired cell has the factor."""
    labels = Q.by((*Q.LEVELS[level], C.Label.BASELINE_CONFIG))
    tokens = recorded_name("cell", C.RECORDED_CANARY_TPOT_TOKENS, settings)
    weight = f"({tokens}\n/ on({labels}) group_left() sum by ({labels}) ({tokens}))"

    def cell(what: str) -> str:
        return recorded_name("cell", C.canary_factor(factor, what), settings)

    def mine(what: str) -> str:
        return recorded_name(level, C.canary_factor(factor, what), settings)

    compared = recorded_name(level, C.RECORDED_CANARY_TPOT_COMPARED, settings, "bool")
    complete = (
        f"count by ({labels}) ({cell('_log_ratio')})\n== on({labels}) "
        f"count by ({labels}) ({tokens})"
    )
    variance = f"sum by ({labels}) ({weight} ^ 2 * {cell('_variance')})"
    df_part = f"sum by ({labels}) ({weight} ^ 4 * {cell('_df_part')})"
    if factor == C.FACTOR_STEP_TIME:  # kappa's part, as TPOT's
        lever = recorded_name(level, C.RECORDED_CANARY_TPOT_LOAD_LEVER, settings)
        slope = f"on({Q.by(BUCKET)}) group_left() "
        load_part = (
            f"{lever} ^ 2 * {slope}{slope_name(settings, C.RECORDED_GOODPUT_SLOPE_VARIANCE)}"
        )
        df = slope_name(settings, C.RECORDED_GOODPUT_SLOPE_DF)
        variance += f"\n+ (sum by ({labels}) ({load_part}) or {variance} * 0)"
        df_part += f"\n+ (sum by ({labels}) (({load_part}) ^ 2 / {slope}{df}) or {df_part} * 0)"
    by_family = f"{C.Label.MODEL}, {C.Label.CONFIG}"
    z = f"({mine('_degrees_of_freedom')} * 0 + on({by_family}) group_left {z_name(settings)})"
    t, v = mine("_t_quantile"), mine("_log_ratio_variance")
    return [
        Recording(
            mine("_log_ratio"),
            (
                f"sum by ({labels}) ({weight} * {cell('_log_ratio')})\n"
                f"and on({labels}) {compared}\nand on({labels}) {complete}"
            ),
        ),
        Recording(v, f"{variance}\nand on({labels}) {mine('_log_ratio')}"),
        Recording(mine("_df_part"), f"{df_part}\nand on({labels}) {mine('_log_ratio')}"),
        Recording(
            mine("_degrees_of_freedom"),
            f"{v} ^ 2 / ({mine('_df_part')} > 0)",
        ),
        Recording(
            t,
            CORNISH_FISHER(z=z, df=mine("_degrees_of_freedom")),
        ),
        Recording(
            factor_bound(level, factor, "estimate", settings),
            f"exp({mine('_log_ratio')})",
        ),
        *(
            Recording(
                factor_bound(level, factor, bound, settings),
                f"exp({mine('_log_ratio')} {sign} {t} * sqrt({v}))",
            )
            for bound, sign in (("lower", "-"), ("upper", "+"))
        ),
    ]


def factor_rules(settings: Settings, part: dict[str, str]) -> tuple[list[Recording], ...]:
    """The factors' rules: (per cell, before TPOT's pairing), (per paired cell, after it),
    (per slice and model, after TPOT's family quantile)."""
    cells = [rule for factor in FACTORS for rule in _cell_rules(factor, settings, part)]
    paired = [rule for factor in FACTORS for rule in _paired_rules(factor, settings)]
    levels = [
        rule
        for factor in FACTORS
        for level in Q.LEVELS
        for rule in _level_rules(factor, level, settings)
    ]
    return cells, paired, levels
