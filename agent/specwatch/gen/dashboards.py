"""Grafana dashboards, built with Grafana's own SDK (grafana-foundation-sdk, pinned).

Three dashboards: the overview, one slice, and the fleet (per pod). Every acceptance panel is
coloured by the zone thresholds of the settings; queries read the recording rules of
gen/rules.py where they exist. Every query is listed by `panel_queries`, so a test can run
each one against a real Prometheus.
"""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders import bargauge, heatmap, stat
from grafana_foundation_sdk.builders import dashboard as builders
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import prometheus as prom_models
from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.overview_rows import (
    canary_panels,
    latency_slo_panels,
    load_panels,
    rollout_panels,
)
from specwatch.gen.panels import (
    DATASOURCE,
    SLICE_SELECTOR,
    M,
    acceptance,
    dashboard,
    gain_thresholds,
    latency,
    query,
    series,
    thresholds,
    zone_code,
    zone_panel,
)
from specwatch.settings import Settings


def _acceptance_panels(settings: Settings, slice_by: str) -> list[Any]:
    """Zones, acceptance (alpha-hat, rate, tau, per position)."""
    return [
        zone_panel(
            "Zone of every slice (worst pod)",
            zone_code(M, slice_by),
            "{{model}} {{ctx_bucket}} {{task}}",
        ),
        acceptance(
            "alpha-hat by context bucket and task (5m)",
            [(f"{Q.alpha('slice', '5m')}{{{M}}}", "{{ctx_bucket}} {{task}}")],
            settings,
            description="Per-token acceptance probability, comparable across K; summed across "
            "pods before dividing. Coloured by the zone thresholds.",
        ),
        acceptance(
            "alpha-hat per model (1h) with its 95% interval",
            [
                (f"{Q.alpha('model', '1h')}{{{M}}}", "{{model}}"),
                (f"{Q.alpha_bound('model', 'lower', '1h')}{{{M}}}", "{{model}} lower"),
                (f"{Q.alpha_bound('model', 'upper', '1h')}{{{M}}}", "{{model}} upper"),
            ],
            settings,
        ),
        series(
            "vLLM's acceptance rate (accepted / drafted, 5m)",
            [(f"{Q.vllm_rate('model', '5m')}{{{M}}}", "{{model}}")],
            "percentunit",
        ),
        series(
            "Mean acceptance length tau (tokens per step, 5m)",
            [(f"{Q.tau('model', '5m')}{{{M}}}", "{{model}}")],
        ),
        bargauge.Panel()
        .title("Acceptance by draft position (30m)")
        .datasource(DATASOURCE)
        .with_target(
            query(f"{Q.per_position('model', '30m')}{{{M}}}", "{{model}} position {{position}}")
        )
        .unit("percentunit")
        .min(0)
        .max(1)
        .height(8)
        .span(12),
    ]


def _speed_panels() -> list[Any]:
    """Throughput, speedup and latency."""
    return [
        series(
            "Drafted and accepted tokens/s",
            [
                (f"{Q.rate('model', C.DRAFT_TOKENS, '5m')}{{{M}}}", "{{model}} drafted"),
                (f"{Q.rate('model', C.ACCEPTED_TOKENS, '5m')}{{{M}}}", "{{model}} accepted"),
            ],
        ),
        stat.Panel()
        .title("Speedup over no speculation (measured or modelled)")
        .datasource(DATASOURCE)
        .with_target(
            query(
                f"max by (model, method) ({C.ESTIMATED_GAIN_RATIO}"
                f'{{{M}, ctx_bucket="all", bound="estimate"}})',
                "{{model}} ({{method}})",
            )
        )
        .thresholds(gain_thresholds())
        .unit("x")
        .height(8)
        .span(12),
        latency("Time to first token", C.TTFT_SECONDS, "model", M),
        latency("Time per output token", C.TPOT_SECONDS, "model", M),
        latency("End-to-end latency", C.REQUEST_DURATION_SECONDS, "model", M),
    ]


def _traffic_panels(settings: Settings, slice_by: str) -> list[Any]:
    """Volume, drift, traffic mix and the health of the sidecar."""
    return [
        series(
            "Output tokens/s",
            [(f"sum by (model) (rate({C.COMPLETION_TOKENS}_total{{{M}}}[5m]))", "{{model}}")],
        ),
        series(
            "Drift statistic per slice (alarms as annotations)",
            [(f"max by ({slice_by}) ({C.DRIFT_STATISTIC}{{{M}}})", "{{ctx_bucket}} {{task}}")],
        ),
        series(
            "Traffic mix by context bucket (trials/s)",
            [
                (
                    f"sum by (ctx_bucket) ({Q.rate('slice', C.ACCEPTANCE_TRIALS, '5m')}{{{M}}})",
                    "{{ctx_bucket}}",
                )
            ],
        ),
        series(
            "Traffic mix by task (trials/s)",
            [(f"sum by (task) ({Q.rate('slice', C.ACCEPTANCE_TRIALS, '5m')}{{{M}}})", "{{task}}")],
        ),
        series(
            "Traffic mix shift (PSI) and the mix/rate parts of the acceptance change",
            [
                (f"max by (model, dimension) ({C.TRAFFIC_MIX_PSI}{{{M}}})", "PSI {{dimension}}"),
                (f"avg by (model, part) ({C.ACCEPTANCE_CHANGE}{{{M}}})", "change: {{part}}"),
            ],
        ),
        series(
            "Coverage and sidecar health",
            [
                (f"min by (model) ({C.COVERAGE_RATIO}{{{M}}})", "coverage {{model}}"),
                (f"min({C.UPSTREAM_UP})", "vLLM up (all pods)"),
                (f'min(up{{job="{settings.alerts.job}"}})', "specwatch scraped (all pods)"),
                (f"sum(rate({C.PARSE_ERRORS}_total[5m]))", "parse errors/s"),
                (f"sum(rate({C.INTERNAL_ERRORS}_total[5m]))", "sidecar errors/s"),
                (
                    f"max({C.HELD_RESPONSE_BYTES} / {C.HELD_RESPONSE_LIMIT_BYTES})",
                    "byte budget held (fullest pod)",
                ),
            ],
        ),
        *_cost_panels(settings),
    ]


def _cost_panels(settings: Settings) -> list[Any]:
    """What the sidecar adds to each request, and the CPU it spends on one."""
    added = f"sum by (path, le) (rate({C.PROXY_ADDED_SECONDS}_bucket[5m]))"
    job = f'job="{settings.alerts.job}"'
    return [
        series(
            "Latency specwatch adds to a request (its span less the upstream's)",
            [
                (f"histogram_quantile(0.5, {added})", "p50 {{path}}"),
                (f"histogram_quantile(0.99, {added})", "p99 {{path}}"),
            ],
            unit="s",
            description="From the request read to the answer's last byte handed to the client, "
            "less the upstream's span (request sent to answer read to its end), per observed "
            "path; SpecDecodeSidecarAddedLatency warns past alerts.added_latency_p99_seconds.",
        ),
        series(
            "CPU specwatch spends per request",
            [
                (
                    f"sum(rate(process_cpu_seconds_total{{{job}}}[5m])) "
                    f"/ sum(rate({C.REQUESTS}_total[5m]))",
                    "CPU seconds / request (all pods)",
                )
            ],
            unit="s",
            description="The sidecar process's CPU (all its work: the proxy, the analysis, "
            "the scrapes) over the observed requests it relayed, every pod's together.",
        ),
    ]


def overview(settings: Settings) -> builders.Dashboard:
    slice_by = Q.by(Q.SLICE)
    board = dashboard(
        "specwatch-overview",
        "Speculative decoding — overview",
        "Acceptance, zones, speedup and health of speculative decoding, per slice (model x "
        "context bucket x task); " + Q.HEADER + ".",
        with_slice=False,
    )
    board = board.annotation(
        builders.AnnotationQuery()
        .name("drift alarms")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color("orange")
        .expr(f"max by ({slice_by}) ({C.DRIFT_ALARM}{{{M}}}) > 0")
        .title_format("drift: {{model}} {{ctx_bucket}} {{task}}")
        .step("1m")
    )
    panels = [
        *_acceptance_panels(settings, slice_by),
        *_speed_panels(),
        *load_panels(settings),
        *rollout_panels(),
        *latency_slo_panels(),
        *_traffic_panels(settings, slice_by),
    ]
    for panel in panels:
        board = board.with_panel(panel)
    return board


def slice_dashboard(settings: Settings) -> builders.Dashboard:
    board = dashboard(
        "specwatch-slice",
        "Speculative decoding — slice",
        "One slice (model x context bucket x task): acceptance with its confidence band, "
        "per-request acceptance length, per-position decay, latency and volume; " + Q.HEADER + ".",
        with_slice=True,
    )
    sel = SLICE_SELECTOR
    panels: list[Any] = [
        acceptance(
            "alpha-hat with its 95% interval (1h) and over 5m",
            [
                (f"{Q.alpha('slice', '1h')}{{{sel}}}", "alpha-hat 1h"),
                (f"{Q.alpha_bound('slice', 'lower', '1h')}{{{sel}}}", "lower"),
                (f"{Q.alpha_bound('slice', 'upper', '1h')}{{{sel}}}", "upper"),
                (f"{Q.alpha('slice', '5m')}{{{sel}}}", "alpha-hat 5m"),
            ],
            settings,
            width=24,
        ),
        heatmap.Panel()
        .title("Per-request acceptance length (tau) distribution")
        .datasource(DATASOURCE)
        .with_target(
            query(
                f"sum by (le) (rate({C.REQUEST_ACCEPTANCE_LENGTH}_bucket{{{sel}}}[5m]))", "{{le}}"
            ).format(prom_models.PromQueryFormat.HEATMAP)
        )
        .height(8)
        .span(12),
        bargauge.Panel()
        .title("Per-position acceptance (30m)")
        .datasource(DATASOURCE)
        .with_target(query(f"{Q.per_position('slice', '30m')}{{{sel}}}", "position {{position}}"))
        .unit("percentunit")
        .min(0)
        .max(1)
        .thresholds(thresholds(settings))
        .height(8)
        .span(12),
        latency("Time per output token", C.TPOT_SECONDS, "task", sel, width=12),
        latency("Time to first token", C.TTFT_SECONDS, "task", sel, width=12),
        series(
            "Volume: trials/s and requests/s by outcome",
            [
                (f"{Q.rate('slice', C.ACCEPTANCE_TRIALS, '5m')}{{{sel}}}", "trials/s"),
                (f"sum by (outcome) (rate({C.REQUESTS}_total{{{sel}}}[5m]))", "{{outcome}}"),
            ],
            width=12,
        ),
        series(
            "Causes found: 1 while found, any pod (the runbook's Causes has each fix)",
            [(f"max by ({C.Label.KIND}) ({C.CAUSE}{{{sel}}})", "{{kind}}")],
            width=12,
        ),
        series(
            "Drift statistic and speedup",
            [
                (f"max({C.DRIFT_STATISTIC}{{{sel}}})", "drift statistic"),
                (
                    f'max by (method) ({C.ESTIMATED_GAIN_RATIO}{{{sel}, bound="estimate"}})',
                    "gain ({{method}})",
                ),
            ],
            width=12,
        ),
    ]
    for panel in panels:
        board = board.with_panel(panel)
    return board


def fleet(settings: Settings) -> builders.Dashboard:
    board = dashboard(
        "specwatch-fleet",
        "Speculative decoding — fleet",
        "The same key series per pod (instance), to find the one bad replica; " + Q.HEADER + ".",
        with_slice=False,
    )
    per = "instance"
    accepted = f"sum by ({per}) (rate({C.ACCEPTED_TOKENS}_total{{{M}}}[5m]))"
    trials = f"sum by ({per}) (rate({C.ACCEPTANCE_TRIALS}_total{{{M}}}[5m]))"
    panels: list[Any] = [
        zone_panel("Worst zone per pod", zone_code(M, per), "{{instance}}"),
        acceptance(
            "alpha-hat per pod (5m)", [(f"{accepted}\n/ {trials}", "{{instance}}")], settings
        ),
        series(
            "Coverage per pod",
            [(f"min by ({per}) ({C.COVERAGE_RATIO}{{{M}}})", "{{instance}}")],
            "percentunit",
        ),
        latency("Time per output token per pod", C.TPOT_SECONDS, per, M, width=12),
        *canary_panels(settings),
        series(
            "Requests/s per pod",
            [(f"sum by ({per}) (rate({C.REQUESTS}_total{{{M}}}[5m]))", "{{instance}}")],
        ),
        series(
            "vLLM up and speedup per pod",
            [
                (f"min by ({per}) ({C.UPSTREAM_UP})", "up {{instance}}"),
                (
                    f"max by ({per}) ({C.ESTIMATED_GAIN_RATIO}"
                    f'{{{M}, ctx_bucket="all", bound="estimate"}})',
                    "gain {{instance}}",
                ),
            ],
        ),
    ]
    for panel in panels:
        board = board.with_panel(panel)
    return board


DASHBOARDS = {
    "dashboards/specwatch-overview.json": overview,
    "dashboards/specwatch-slice.json": slice_dashboard,
    "dashboards/specwatch-fleet.json": fleet,
}


def encode(dashboard: Any) -> bytes:
    return (json.dumps(dashboard, cls=JSONEncoder, sort_keys=True, indent=2) + "\n").encode()


def render_dashboards(settings: Settings) -> dict[str, bytes]:
    return {name: encode(build(settings).build()) for name, build in DASHBOARDS.items()}


def panel_queries(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expression) of every query of a dashboard JSON, annotations included."""
    out = []
    for panel in document.get("panels", []):
        for target in panel.get("targets", []):
            if target.get("expr"):
                out.append((panel["title"], target["expr"]))
    for annotation in document.get("annotations", {}).get("list", []):
        if annotation.get("expr"):
            out.append((f"annotation: {annotation['name']}", annotation["expr"]))
    return out
