"""The panel builders every dashboard shares (grafana-foundation-sdk): queries, series, the
acceptance and latency panels coloured by the zone thresholds, the zone timeline, variables."""

from __future__ import annotations

from typing import Any

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as builders
from grafana_foundation_sdk.builders import prometheus as prom
from grafana_foundation_sdk.builders import statetimeline, timeseries
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as models
from specwatch import conventions as C
from specwatch.settings import Settings

DATASOURCE = models.DataSourceRef(type_val="prometheus", uid="${datasource}")
TAGS = ["specwatch", "speculative-decoding", "vllm"]
M = 'model=~"$model"'
SLICE_SELECTOR = 'model=~"$model", ctx_bucket=~"$ctx_bucket", task=~"$task"'
ZONE_CODES = {
    "0": ("insufficient", "gray"),
    "1": ("green", "green"),
    "2": ("yellow", "yellow"),
    "3": ("red", "red"),
}


def thresholds(settings: Settings) -> builders.ThresholdsConfig:
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


def gain_thresholds() -> builders.ThresholdsConfig:
    return (
        builders.ThresholdsConfig()
        .mode(models.ThresholdsMode.ABSOLUTE)
        .steps(
            [models.Threshold(value=None, color="red"), models.Threshold(value=1.0, color="green")]
        )
    )


def query(expr: str, legend: str, ref: str = "A") -> prom.Dataquery:
    return prom.Dataquery().expr(expr).legend_format(legend).ref_id(ref)


def series(
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
        panel = panel.with_target(query(expr, legend, chr(ord("A") + i)))
    return panel


def acceptance(
    title: str,
    queries: list[tuple[str, str]],
    settings: Settings,
    width: int = 12,
    description: str = "",
) -> timeseries.Panel:
    """Acceptance coloured by zone: red below the red threshold, green above the green one."""
    return (
        series(title, queries, "percentunit", width, description)
        .min(0)
        .max(1)
        .thresholds(thresholds(settings))
        .thresholds_style(
            common_builders.GraphThresholdsStyleConfig().mode(
                common.GraphThresholdsStyleMode.LINE_AND_AREA
            )
        )
    )


def latency(
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
    return series(title, queries, "s", width)


def zone_code(selector: str, by: str) -> str:
    """Worst zone across pods as a code: 0 insufficient, 1 green, 2 yellow, 3 red."""
    zone = C.ZONE
    return (
        f"max by ({by}) (\n"
        f'  3 * {zone}{{zone="red", {selector}}}\n'
        f'  + ignoring(zone) 2 * {zone}{{zone="yellow", {selector}}}\n'
        f'  + ignoring(zone) {zone}{{zone="green", {selector}}}\n)'
    )


def zone_panel(title: str, expr: str, legend: str, width: int = 24) -> statetimeline.Panel:
    options = {k: models.ValueMappingResult(text=t, color=c) for k, (t, c) in ZONE_CODES.items()}
    mapping = models.ValueMap(options=options)
    return (
        statetimeline.Panel()
        .title(title)
        .datasource(DATASOURCE)
        .with_target(query(expr, legend))
        .mappings([mapping])
        .height(10)
        .span(width)
    )


def variables(with_slice: bool) -> list[Any]:
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


def dashboard(uid: str, title: str, description: str, with_slice: bool) -> builders.Dashboard:
    board = (
        builders.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(TAGS)
        .time("now-6h", "now")
        .refresh("1m")
        .timezone("browser")
    )
    for variable in variables(with_slice):
        board = board.with_variable(variable)
    return board.annotation(config_changes())


def config_changes() -> builders.AnnotationQuery:
    """On every dashboard: a config that starts running on a track (a new draft, K, schedule
    or vLLM version; a canary starting), from the config info metric."""
    info = C.SPEC_CONFIG_INFO
    new = f"count by (config, track) ({info})"
    return (
        builders.AnnotationQuery()
        .name("config changes")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color("purple")
        .expr(f"{new} unless {new.replace(info, info + ' offset 5m')}")
        .title_format("config {{config}} on {{track}}")
        .step("1m")
    )
