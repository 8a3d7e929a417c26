"""Latency SLOs in PromQL: the error ratio per objective, model, config, track and variant over
the SRE workbook's windows, and its multiwindow, multi-burn-rate alerts (docs/latency-slos.md).

The rules are Sloth's, name for name (`slo:sli_error:ratio_rate5m`, `slo:objective:ratio`,
`slo:error_budget:ratio`, `slo:current_burn_rate:ratio`, `slo:period_burn_rate:ratio`,
`slo:period_error_budget_remaining:ratio`), with Sloth's labels (`sloth_service`, `sloth_slo`,
`sloth_id`, `sloth_window`) beside specwatch's, so a Sloth dashboard reads them as they are.
They do not depend on the objectives configured: the sidecar exports each objective
(conventions: LATENCY_SLO_OBJECTIVE) and the rules divide by it, so one generated file
serves every objective. Only the period's window is fixed when the files are written
(`alerts.latency_slo_period_days`).

An event of the SLI is a request judged against an objective, but `unmeasured` (no TTFT, or no
TPOT past its first token); a bad one every result but `good`. Counters are summed across pods
before dividing.
"""

from __future__ import annotations

from specwatch import conventions as C
from specwatch.analysis.counting.stats import z_for
from specwatch.gen import promql as Q
from specwatch.gen.alert import BURN_RATES, Alert, looked_up
from specwatch.gen.canary import ratio_bound
from specwatch.gen.template import PromQL, Recording
from specwatch.settings import Settings

WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")
BY = Q.by((C.Label.MODEL, C.Label.CONFIG, C.Label.TRACK, C.Label.VARIANT, C.Label.SLO))
SERVICE = "specwatch"
PERIOD_BUDGET = "slo:period_error_budget_remaining:ratio"

# Sloth's labels from the series' own `slo`
SLOTH = PromQL(
    """
    label_replace(
      label_replace(
        ${expr},
        "sloth_slo", "$1", "slo", "(.*)"
      ),
      "sloth_id", "${service}-$1", "slo", "(.*)"
    )
""",
    indent=True,
)

# a config without a bad request has no bad series at all: its ratio is 0, not absent
ERROR_RATIO = PromQL("""
    (
      sum by (${by}) (${increase}(${requests}{result!~"good|unmeasured"}[${span}]))
      or sum by (${by}) (${increase}(${requests}{result!="unmeasured"}[${span}])) * 0
    )
    / sum by (${by}) (${increase}(${requests}{result!="unmeasured"}[${span}]))
""")

# both windows of a pair burn faster than `factor` times the budget
BURNING = PromQL("""
    max without (sloth_window) (
      slo:sli_error:ratio_rate${long} > on(slo) group_left() (${factor} * slo:error_budget:ratio)
      and ignoring(sloth_window) slo:sli_error:ratio_rate${short}
        > on(slo) group_left() (${factor} * slo:error_budget:ratio)
    )
""")


def error_ratio(window: str) -> str:
    return f"slo:sli_error:ratio_rate{window}"


def _labelled(expr: str, window: str | None = None) -> tuple[str, dict[str, str]]:
    labels = {"sloth_service": SERVICE} | ({"sloth_window": window} if window else {})
    return SLOTH(expr=expr, service=SERVICE), labels


def latency_slo_rules(settings: Settings, windows: Q.Windows) -> list[Recording]:
    """The error ratio over each window, the objective and its budget, the burn rates and the
    budget left over the period."""
    requests = f"{C.LATENCY_SLO_REQUESTS}_total"
    rules = []
    for window in WINDOWS:
        ratio = ERROR_RATIO(by=BY, increase="rate", requests=requests, span=windows(window))
        rules.append(Recording(error_ratio(window), *_labelled(ratio, window)))
    objective = f"max by ({C.Label.SLO}) ({C.LATENCY_SLO_OBJECTIVE})"
    rules += [
        Recording("slo:objective:ratio", *_labelled(objective)),
        Recording("slo:error_budget:ratio", "1 - slo:objective:ratio"),
        Recording(
            "slo:current_burn_rate:ratio",
            f"{error_ratio('5m')}\n/ on(slo) group_left() slo:error_budget:ratio",
        ),
    ]
    return rules


LOAD_BY = Q.by((C.Label.MODEL, C.Label.CONFIG, C.Label.TRACK, C.Label.SLO, C.Label.LOAD))
SAME_LOAD = Q.by((C.Label.MODEL, C.Label.SLO, C.Label.LOAD))


def _load_window(settings: Settings, windows: Q.Windows) -> str:
    return windows(settings.canary.window_seconds)


def _load_ratio(w: str, metric: str = C.RECORDED_LATENCY_LOAD_ERROR_RATIO, bound: str = "") -> str:
    """A load bucket's recorded ratio over the window `w`: the error ratio (or its `lower` /
    `upper` bound) or, named, the burn rate."""
    return Q.record("load", f"{metric}_{bound}" if bound else metric, f"ratio{w}")


def load_rules(settings: Settings, windows: Q.Windows) -> list[Recording]:
    """Per model, config, track, objective and load bucket over the canary's window: the
    speculative requests, their error ratio with Wilson's bounds (the request as the unit, at
    canary.confidence) and the burn rate. `w` below is the window's name as rendered."""
    w = _load_window(settings, windows)
    total = f"{C.LATENCY_SLO_LOAD_REQUESTS}_total"
    n = Q.increase("load", C.LATENCY_SLO_LOAD_REQUESTS, w)
    ratio = _load_ratio(w)
    z = f"{z_for(settings.canary.confidence):.6g}"
    rules = [
        Recording(n, f"sum by ({LOAD_BY}) (increase({total}[{w}]))"),
        Recording(
            ratio,
            f'(\n  sum by ({LOAD_BY}) (increase({total}{{result="bad"}}[{w}]))\n  or {n} * 0\n)'
            f"\n/ ({n} > 0)",
        ),
    ]
    for bound in ("lower", "upper"):
        sign = "-" if bound == "lower" else "+"
        rules.append(
            Recording(
                _load_ratio(w, bound=bound),
                Q.WILSON(p=ratio, n=n, t=z, sign=sign),
            )
        )
    rules.append(
        Recording(
            _load_ratio(w, C.RECORDED_LATENCY_LOAD_BURN_RATE),
            f"{ratio}\n/ on(slo) group_left() slo:error_budget:ratio",
        )
    )
    return rules


CANARY_BURN = PromQL("""
    (
      ${burn}{track="canary"} >= 1
      and on(${by}) ${lower}{track="canary"}
        > on(${same}) group_left() max by (${same}) (${upper}{track="stable"})
      and on(${by}) ${requests}{track="canary"} >= ${min}
    )
    and on(${same}) min by (${same}) (${requests}{track="stable"}) >= ${min}
""")


def canary_burn_alert(settings: Settings, windows: Q.Windows) -> Alert:
    """The canary burning its latency budget faster than stable in the same load bucket."""
    w = _load_window(settings, windows)
    said = Q.duration(settings.canary.window_seconds)
    burn = _load_ratio(w, C.RECORDED_LATENCY_LOAD_BURN_RATE)
    lower, upper = (_load_ratio(w, bound=bound) for bound in ("lower", "upper"))
    requests = Q.increase("load", C.LATENCY_SLO_LOAD_REQUESTS, w)
    minimum = settings.canary.latency_min_cell_requests
    on_stable = 'track=\\"stable\\",'  # escaped: the selector sits in a quoted printf
    stable = looked_up(burn, ("model", "slo", "load"), 2, fixed=on_stable, aggregate="max")
    return Alert(
        name=C.AlertName.CANARY_LATENCY_BURN,
        severity="warning",
        expr=CANARY_BURN(
            burn=burn,
            by=LOAD_BY,
            same=SAME_LOAD,
            lower=lower,
            upper=upper,
            requests=requests,
            min=str(minimum),
        ),
        for_seconds=settings.canary.for_seconds,
        summary="The canary config burns its latency budget faster than stable: "
        "{{ $labels.slo }} for {{ $labels.model }} at load {{ $labels.load }}",
        description=(
            "Latency objective {{ $labels.slo }} for {{ $labels.model }}, batch size "
            "{{ $labels.load }}, over " + said + ": the canary config {{ $labels.config }} "
            'burns its error budget at {{ $value | printf "%.2f" }}x, stable at ' + stable + "x; "
            "the canary's error ratio is above stable's beyond both intervals."
        ),
        meaning=(
            "Per load bucket (the batch size a request started in), the share of the "
            "canary's speculative requests that missed the objective, against stable's in the "
            "same bucket: the two are compared at the same load, so a canary that only gets a "
            "busier share of traffic is not named. It fires when the canary burns at least 1x "
            "(its budget would not last the period) and the lower bound of its error ratio is "
            "above the upper bound of stable's (Wilson's, the request as the unit, at "
            "canary.confidence), each side with at least canary.latency_min_cell_requests "
            "requests in the bucket. Requests of one minute miss together more often than "
            "independent trials would: two separate 95% intervals that do not overlap are a "
            "stricter test than 95%, which takes up part of that."
        ),
        confirm=(
            f"`{burn}` by track for the model and load: the canary alone, or both?",
            "SpecDecodeCanarySlower and the TPOT ratio's factors: a canary that decodes "
            "slower at this load burns TPOT's budget",
            "/status `latency_slos` on the canary's pods: which result dominates",
        ),
        actions=(
            "Hold the rollout: the canary config misses the objective where stable meets it, "
            "at the same batch size.",
            "TTFT misses: the draft takes the batch's token budget (vLLM #44815); TPOT "
            "misses: follow SpecDecodeCanarySlower's runbook (each step costs more, or yields "
            "fewer tokens).",
            "Roll the canary back if it persists past the budget's ticket windows.",
        ),
    )


def latency_period_rules(settings: Settings, windows: Q.Windows) -> list[Recording]:
    """Over the period (a group of its own, evaluated every 5 minutes: a month's range)."""
    days = f"{settings.alerts.latency_slo_period_days:g}d"
    requests = f"{C.LATENCY_SLO_REQUESTS}_total"
    ratio = ERROR_RATIO(by=BY, increase="increase", requests=requests, span=windows(days))
    return [
        Recording(error_ratio(days), *_labelled(ratio, days)),
        Recording(
            "slo:period_burn_rate:ratio",
            f"{error_ratio(days)}\n/ on(slo) group_left() slo:error_budget:ratio",
        ),
        Recording(PERIOD_BUDGET, "1 - slo:period_burn_rate:ratio"),
    ]


def latency_burn_alerts(settings: Settings) -> list[Alert]:
    out = []
    who = (
        "{{ $labels.slo }} for {{ $labels.model }} (config {{ $labels.config }}, track "
        "{{ $labels.track }}, {{ $labels.variant }})"
    )
    for severity in ("critical", "warning"):
        pairs = [p for p in BURN_RATES if p[3] == severity]
        clauses = [
            BURNING(long=long_w, short=short_w, factor=f"{factor:g}")
            for factor, long_w, short_w, _ in pairs
        ]
        said = ", ".join(f"{f:g}x over {lw} and {sw}" for f, lw, sw, _ in pairs)
        fast = severity == "critical"
        out.append(
            Alert(
                name=C.AlertName.LATENCY_BURN_FAST if fast else C.AlertName.LATENCY_BURN_SLOW,
                severity=severity,
                expr="\nor\n".join(clauses),
                for_seconds=120 if fast else 900,
                summary=f"Latency SLO budget burning ({'page' if fast else 'ticket'}): " + who,
                description=(
                    f"Latency objective {who}: {{{{ $value | humanizePercentage }}}} of requests "
                    f"missed TTFT or TPOT (or failed) over the long window ({said})."
                ),
                meaning=(
                    "A latency objective (`latency_slos`): a request is good when its time to "
                    "first token and its own time per output token (never the inter-token "
                    "latency, which counts engine steps under speculation) are both within "
                    "their thresholds; an upstream error is bad. The error budget is 1 - "
                    "objective; this alert fires when both windows of a pair burn it faster "
                    f"than the factor ({said}): fast burns page, slow burns open a ticket. "
                    "Each speculative config and rollout track burns its own budget."
                ),
                confirm=(
                    f"`{error_ratio('1h')}` by config and track: one config, or all of them?",
                    "/status `latency_slos`: which result dominates (ttft_missed: the "
                    "prefill or the queue; tpot_missed: decoding; error: the server)",
                    f"`{ratio_bound('model', 'estimate', settings)}`, "
                    "SpecDecodeCanarySlower and the load by batch size: is speculation the "
                    "cause, or the load?",
                ),
                actions=(
                    "Look at the goodput verdicts first (the canary's TPOT ratio, "
                    "SpecDecodeSlowerAtLoad): a config that decodes slower at this load burns "
                    "TPOT's budget.",
                    "TTFT misses under speculation: the draft takes the batch's token budget "
                    "(vLLM #44815); lower K or `--max-num-batched-tokens` headroom.",
                    "The control: route a share of traffic with speculation off (A/B "
                    "`ab.baseline_percent`) and compare each variant's attainment in /status.",
                    "Past the budget with speculation the cause: roll the config back.",
                ),
            )
        )
    return out
