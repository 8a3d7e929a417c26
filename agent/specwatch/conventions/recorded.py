"""Names of recorded series (Prometheus recording rules: level:metric:operation)."""

from __future__ import annotations

import re
from typing import Final

from specwatch.conventions.metrics import ACCEPTANCE_ALPHA

# Metric parts of recorded series that are not exported metrics themselves.
RECORDED_GOOD_WINDOW: Final = "specwatch_good_window"
RECORDED_SLO_ERROR_RATIO: Final = "specwatch_slo_error_ratio"
RECORDED_SLO_BURN_RATE: Final = "specwatch_slo_burn_rate"
RECORDED_DESIGN_EFFECT: Final = "specwatch_acceptance_design_effect"
RECORDED_EFFECTIVE_TRIALS: Final = "specwatch_acceptance_effective_trials"
RECORDED_T_QUANTILE: Final = "specwatch_acceptance_t_quantile"
RECORDED_DEGREES_OF_FREEDOM: Final = "specwatch_acceptance_degrees_of_freedom"
# the zones' evidence (analysis/verdicts/evidence.py): per window and threshold, its widening for a
# variance known from few requests, and the window's sample gate
RECORDED_EVIDENCE: Final = "specwatch_zone_evidence"
RECORDED_EVIDENCE_WIDENING: Final = "specwatch_zone_evidence_widening"
RECORDED_EVIDENCE_GATE: Final = "specwatch_zone_evidence_gate"
# which zone window decides (analysis/verdicts/evidence.Evidence.deciding): a shorter window's
# change from the older rest of a longer one, that rest's sums, and the widening at the change bar
RECORDED_ZONE_CHANGE: Final = "specwatch_zone_change"
RECORDED_ZONE_REST: Final = "specwatch_zone_rest"
RECORDED_ZONE_CHANGE_WIDENING: Final = "specwatch_zone_change_widening"
# canary against stable (gen/canary.py): each side's variance of alpha-hat, the stable config
# compared with, the slices compared (both sides past the gates), the difference and its
# bounds, and the measured gain of canary over stable
RECORDED_VARIANCE: Final = "specwatch_acceptance_variance"
RECORDED_CANARY_BASELINE: Final = "specwatch_canary_baseline_trials"
RECORDED_CANARY_COMPARED: Final = "specwatch_canary_compared"
RECORDED_CANARY_DIFFERENCE: Final = "specwatch_canary_alpha_difference"
RECORDED_CANARY_DF: Final = "specwatch_canary_degrees_of_freedom"
RECORDED_CANARY_T: Final = "specwatch_canary_t_quantile"
RECORDED_CANARY_Z: Final = "specwatch_canary_family_z"
RECORDED_CANARY_GAIN: Final = "specwatch_canary_gain"
# canary against stable on goodput (gen/goodput_rules.py): per cell (slice x load bucket) the
# goodput counters' increases, TPOT and the variance of its log, the stable config compared
# with, the cells both sides timed, their log-ratio and its variance; per slice and model the
# log-ratio at the canary's mix, its bounds as a ratio, and what the family-wise guard needs
RECORDED_GOODPUT_TPOT: Final = "specwatch_goodput_tpot"
RECORDED_GOODPUT_LOG_VARIANCE: Final = "specwatch_goodput_log_variance"
# ... compared at the same load (analysis/compare/goodput.py): per cell the requests' squared
# relative deviation and the mean load; per slice and track the pooled spread and its degrees
# of freedom; per model and load bucket the load's relative slope, its variance and degrees
# of freedom; per paired cell the canary's mean load less stable's; per slice and model
# the sum of weight x that shift per load bucket, and the factor the adjustment moved by
RECORDED_GOODPUT_DEVIATION: Final = "specwatch_goodput_deviation"
RECORDED_GOODPUT_SPREAD: Final = "specwatch_goodput_spread"
RECORDED_GOODPUT_SPREAD_DF: Final = "specwatch_goodput_spread_degrees_of_freedom"
RECORDED_GOODPUT_MEAN_LOAD: Final = "specwatch_goodput_mean_load"
RECORDED_GOODPUT_SLOPE_PART: Final = "specwatch_goodput_load_slope_part"
RECORDED_GOODPUT_SLOPE_SPREAD: Final = "specwatch_goodput_load_spread"
RECORDED_GOODPUT_SLOPE_VARIANCE_PART: Final = "specwatch_goodput_load_slope_variance_part"
RECORDED_GOODPUT_SLOPE: Final = "specwatch_goodput_load_slope"
RECORDED_GOODPUT_SLOPE_VARIANCE: Final = "specwatch_goodput_load_slope_variance"
RECORDED_GOODPUT_SLOPE_DF: Final = "specwatch_goodput_load_slope_degrees_of_freedom"
RECORDED_CANARY_TPOT_LOAD_SHIFT: Final = "specwatch_canary_tpot_load_shift"
RECORDED_CANARY_TPOT_LOAD_LEVER: Final = "specwatch_canary_tpot_load_lever"
RECORDED_CANARY_TPOT_LOAD_ADJUSTMENT: Final = "specwatch_canary_tpot_load_adjustment"
# TPOT's two factors (gen/goodput_factors.py), each as TPOT is: per cell its ratio, deviation,
# log variance; per slice and track its pooled spread; per paired cell and per slice and model
# its log-ratio, variance, degrees of freedom, and its ratio with bounds
FACTOR_STEP_TIME: Final = "step_time"
FACTOR_TOKENS_PER_STEP: Final = "tokens_per_step"


def goodput_factor(factor: str, what: str = "") -> str:
    """A factor's per-cell series: specwatch_goodput_step_time, ..._step_time_deviation."""
    return f"specwatch_goodput_{factor}{what}"


def canary_factor(factor: str, what: str) -> str:
    """A factor's comparison series: specwatch_canary_step_time_ratio, ..._log_ratio."""
    return f"specwatch_canary_{factor}{what}"


RECORDED_CANARY_TPOT_BASELINE: Final = "specwatch_canary_tpot_baseline_requests"
RECORDED_CANARY_TPOT_PAIRED: Final = "specwatch_canary_tpot_paired"
RECORDED_CANARY_TPOT_LOG_RATIO: Final = "specwatch_canary_tpot_log_ratio"
RECORDED_CANARY_TPOT_VARIANCE: Final = "specwatch_canary_tpot_log_ratio_variance"
RECORDED_CANARY_TPOT_DF_PART: Final = "specwatch_canary_tpot_df_part"
RECORDED_CANARY_TPOT_TOKENS: Final = "specwatch_canary_tpot_canary_tokens"
RECORDED_CANARY_TPOT_REQUESTS: Final = "specwatch_canary_tpot_requests"
RECORDED_CANARY_TPOT_COMPARED: Final = "specwatch_canary_tpot_compared"
RECORDED_CANARY_TPOT_DF: Final = "specwatch_canary_tpot_degrees_of_freedom"
RECORDED_CANARY_TPOT_Z: Final = "specwatch_canary_tpot_family_z"
RECORDED_CANARY_TPOT_T: Final = "specwatch_canary_tpot_t_quantile"
RECORDED_CANARY_TPOT_RATIO: Final = "specwatch_canary_tpot_ratio"


def bound_metric(bound: str) -> str:
    """The metric part of alpha-hat's recorded bound: specwatch_acceptance_alpha_lower."""
    return f"{ACCEPTANCE_ALPHA}_{bound}"


# what a recorded series aggregates to: a slice (model x ctx_bucket x task), a model, a slice's
# load bucket (`cell`), a model's load bucket (`load`), an objective (`slo`)
RECORDED_LEVELS: Final = frozenset({"slice", "model", "cell", "load", "slo"})
# the metric and operations parts: lower-case words and windows (`specwatch_goodput_spread`,
# `ratio_rate5m`, `robust30m_1h`)
_LOWER_WORDS: Final = re.compile(r"[a-z][a-z0-9_]*")


def recorded(level: str, metric: str, operation: str) -> str:
    """`level:metric:operations`, the recording-rule naming convention; a level not in
    RECORDED_LEVELS is refused (a misspelt one names a series no dashboard or alert reads)."""
    if level not in RECORDED_LEVELS:
        raise ValueError(f"recorded series level {level!r}: not one of {sorted(RECORDED_LEVELS)}")
    if not _LOWER_WORDS.fullmatch(operation):
        raise ValueError(f"recorded series operations {operation!r}: lower case, as Prometheus'")
    if not _LOWER_WORDS.fullmatch(metric):
        raise ValueError(f"recorded series metric {metric!r}: lower case, as Prometheus'")
    return f"{level}:{metric}:{operation}"


# the canary's latency SLO burn against stable's at the same load (gen/latency_slo.py): per
# model, config, track, objective and load bucket the error ratio (with its bounds) and the
# burn rate (the requests: the counter's own name, increased)
RECORDED_LATENCY_LOAD_ERROR_RATIO: Final = "specwatch_latency_slo_load_error_ratio"
RECORDED_LATENCY_LOAD_BURN_RATE: Final = "specwatch_latency_slo_load_burn_rate"
