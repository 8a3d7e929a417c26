"""Grafana dashboards, built with Grafana's own SDK (grafana-foundation-sdk, pinned).

Three dashboards: the overview, one slice, and the fleet (per pod). Every acceptance panel is
coloured by the zone thresholds of the settings; queries read the recording rules of
gen/rules.py where they exist. Every query is listed by `panel_queries`, so a test can run
each one against a real Prometheus.
"""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders import bargauge, heatmap, stat, statetimeline, timeseries
from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as builders
from grafana_foundation_sdk.builders import prometheus as prom
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as models
from grafana_foundation_sdk.models import prometheus as prom_models
from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.settings import Settings

DATASOURCE = models.DataSourceRef(type_val="prometheus", uid="${datasource}")
TAGS = ["specwatch", "speculative-decoding", "vllm"]
M = 'model=~"$model"'
SLICE_SELECTOR = 'model=~"$model", ctx_bucket=~"$ctx_bucket", task=~"$task"'
ZONE_CODES = {"0": ("insufficient", "gray"), "1": ("green", "green"), "2": ("yellow", "yellow"),
              "3": ("red", "red")}  # fmt: skip


def _thresholds(settings: Settings) -> builders.ThresholdsConfig:
    zones = settings.zones
    return (
        builders.ThresholdsConfig()
        .mode(models.ThresholdsMode.ABSOLUTE)
        .steps(
            [
                models.Threshold(value=None, color="red"),
                models.Threshold(value=zones.red, color="yellow"),
                models.Threshold(value=zones.green, color="green"),
            ]
        )
    )


def _gain_thresholds() -> builders.ThresholdsConfig:
    return (
        builders.ThresholdsConfig()
        .mode(models.ThresholdsMode.ABSOLUTE)
        .steps(
            [models.Threshold(value=None, color="red"), models.Threshold(value=1.0, color="green")]
        )
    )


def _query(expr: str, legend: str, ref: str = "A") -> prom.Dataquery:
    return prom.Dataquery().expr(expr).legend_format(legend).ref_id(ref)


def _series(
    title: str,
    queries: list[tuple[str, str]],
    unit: str = "short",
    width: int = 12,
    description: str = "",
) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .height(8)
        .span(width)
    )
    for i, (expr, legend) in enumerate(queries):
        panel = panel.with_target(_query(expr, legend, chr(ord("A") + i)))
    return panel


def _acceptance(title: str, queries: list[tuple[str, str]], settings: Settings, width: int = 12,
                description: str = "") -> timeseries.Panel:  # fmt: skip
    """Acceptance coloured by zone: red below the red threshold, green above the green one."""
    return (
        _series(title, queries, "percentunit", width, description)
        .min(0)
        .max(1)
        .thresholds(_thresholds(settings))
        .thresholds_style(
            common_builders.GraphThresholdsStyleConfig().mode(
                common.GraphThresholdsStyleMode.LINE_AND_AREA
            )
        )
    )


def _latency(
    title: str,
    histogram: str,
    by: str,
    selector: str,
    width: int = 8,
    quantiles: tuple[float, ...] = (0.5, 0.95, 0.99),
) -> timeseries.Panel:
    buckets = f"rate({histogram}_bucket{{{selector}}}[5m])"
    queries = [
        (
            f"histogram_quantile({q}, sum by (le, {by}) ({buckets}))",
            f"p{round(q * 100)} {{{{{by}}}}}",
        )
        for q in quantiles
    ]
    return _series(title, queries, "s", width)


def _zone_code(selector: str, by: str) -> str:
    """Worst zone across pods as a code: 0 insufficient, 1 green, 2 yellow, 3 red."""
    zone = C.ZONE
    return (
        f"max by ({by}) (\n"
        f'  3 * {zone}{{zone="red", {selector}}}\n'
        f'  + ignoring(zone) 2 * {zone}{{zone="yellow", {selector}}}\n'
        f'  + ignoring(zone) {zone}{{zone="green", {selector}}}\n)'
    )


def _zone_panel(title: str, expr: str, legend: str, width: int = 24) -> statetimeline.Panel:
    options = {k: models.ValueMappingResult(text=t, color=c) for k, (t, c) in ZONE_CODES.items()}
    mapping = models.ValueMap(options=options)
    return (
        statetimeline.Panel()
        .title(title)
        .datasource(DATASOURCE)
        .with_target(_query(expr, legend))
        .mappings([mapping])
        .height(10)
        .span(width)
    )


def _variables(with_slice: bool) -> list[Any]:
    out: list[Any] = [
        builders.DatasourceVariable("datasource").label("Prometheus").type("prometheus"),
        builders.QueryVariable("model")
        .label("model")
        .datasource(DATASOURCE)
        .query(f"label_values({C.SPEC_STEPS}_total, model)")
        .include_all(True)
        .multi(True),
    ]
    if with_slice:
        for name in ("ctx_bucket", "task"):
            out.append(
                builders.QueryVariable(name)
                .label(name)
                .datasource(DATASOURCE)
                .query(f'label_values({C.SPEC_STEPS}_total{{model=~"$model"}}, {name})')
            )
    return out


def _dashboard(uid: str, title: str, description: str, with_slice: bool) -> builders.Dashboard:
    board = (
        builders.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(TAGS)
        .time("now-6h", "now")
        .refresh("1m")
        .timezone("browser")
    )
    for variable in _variables(with_slice):
        board = board.with_variable(variable)
    return board


def overview(settings: Settings) -> builders.Dashboard:
    slice_by = Q.by(Q.SLICE)
    board = _dashboard(
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
    panels: list[Any] = [
        _zone_panel(
            "Zone of every slice (worst pod)",
            _zone_code(M, slice_by),
            "{{model}} {{ctx_bucket}} {{task}}",
        ),
        _acceptance(
            "alpha-hat by context bucket and task (5m)",
            [(f"{Q.alpha('slice', '5m')}{{{M}}}", "{{ctx_bucket}} {{task}}")],
            settings,
            description="Per-token acceptance probability, comparable across K; summed across "
            "pods before dividing. Coloured by the zone thresholds.",
        ),
        _acceptance(
            "alpha-hat per model (1h) with its 95% interval",
            [
                (f"{Q.alpha('model', '1h')}{{{M}}}", "{{model}}"),
                (f"{Q.alpha_bound('model', 'lower', '1h')}{{{M}}}", "{{model}} lower"),
                (f"{Q.alpha_bound('model', 'upper', '1h')}{{{M}}}", "{{model}} upper"),
            ],
            settings,
        ),
        _series(
            "vLLM's acceptance rate (accepted / drafted, 5m)",
            [(f"{Q.vllm_rate('model', '5m')}{{{M}}}", "{{model}}")],
            "percentunit",
        ),
        _series(
            "Mean acceptance length tau (tokens per step, 5m)",
            [(f"{Q.tau('model', '5m')}{{{M}}}", "{{model}}")],
        ),
        bargauge.Panel()
        .title("Acceptance by draft position (30m)")
        .datasource(DATASOURCE)
        .with_target(
            _query(f"{Q.per_position('model', '30m')}{{{M}}}", "{{model}} position {{position}}")
        )
        .unit("percentunit")
        .min(0)
        .max(1)
        .height(8)
        .span(12),
        _series(
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
            _query(
                f"max by (model, method) ({C.ESTIMATED_GAIN_RATIO}"
                f'{{{M}, ctx_bucket="all", bound="estimate"}})',
                "{{model}} ({{method}})",
            )
        )
        .thresholds(_gain_thresholds())
        .unit("x")
        .height(8)
        .span(12),
        _latency("Time to first token", C.TTFT_SECONDS, "model", M),
        _latency("Time per output token", C.TPOT_SECONDS, "model", M),
        _latency("End-to-end latency", C.REQUEST_DURATION_SECONDS, "model", M),
        _series(
            "A/B: requests/s by variant, and rollback (1 = all to baseline)",
            [
                (f"sum by (variant) (rate({C.REQUESTS}_total{{{M}}}[5m]))", "{{variant}}"),
                (f"max({C.AB_ROLLED_BACK})", "rolled back"),
            ],
            width=12,
        ),
        _latency(
            "A/B: time per output token by variant (p50, p95)",
            C.TPOT_SECONDS,
            "variant",
            M,
            width=12,
            quantiles=(0.5, 0.95),
        ),
        _series(
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
        _series(
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
        _series(
            "Output tokens/s",
            [(f"sum by (model) (rate({C.COMPLETION_TOKENS}_total{{{M}}}[5m]))", "{{model}}")],
        ),
        _series(
            "Drift statistic per slice (alarms as annotations)",
            [(f"max by ({slice_by}) ({C.DRIFT_STATISTIC}{{{M}}})", "{{ctx_bucket}} {{task}}")],
        ),
        _series(
            "Traffic mix by context bucket (trials/s)",
            [
                (
                    f"sum by (ctx_bucket) ({Q.rate('slice', C.ACCEPTANCE_TRIALS, '5m')}{{{M}}})",
                    "{{ctx_bucket}}",
                )
            ],
        ),
        _series(
            "Traffic mix by task (trials/s)",
            [(f"sum by (task) ({Q.rate('slice', C.ACCEPTANCE_TRIALS, '5m')}{{{M}}})", "{{task}}")],
        ),
        _series(
            "Traffic mix shift (PSI) and the mix/rate parts of the acceptance change",
            [
                (f"max by (model, dimension) ({C.TRAFFIC_MIX_PSI}{{{M}}})", "PSI {{dimension}}"),
                (f"avg by (model, part) ({C.ACCEPTANCE_CHANGE}{{{M}}})", "change: {{part}}"),
            ],
        ),
        _series(
            "Coverage and sidecar health",
            [
                (f"min by (model) ({C.COVERAGE_RATIO}{{{M}}})", "coverage {{model}}"),
                (f"min({C.UPSTREAM_UP})", "vLLM up (all pods)"),
                (f'min(up{{job="{settings.alerts.job}"}})', "specwatch scraped (all pods)"),
                (f"sum(rate({C.PARSE_ERRORS}_total[5m]))", "parse errors/s"),
            ],
        ),
    ]
    for panel in panels:
        board = board.with_panel(panel)
    return board


def slice_dashboard(settings: Settings) -> builders.Dashboard:
    board = _dashboard(
        "specwatch-slice",
        "Speculative decoding — slice",
        "One slice (model x context bucket x task): acceptance with its confidence band, "
        "per-request acceptance length, per-position decay, latency and volume; " + Q.HEADER + ".",
        with_slice=True,
    )
    sel = SLICE_SELECTOR
    panels: list[Any] = [
        _acceptance(
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
            _query(
                f"sum by (le) (rate({C.REQUEST_ACCEPTANCE_LENGTH}_bucket{{{sel}}}[5m]))", "{{le}}"
            ).format(prom_models.PromQueryFormat.HEATMAP)
        )
        .height(8)
        .span(12),
        bargauge.Panel()
        .title("Per-position acceptance (30m)")
        .datasource(DATASOURCE)
        .with_target(_query(f"{Q.per_position('slice', '30m')}{{{sel}}}", "position {{position}}"))
        .unit("percentunit")
        .min(0)
        .max(1)
        .thresholds(_thresholds(settings))
        .height(8)
        .span(12),
        _latency("Time per output token", C.TPOT_SECONDS, "task", sel, width=12),
        _latency("Time to first token", C.TTFT_SECONDS, "task", sel, width=12),
        _series(
            "Volume: trials/s and requests/s by outcome",
            [
                (f"{Q.rate('slice', C.ACCEPTANCE_TRIALS, '5m')}{{{sel}}}", "trials/s"),
                (f"sum by (outcome) (rate({C.REQUESTS}_total{{{sel}}}[5m]))", "{{outcome}}"),
            ],
            width=12,
        ),
        _series(
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
    board = _dashboard(
        "specwatch-fleet",
        "Speculative decoding — fleet",
        "The same key series per pod (instance), to find the one bad replica; " + Q.HEADER + ".",
        with_slice=False,
    )
    per = "instance"
    accepted = f"sum by ({per}) (rate({C.ACCEPTED_TOKENS}_total{{{M}}}[5m]))"
    trials = f"sum by ({per}) (rate({C.ACCEPTANCE_TRIALS}_total{{{M}}}[5m]))"
    panels: list[Any] = [
        _zone_panel("Worst zone per pod", _zone_code(M, per), "{{instance}}"),
        _acceptance(
            "alpha-hat per pod (5m)", [(f"{accepted}\n/ {trials}", "{{instance}}")], settings
        ),
        _series(
            "Coverage per pod",
            [(f"min by ({per}) ({C.COVERAGE_RATIO}{{{M}}})", "{{instance}}")],
            "percentunit",
        ),
        _latency("Time per output token per pod", C.TPOT_SECONDS, per, M, width=12),
        _series(
            "Requests/s per pod",
            [(f"sum by ({per}) (rate({C.REQUESTS}_total{{{M}}}[5m]))", "{{instance}}")],
        ),
        _series(
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
