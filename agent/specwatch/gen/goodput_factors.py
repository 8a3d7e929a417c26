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

from typing import Any

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.canary import CANARY, recorded_name
from specwatch.gen.goodput_rules import (
    BUCKET,
    CELL,
    PAIR,
    joined_sides,
    slope_name,
    stable_side,
    z_name,
)
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


def _cell_rules(factor: str, settings: Settings, part: dict[str, str]) -> list[dict[str, Any]]:
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
        {"record": ratio, "expr": f"{num} / ({den} > 0)"},
        {
            "record": deviation,
            "expr": (
                f"clamp_min({nn} - 2 * {ratio} * {nd} + {ratio} ^ 2 * {dd}, 0) / ({ratio} > 0) ^ 2"
                f"\nand {n} >= 2"
            ),
        },
        {
            "record": spread,
            "expr": (
                f"sum by ({slice_}) ({deviation})\n"
                f"/ (sum by ({slice_}) ({dd} and on({cell}) {deviation}) > 0)"
            ),
        },
        {
            "record": spread_df,
            "expr": f"clamp_min(sum by ({slice_}) ({n} - 1 and on({cell}) {deviation}), 1)",
        },
        {
            "record": recorded_name("cell", C.goodput_factor(factor, "_log_variance"), settings),
            "expr": (
                f"{n} / clamp_min({n} - 1, 1)\n* on({slice_}) group_left() {spread}\n"
                f"* {dd} / ({den} > 0) ^ 2\nand on({cell}) {deviation}"
            ),
        },
        {
            "record": recorded_name("cell", C.goodput_factor(factor, "_spread_df"), settings),
            "expr": f"{deviation} * 0 + on({slice_}) group_left() {spread_df}",
        },
    ]


def _paired_rules(factor: str, settings: Settings) -> list[dict[str, Any]]:
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
    return [
        {
            "record": log_ratio,
            "expr": (
                f"ln({joined_sides(ratio, '/', ratio, settings)}){moved}\n"
                f"and on({cell}) {paired}\n{both}"
            ),
        },
        {
            "record": recorded_name("cell", C.canary_factor(factor, "_variance"), settings),
            "expr": (
                f"({joined_sides(log_variance, '+', log_variance, settings)})\n"
                f"and on({cell}) {log_ratio}"
            ),
        },
        {
            "record": recorded_name("cell", C.canary_factor(factor, "_df_part"), settings),
            "expr": (
                f'{log_variance}{{track="{CANARY}"}} ^ 2\n/ {spread_df}{{track="{CANARY}"}}\n'
                f"+ on({pair}) group_left({C.Label.BASELINE_CONFIG}) "
                f"({stable_side(log_variance, settings)} ^ 2 / "
                f"{stable_side(spread_df, settings)})\nand on({cell}) {log_ratio}"
            ),
        },
    ]


def _level_rules(factor: str, level: str, settings: Settings) -> list[dict[str, Any]]:
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
        {
            "record": mine("_log_ratio"),
            "expr": (
                f"sum by ({labels}) ({weight} * {cell('_log_ratio')})\n"
                f"and on({labels}) {compared}\nand on({labels}) {complete}"
            ),
        },
        {"record": v, "expr": f"{variance}\nand on({labels}) {mine('_log_ratio')}"},
        {"record": mine("_df_part"), "expr": f"{df_part}\nand on({labels}) {mine('_log_ratio')}"},
        {
            "record": mine("_degrees_of_freedom"),
            "expr": f"{v} ^ 2 / ({mine('_df_part')} > 0)",
        },
        {
            "record": t,
            "expr": (
                f"{z}\n+ ({z} ^ 3 + {z}) / (4 * {mine('_degrees_of_freedom')})\n"
                f"+ (5 * {z} ^ 5 + 16 * {z} ^ 3 + 3 * {z}) / "
                f"(96 * {mine('_degrees_of_freedom')} ^ 2)"
            ),
        },
        {
            "record": factor_bound(level, factor, "estimate", settings),
            "expr": f"exp({mine('_log_ratio')})",
        },
        *(
            {
                "record": factor_bound(level, factor, bound, settings),
                "expr": f"exp({mine('_log_ratio')} {sign} {t} * sqrt({v}))",
            }
            for bound, sign in (("lower", "-"), ("upper", "+"))
        ),
    ]


def factor_rules(settings: Settings, part: dict[str, str]) -> tuple[list[dict[str, Any]], ...]:
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
