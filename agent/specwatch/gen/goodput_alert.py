"""SpecDecodeCanarySlower: the canary surely slower per output token than stable at the same
load (gen/goodput_rules.py), with TPOT's two factors in its description and a runbook section
for each (gen/goodput_factors.py)."""

from __future__ import annotations

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.alert import Alert, slice_value
from specwatch.gen.canary import CANARY, ratio_bound, window
from specwatch.gen.goodput_factors import factor_bound
from specwatch.settings import Settings


def _factor(factor: str, settings: Settings) -> str:
    """A factor's ratio and bounds for the alert's slice, in a template."""
    values = [
        slice_value(factor_bound("slice", factor, bound, settings))
        for bound in ("estimate", "lower", "upper")
    ]
    return f"{values[0]} [{values[1]}, {values[2]}]"


def slower_alert(settings: Settings) -> Alert:
    cfg = settings.canary
    lower = ratio_bound("slice", "lower", settings)
    estimate = ratio_bound("slice", "estimate", settings)
    labels = "{{ $labels.model }} / {{ $labels.ctx_bucket }} / {{ $labels.task }}"
    above = 1.0 + cfg.tpot_margin
    dearer = factor_bound("slice", C.FACTOR_STEP_TIME, "lower", settings)
    fewer = factor_bound("slice", C.FACTOR_TOKENS_PER_STEP, "upper", settings)
    return Alert(
        name=C.AlertName.CANARY_SLOWER,
        severity="critical",
        expr=f"{estimate}\nand on({Q.by(Q.SLICE)}) {lower} > {above:g}",
        for_seconds=cfg.for_seconds,
        summary=f"The canary config decodes slower than stable for {labels}",
        description=(
            "Slice " + labels + ": the time per output token of config {{ $labels.config }} "
            "(canary) is {{ $value | humanize }} times that of {{ $labels.baseline_config }} "
            f"(stable) over {window(settings)}, compared at the same load; the whole "
            f"interval is above {above:g} (slower by more than {cfg.tpot_margin:.0%}). "
            f"Its factors: each step's time x{_factor(C.FACTOR_STEP_TIME, settings)}, the "
            f"tokens a step yields x{_factor(C.FACTOR_TOKENS_PER_STEP, settings)}: the one "
            "whose interval is off 1 decides (the step's time above 1: the runbook's 'each "
            "step costs more'; the tokens per step below 1: 'each step yields fewer tokens')."
        ),
        meaning=(
            "What users feel of a config change: pods labelled `track=canary` decode each "
            "output token more slowly than the stable ones, at the same load. Per slice the "
            "ratio canary / stable of the decode time per output token (generation time after "
            "the first token over output tokens - 1, vLLM's per-request metrics) is compared "
            "at the same load (within load buckets, each cell moved to the canary's mean load "
            "by the load's slope learnt within each side) and combined at the canary's mix, so "
            "a canary with lighter or heavier traffic per pod is not judged by its load; the "
            "interval is request-level and guarded across the slices compared (Bonferroni). "
            f"Its lower bound above {above:g} for {Q.duration(cfg.for_seconds)}: the canary is "
            f"slower by more than {cfg.tpot_margin:.0%}, whatever its acceptance."
        ),
        confirm=(
            f"`{estimate}` and its `_lower` / `_upper` bounds by slice; "
            f"`{ratio_bound('model', 'estimate', settings)}` for the model",
            f"`{C.SPEC_CONFIG_INFO}`: what the two configs are (method, draft, K, vLLM)",
            "`specwatch compare --metric tpot` on both tracks' cycle logs: the same ratio "
            "offline, per slice and load",
        ),
        actions=(
            "Abort the rollout (Argo Rollouts: the generated AnalysisTemplate does it).",
            f"**Each step costs more** (`{dearer}` "
            "above 1; tokens per step unchanged): the engine's step got dearer at the same "
            "load. Look at the token budget (`max_num_batched_tokens`: with speculation on, "
            "vLLM's default 2048 can starve the batch, vLLM #44815), the vLLM version and "
            f"kernels the canary runs (`{C.SPEC_CONFIG_INFO}`), and the drafter's size "
            "and K (a longer K or a bigger draft costs more per step than it gains at this "
            "load: `specwatch advise` gives the K per batch size).",
            f"**Each step yields fewer tokens** (`{fewer}` "
            "below 1; the step's cost unchanged): an acceptance regression, not a speed one. "
            "Look at the canary's acceptance: `SpecDecodeCanaryWorse`, its slices' zones and "
            f"causes in `/status` (`{C.CAUSE}`), and the draft or checkpoint it runs.",
        ),
        extra_labels={"track": CANARY},
    )
