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
from specwatch.gen import promql as Q
from specwatch.gen.alert import BURN_RATES, Alert
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

ERROR_RATIO = PromQL("""
    sum by (${by}) (${increase}(${requests}{result!~"good|unmeasured"}[${span}]))
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
