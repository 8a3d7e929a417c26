"""Alerting rules and their runbooks, written once: the rule file and runbooks.md come from here.

This module holds the acceptance alerts (zones, burn rates, drift) and assembles every group;
speed_alerts.py holds the slower-than-none ones, ops_alerts.py the operational ones. Each
alert reads the recording rules of gen/rules.py (fleet-wide, summed across pods), never a
single pod's ratio; the sidecar's own per-pod zones stay for dashboards and /status.
"""

from __future__ import annotations

import textwrap
from typing import Any

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.alert import BURN_RATES, ON_SLICE, SLICE_TEXT, Alert, GenerateError, slice_value
from specwatch.gen.canary import canary_alert
from specwatch.gen.goodput_alert import slower_alert
from specwatch.gen.latency_slo import canary_burn_alert, latency_burn_alerts
from specwatch.gen.ops_alerts import divergence_alerts, health_alerts
from specwatch.gen.speed_alerts import slower_at_load_alert, slower_than_baseline_alert
from specwatch.gen.template import PromQL
from specwatch.settings import Settings

__all__ = ["Alert", "GenerateError", "alert_groups", "alerts"]

# The deciding evidence at the entry bar says below the threshold; or the alert fires already,
# some window is past half the gates, and the evidence at the exit bar does not say above it.
ZONE = PromQL("""
    ${entry} < 0
    or ${on} (
      ALERTS{alertname="${name}", alertstate="firing"}
      and ${on} (${gates})
      unless ${on} ${exit} > 0
    )
""")

# alpha-hat per slice where `zone` holds, but for a verifier the zones do not judge, with its cause
ZONE_ALERT = PromQL("""
    (
    (
    ${alpha}
    and ${on} (
    ${zone}
    )${unless}
    )
    unless ${on} ${not_judged}
    )
    * ${on} group_left(cause) ${cause}
""")

# one burn-rate pair: both windows burn, and the slice has history over the whole long one
BURN = PromQL("""
    (
      ${long_ratio} > ${threshold}
      and ${on} ${short_ratio} > ${threshold}
      and ${on} (${good_window} offset ${long_span})
    )
""")

# the sidecar's detector, or a fall of the 30-minute alpha-hat from the 6-hour one
DRIFT = PromQL("""
    ${detector} == 1
    or ${on} (
      (${base} - ${recent}) >= ${min_delta}
      and ${on} ${z_score} > ${z}
      and ${on} ${n} >= ${min_trials}
      and ${on} (${baseline_exists})
      unless ${on} ${detector}
    )
""")


def _evidence(record: str, threshold: str) -> str:
    return f'{record}{{{C.Label.THRESHOLD}="{threshold}"}}'


def _zone_expr(name: str, threshold: str, gates: str) -> str:
    """ZONE for alert `name` and `threshold`: hysteresis through the alert's own ALERTS series,
    as the sidecar's zones (analysis/verdicts/zones.py)."""
    zone = ZONE(
        entry=_evidence(Q.EVIDENCE_ENTRY, threshold),
        exit=_evidence(Q.EVIDENCE_EXIT, threshold),
        on=ON_SLICE,
        name=name,
        gates=gates,
    )
    return textwrap.indent(zone, "  ")  # inside ZONE_ALERT's parentheses


# the slice's cause, as the rule labels it (`_zone_alert`), and where the runbook says its fix
CAUSE_ANNOTATION = {
    "cause": '{{ if eq $labels.cause "none" }}none found{{ else }}{{ $labels.cause }} '
    "(runbook: #cause-{{ $labels.cause }}){{ end }}"
}


def _zone_alert(alpha: str, zone: str, unless: str = "") -> str:
    """alpha-hat per slice where `zone` holds (`unless`: further exclusions, each a line
    `unless ...`), but for a synthetic or lossy verifier (zone not_applicable), labelled with
    the slice's cause (docs/causes.md): the value stays."""
    not_judged = f'{C.CAUSE}{{{C.Label.KIND}=~"{Q.NOT_JUDGED_KINDS}"}}'
    return ZONE_ALERT(
        alpha=alpha, on=ON_SLICE, zone=zone, unless=unless, not_judged=not_judged, cause=Q.CAUSE
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
            expr=_zone_alert(a1h, _zone_expr(red_name, "red", gates)),
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
            expr=_zone_alert(
                a1h,
                _zone_expr(yellow_name, "green", gates),
                f"\nunless {ON_SLICE} {_evidence(Q.EVIDENCE_ENTRY, 'red')} < 0"
                f"\nunless {ON_SLICE} {recent_red}",
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
                BURN(
                    long_ratio=Q.slo_error_ratio(long_w),
                    short_ratio=Q.slo_error_ratio(short_w),
                    threshold=f"{threshold:.6g}",
                    on=ON_SLICE,
                    good_window=Q.GOOD_WINDOW,
                    long_span=windows(long_w),
                )
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
        expr=DRIFT(
            detector=detector,
            on=ON_SLICE,
            base=base,
            recent=recent,
            min_delta=cfg.drift_min_delta,
            z_score=z_score,
            z=cfg.drift_z,
            n=n,
            min_trials=cfg.min_long_trials,
            baseline_exists=baseline_exists,
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


def alerts(settings: Settings, windows: Q.Windows) -> list[Alert]:
    return [
        *_zone_alerts(settings, windows),
        *_burn_alerts(settings, windows),
        slower_than_baseline_alert(),
        slower_at_load_alert(),
        _drift_alert(settings, windows),
        *health_alerts(settings, windows),
        *divergence_alerts(settings, windows),
        slower_alert(settings),
        canary_alert(settings),
        *latency_burn_alerts(settings),
        canary_burn_alert(settings, windows),
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
