"""Alerting rules and their runbooks, written once: the rule file and runbooks.md come from here.

This module holds the acceptance alerts (zones, burn rates, drift, slower than baseline) and
assembles every group; ops_alerts.py the operational ones. Each alert reads the recording
rules of gen/rules.py (fleet-wide, summed across pods), never a single pod's ratio; the
sidecar's own per-pod zones stay for dashboards and /status.
"""

from __future__ import annotations

from typing import Any

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.alert import BURN_RATES, ON_SLICE, SLICE_TEXT, Alert, GenerateError, slice_value
from specwatch.gen.canary import canary_alert
from specwatch.gen.goodput_alert import slower_alert
from specwatch.gen.ops_alerts import divergence_alerts, health_alerts
from specwatch.settings import Settings

__all__ = ["Alert", "GenerateError", "alert_groups", "alerts"]


def _evidence(record: str, threshold: str) -> str:
    return f'{record}{{{C.Label.THRESHOLD}="{threshold}"}}'


def _zone_expr(name: str, threshold: str, gates: str) -> str:
    """The deciding evidence at the entry bar says below `threshold`; or the alert fires
    already and the deciding evidence at the exit bar does not say above it, while some window
    is past half the gates (hysteresis through its own ALERTS series, as the sidecar's zones:
    analysis/verdicts/zones.py)."""
    return (
        f"  {_evidence(Q.EVIDENCE_ENTRY, threshold)} < 0\n"
        f"  or {ON_SLICE} (\n"
        f'    ALERTS{{alertname="{name}", alertstate="firing"}}\n'
        f"    and {ON_SLICE} ({gates})\n"
        f"    unless {ON_SLICE} {_evidence(Q.EVIDENCE_EXIT, threshold)} > 0\n"
        "  )"
    )


# the slice's cause, as the rule labels it (`_with_cause`), and where the runbook says its fix
CAUSE_ANNOTATION = {
    "cause": '{{ if eq $labels.cause "none" }}none found{{ else }}{{ $labels.cause }} '
    "(runbook: #cause-{{ $labels.cause }}){{ end }}"
}


def _with_cause(expr: str) -> str:
    """`expr` (alpha-hat per slice) but for a synthetic or lossy verifier (zone
    not_applicable), labelled with the slice's cause (docs/causes.md): the value stays."""
    not_judged = f'{C.CAUSE}{{{C.Label.KIND}=~"{Q.NOT_JUDGED_KINDS}"}}'
    return (
        f"(\n(\n{expr}\n)\nunless {ON_SLICE} {not_judged}\n)\n"
        f"* {ON_SLICE} group_left(cause) {Q.CAUSE}"
    )


def _zone_alerts(settings: Settings, windows: Q.Windows) -> list[Alert]:
    cfg = settings.zones
    red, green = cfg.red, cfg.green
    gates = f" or {ON_SLICE} ".join(Q.evidence_gate("slice", w) for w in _zone_names(settings))
    a1h = Q.alpha("slice", "1h")
    # the verdict window's bounds: the hour's leave out series younger than an hour
    lower = Q.alpha_bound("slice", "lower", Q.duration(settings.window.length_seconds))
    upper = Q.alpha_bound("slice", "upper", Q.duration(settings.window.length_seconds))
    bounds = f"{slice_value(lower)}–{slice_value(upper)} (95%) over the last window"
    red_name, yellow_name = C.AlertName.SLICE_RED, C.AlertName.SLICE_YELLOW
    evidence_text = (
        f"evidence from the zone windows ({', '.join(_zone_names(settings))}; the longest "
        "decides unless a shorter one's newer data differ from the rest of it at "
        f"{cfg.change_evidence:g}): a log-likelihood ratio with an indifference zone of "
        f"±{cfg.indifference:g} around the threshold, request-level, entered at "
        f"{cfg.bar('green'):g} and left at {cfg.exit_bar('green'):g} the other way for green, "
        f"{cfg.bar('red'):g} and {cfg.exit_bar('red'):g} for red (README, section 'What it judges')"
    )
    confirm = (
        f"`{a1h}` and `{Q.alpha('slice', '5m')}` for the slice",
        f"`{Q.EVIDENCE_ENTRY}` and `{Q.EVIDENCE_EXIT}` for the slice, and each window's "
        f"`{Q.evidence('slice', '5m')}` (and the longer ones): which window decides",
        f"`{Q.per_position('slice', '30m')}`: does acceptance fall at the first position or "
        "only later?",
        f"`{Q.alpha('model', '1h')}` beside it: one slice or the whole model?",
    )
    recent_red = (
        f'count_over_time(ALERTS{{alertname="{red_name}", alertstate="firing"}}[{windows("1h")}])'
    )
    return [
        Alert(
            name=red_name,
            severity="critical",
            expr=_with_cause(f"{a1h}\nand {ON_SLICE} (\n{_zone_expr(red_name, 'red', gates)}\n)"),
            for_seconds=300,
            summary="Speculative decoding is in the red zone for " + SLICE_TEXT,
            description=(
                f'Slice {SLICE_TEXT}: alpha-hat {{{{ $value | printf "%.3f" }}}} over 1h, '
                f"{bounds}: the evidence says it is below the red threshold {red}. Below "
                "this, drafting costs more than it saves: speculation is likely slower than none."
            ),
            meaning=(
                f"The fleet-wide per-token acceptance alpha-hat of this slice is below {red}, "
                f"on {evidence_text}. Requests are the sampling unit (they differ far more "
                "than tokens), so one lucky or unlucky window among the hundreds an hour "
                "holds neither fires nor ends this alert. At this acceptance the draft's "
                "cost is rarely repaid: expected tokens per step (1 - a^(K+1)) / (1 - a) stay "
                "near 1."
            ),
            confirm=confirm,
            extra_annotations=CAUSE_ANNOTATION,
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
            name=yellow_name,
            severity="warning",
            expr=_with_cause(
                f"{a1h}\nand {ON_SLICE} (\n{_zone_expr(yellow_name, 'green', gates)}\n)\n"
                f"unless {ON_SLICE} {_evidence(Q.EVIDENCE_ENTRY, 'red')} < 0\n"
                f"unless {ON_SLICE} {recent_red}"
            ),
            for_seconds=900,
            summary="Speculative decoding acceptance is marginal for " + SLICE_TEXT,
            description=(
                f'Slice {SLICE_TEXT}: alpha-hat {{{{ $value | printf "%.3f" }}}} over 1h, '
                f"{bounds}: the evidence says it is below the green threshold ({green}), "
                f"not below the red one ({red})."
            ),
            meaning=(
                f"Acceptance is below {green} on {evidence_text}, and not below {red}: "
                "speculation still helps but less than it could, and a further drop turns it "
                f"red. A slice whose evidence cannot tell it from {green} does not warn. A "
                "slice that recovers from red through yellow does not raise this warning "
                "within the hour after (the red alert covered it)."
            ),
            confirm=confirm,
            extra_annotations=CAUSE_ANNOTATION,
            actions=(
                "Check whether K is too long for this acceptance (the advisor's range).",
                "Compare with other context buckets of the same task: long-context collapse "
                "shows as yellow then red at the longest buckets first.",
            ),
        ),
    ]


def _zone_names(settings: Settings) -> tuple[str, ...]:
    return Q.zone_windows((settings.window.length_seconds, *settings.evidence_windows_seconds))


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
    model = Q.by(Q.MODEL)
    selector = 'method="measured",ctx_bucket="all",task="all"'
    upper = f'{C.ESTIMATED_GAIN_RATIO}{{{selector},bound="upper"}}'
    estimate = f'{C.ESTIMATED_GAIN_RATIO}{{{selector},bound="estimate"}}'
    return Alert(
        name=C.AlertName.SLOWER_THAN_BASELINE,
        severity="critical",
        expr=(f"max by ({model}) ({estimate})\nand on({model}) max by ({model}) ({upper}) < 1"),
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


def _slower_at_load_alert() -> Alert:
    by_load, by_model = Q.by((*Q.MODEL, C.Label.LOAD)), Q.by(Q.MODEL)
    measured = f'{C.LOAD_GAIN_RATIO}{{method="measured",bound="%s"}}'
    model = f'{C.ESTIMATED_GAIN_RATIO}{{ctx_bucket="all",task="all",bound="estimate"}}'
    return Alert(
        name=C.AlertName.SLOWER_AT_LOAD,
        severity="warning",
        expr=(
            f"max by ({by_load}) ({measured % 'estimate'})\n"
            f"and on({by_load}) max by ({by_load}) ({measured % 'upper'}) < 1\n"
            f"and on({by_model}) max by ({by_model}) ({model}) >= 1"
        ),
        for_seconds=900,
        summary=(
            "Speculation is slower than none for {{ $labels.model }} at batch sizes "
            "{{ $labels.load }}"
        ),
        description=(
            "Model {{ $labels.model }}: at {{ $labels.load }} requests in flight the measured "
            'gain is {{ $value | printf "%.2f" }}, surely below 1 (the upper bound of its '
            "interval) on every pod, while the model as a whole gains from speculation."
        ),
        meaning=(
            "Drafting costs compute that is free at batch 1 and not at batch 64: the same "
            "draft that pays at low load can be slower than no speculation at high load. "
            "specwatch groups requests by the requests in flight at their upstream when they "
            "started (`load.batch_edges`) and measures the gain in each group against the A/B "
            "baseline requests at the same load, over `load.window_seconds`. The model's "
            "overall gain hides it: its traffic is mostly at the loads where speculation pays."
        ),
        confirm=(
            f"`{C.LOAD_GAIN_RATIO}` by load and bound, and `{C.LOAD_ADVISED_K}`: the K table "
            "specwatch advises (0 where speculation does not pay)",
            "`specwatch advise --cycle-log FILE` (or /status `load`): the table with the "
            "requests and interval behind each range",
            f"`{C.VLLM_RUNNING}` against `{C.UPSTREAM_IN_FLIGHT}`: does the load the proxy "
            "sees match the batch vLLM runs?",
        ),
        actions=(
            "Give vLLM the advised table: `--speculative-config` with "
            '`"num_speculative_tokens_per_batch_size"` from `specwatch advise --json` (K = 0 '
            "turns drafting off at those batch sizes); roll it out through a canary.",
            "Or cap the batch (`--max-num-seqs`) where latency matters more than throughput.",
        ),
    )


def alerts(settings: Settings, windows: Q.Windows) -> list[Alert]:
    return [
        *_zone_alerts(settings, windows),
        *_burn_alerts(settings, windows),
        _slower_alert(),
        _slower_at_load_alert(),
        _drift_alert(settings, windows),
        *health_alerts(settings, windows),
        *divergence_alerts(settings, windows),
        slower_alert(settings),
        canary_alert(settings),
    ]


def alert_groups(settings: Settings, windows: Q.Windows) -> list[dict[str, Any]]:
    base = settings.alerts.runbook_base_url
    rules = []
    for alert in alerts(settings, windows):
        for severity, expr, description in alert.rules():
            rule: dict[str, Any] = {
                "alert": alert.name,
                "expr": expr,
                "labels": {"severity": severity, **alert.extra_labels},
                "annotations": {
                    "summary": alert.summary,
                    "description": description,
                    "runbook": "\n".join(f"- {step}" for step in alert.actions),
                    **alert.extra_annotations,
                    **({"runbook_url": f"{base}#{alert.anchor}"} if base else {}),
                },
            }
            if alert.for_seconds:
                rule["for"] = windows(alert.for_seconds)
            rules.append(rule)
    return [{"name": "specwatch.alerts", "rules": rules}]
