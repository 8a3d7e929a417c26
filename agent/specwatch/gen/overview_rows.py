"""Rows of the overview dashboard: speculation by batch size, the rollout (A/B, the shadow
check, cost), stable against canary, and the latency SLOs. gen/dashboards.py assembles them."""

from __future__ import annotations

from typing import Any

from grafana_foundation_sdk.builders import bargauge
from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.canary import difference_bound, ratio_bound
from specwatch.gen.goodput_factors import factor_bound
from specwatch.gen.latency_slo import PERIOD_BUDGET, error_ratio
from specwatch.gen.panels import (
    DATASOURCE,
    M,
    acceptance,
    gain_thresholds,
    latency,
    query,
    series,
)
from specwatch.settings import Settings


def load_panels(settings: Settings) -> list[Any]:
    """By batch size (requests in flight as a request started): gain, acceptance, K table."""
    by_load = f"{C.Label.MODEL}, {C.Label.LOAD}"

    def per_load(name: str, window: str, extra: str = "") -> str:
        return f"sum by ({by_load}{extra}) (rate({name}_total{{{M}}}[{window}]))"

    return [
        bargauge.Panel()
        .title("Speedup by batch size (load window; measured where A/B runs at that load)")
        .description(
            "Per batch-size bucket: speculation's gain over none, measured against baseline "
            "requests at the same load, else modelled. Below 1: speculation is slower there "
            "(SpecDecodeSlowerAtLoad)."
        )
        .datasource(DATASOURCE)
        .with_target(
            query(
                f'max by ({by_load}, method) ({C.LOAD_GAIN_RATIO}{{{M}, bound="estimate"}})',
                "{{model}} {{load}} ({{method}})",
            )
        )
        .thresholds(gain_thresholds())
        .unit("x")
        .height(8)
        .span(12),
        bargauge.Panel()
        .title("Advised K by batch size (num_speculative_tokens_per_batch_size)")
        .description("`specwatch advise --json` gives the table to paste into vLLM's config.")
        .datasource(DATASOURCE)
        .with_target(query(f"max by ({by_load}) ({C.LOAD_ADVISED_K}{{{M}}})", "{{model}} {{load}}"))
        .height(8)
        .span(12),
        acceptance(
            "alpha-hat by batch size (1h)",
            [
                (
                    f"{per_load(C.LOAD_ACCEPTED_TOKENS, '1h')}\n/ "
                    f"{per_load(C.LOAD_ACCEPTANCE_TRIALS, '1h')}",
                    "{{model}} {{load}}",
                )
            ],
            settings,
            description="Per-token acceptance by the requests in flight as each request "
            "started; does not depend on K, so comparable across a batch-size schedule.",
        ),
        series(
            "Time per output token by batch size and variant (1h)",
            [
                (
                    f"{per_load(C.LOAD_DECODE_SECONDS, '1h', ', variant')}\n/ "
                    f"{per_load(C.LOAD_DECODE_TOKENS, '1h', ', variant')}",
                    "{{model}} {{load}} {{variant}}",
                )
            ],
            "s",
        ),
        series(
            "Mean acceptance length tau by draft length (1h)",
            [
                (
                    f"1 + sum by (model, {C.Label.DRAFT_LENGTH}) "
                    f"(rate({C.DRAFT_LENGTH_ACCEPTED}_total{{{M}}}[1h]))\n"
                    f"/ sum by (model, {C.Label.DRAFT_LENGTH}) "
                    f"(rate({C.DRAFT_LENGTH_STEPS}_total{{{M}}}[1h]))",
                    "{{model}} drafting {{draft_length}}",
                )
            ],
            width=12,
            description="With variable K (a batch-size schedule, adaptive drafting) the "
            "overall tau and rate mix draft lengths; per length d, rate = (tau - 1) / d.",
        ),
        series(
            "Load: requests in flight through specwatch, and vLLM's running batch",
            [
                (f"sum by (variant) ({C.UPSTREAM_IN_FLIGHT})", "in flight ({{variant}})"),
                (f"sum by (model) ({C.VLLM_RUNNING}{{{M}}})", "vLLM running ({{model}})"),
            ],
            width=12,
            description="The proxy's count is the load each request is grouped by; vLLM's "
            "num_requests_running is the batch it runs (its cross-check).",
        ),
    ]


def rollout_panels() -> list[Any]:
    """A/B, the shadow check and cost."""
    return [
        series(
            "A/B: requests/s by variant, and rollback (1 = all to baseline)",
            [
                (f"sum by (variant) (rate({C.REQUESTS}_total{{{M}}}[5m]))", "{{variant}}"),
                (f"max({C.AB_ROLLED_BACK})", "rolled back"),
            ],
            width=12,
        ),
        latency(
            "A/B: time per output token by variant (p50, p95)",
            C.TPOT_SECONDS,
            "variant",
            M,
            width=12,
            quantiles=(0.5, 0.95),
        ),
        series(
            "Shadow check: greedy outputs differing from the baseline (share, 1h)",
            [
                (
                    f"sum by (model) (increase({C.OUTPUT_DIVERGENCE}_total{{{M}}}[1h])) / "
                    f"sum by (model) (increase({C.SHADOW_COMPARISONS}_total{{{M}}}[1h]))",
                    "{{model}}",
                )
            ],
            unit="percentunit",
            width=12,
        ),
        series(
            "Cost per million output tokens (live throughput; needs cost.* settings)",
            [
                (
                    f"sum by (variant) ({C.REPLICA_COST_PER_HOUR}) / (sum by (variant) "
                    f"(rate({C.COMPLETION_TOKENS}_total{{{M}}}[5m])) * 3600) * 1e6",
                    "{{variant}}",
                )
            ],
            unit="currencyUSD",
            width=12,
        ),
    ]


def canary_panels(settings: Settings) -> list[Any]:
    """Stable against canary, goodput first (what users feel decides a rollout): per slice and
    model the TPOT ratio with its family-wise bounds (gen/goodput_rules.py) and the canary's
    gain per token over stable; then each track's alpha-hat and the difference with its
    bounds (gen/canary.py)."""
    w = Q.duration(settings.canary.window_seconds)
    pairs = "{{config}} vs {{baseline_config}}"
    tpot = [
        (f"{ratio_bound(level, bound, settings)}{{{M}}}", f"{prefix}{label} {pairs}")
        for level, label in (("model", "{{model}}"), ("slice", "{{ctx_bucket}} {{task}}"))
        for bound, prefix in (("estimate", ""), ("lower", "lower "), ("upper", "upper "))
    ]
    factors = [
        (f"{factor_bound('model', factor, bound, settings)}{{{M}}}", f"{prefix}{name} {pairs}")
        for factor, name in (
            (C.FACTOR_STEP_TIME, "step time {{model}}"),
            (C.FACTOR_TOKENS_PER_STEP, "tokens per step {{model}}"),
        )
        for bound, prefix in (("estimate", ""), ("lower", "lower "), ("upper", "upper "))
    ]
    difference = difference_bound("slice", "estimate", settings)
    lower = difference_bound("slice", "lower", settings)
    upper = difference_bound("slice", "upper", settings)
    legend = "{{ctx_bucket}} {{task}} {{config}} vs {{baseline_config}}"
    return [
        series(
            f"Canary / stable: time per output token by slice and model ({w}, at the same "
            "load, family-wise 95%)",
            tpot,
            width=12,
            description=f"Above 1 + canary.tpot_margin ({1 + settings.canary.tpot_margin:g}) "
            "for canary.for (the lower bound): SpecDecodeCanarySlower, and the rollout fails. "
            "Below 1: the canary is faster, whatever its acceptance.",
        ),
        series(
            f"Canary / stable: TPOT's two factors by model ({w}, at the same load, "
            "family-wise 95%)",
            factors,
            width=12,
            description="TPOT's ratio is the step's time over the tokens a step yields. The "
            "step's time above 1 (tokens per step at 1): each step costs more (the token "
            "budget, the version, the drafter's size); the tokens per step below 1 (the "
            "step's time at 1): an acceptance regression. The runbook of "
            "SpecDecodeCanarySlower has a section for each.",
        ),
        series(
            f"Canary's gain per output token over stable ({w}, all loads pooled)",
            [
                (
                    f"{Q.record('model', C.RECORDED_CANARY_GAIN, 'ratio' + w)}{{{M}}}",
                    "{{model}} {{config}} vs {{baseline_config}}",
                )
            ],
            width=12,
        ),
        acceptance(
            f"Stable vs canary: alpha-hat by track and slice ({w})",
            [(f"{Q.alpha('slice', w)}{{{M}}}", "{{track}} {{ctx_bucket}} {{task}}")],
            settings,
        ),
        series(
            f"Canary - stable: acceptance difference by slice ({w}, family-wise 95%)",
            [
                (f"{difference}{{{M}}}", legend),
                (f"{lower}{{{M}}}", "lower " + legend),
                (f"{upper}{{{M}}}", "upper " + legend),
            ],
            width=12,
            description="Below -canary.margin for canary.for (the upper bound): "
            "SpecDecodeCanaryWorse (critical where the two configs speculate alike, else a "
            "warning: goodput decides).",
        ),
    ]


def latency_slo_panels() -> list[Any]:
    """Each latency objective per model, config, track and variant (gen/latency_slo.py's
    rules): attainment, the period's budget left, and the burn rate over each alert window."""
    who = "{{slo}} {{model}} {{config}} {{track}} {{variant}}"
    burn = [
        (
            f"max by (slo, model, config, track, variant) ({error_ratio(window)}{{{M}}}\n"
            "/ on(slo) group_left() slo:error_budget:ratio)",
            f"{window} {who}",
        )
        for window in ("5m", "1h", "6h", "1d", "3d")
    ]
    return [
        series(
            "Latency SLO attainment by config, track and variant (1h)",
            [(f"1 - max without (sloth_window) ({error_ratio('1h')}{{{M}}})", who)],
            unit="percentunit",
            width=8,
            description="The share of requests that met the objective's TTFT and TPOT (the "
            "request's own, never ITL) over the last hour. /status `latency_slos` has it since "
            "the start with its interval, and speculation's against the A/B baseline.",
        ),
        series(
            "Latency SLO error budget left over the period",
            [(f"max without (sloth_window) ({PERIOD_BUDGET}{{{M}}})", who)],
            unit="percentunit",
            width=8,
            description="1: untouched; 0: spent; below 0: spent past it "
            "(alerts.latency_slo_period_days).",
        ),
        series(
            "Latency SLO burn rate by window (1 = the budget lasts the period)",
            burn,
            width=8,
            description="SpecDecodeLatencyBudgetBurnFast pages at 14.4x over 1h and 5m or 6x "
            "over 6h and 30m; SpecDecodeLatencyBudgetBurnSlow opens a ticket at 3x over 1d "
            "and 2h or 1x over 3d and 6h.",
        ),
    ]
