"""`specwatch snapshot`: the overview's key panels as one PNG, from the same Prometheus queries.

For where Grafana is not at hand: an incident channel, a report, a README. Queries the
recording rules over the last `minutes` and draws: the zone of every slice, alpha-hat by slice
with the zone thresholds, vLLM's rate and tau per model, and time per output token.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.settings import Settings

ZONE_COLOURS = ["#b0b0b0", "#2e9d43", "#e0b000", "#d03030"]  # insufficient, green, yellow, red


class SnapshotError(Exception):
    pass


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    times: list[float]
    values: list[float]


def query_range(prometheus: str, expr: str, start: float, end: float, step: float) -> list[Series]:
    params = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    url = f"{prometheus.rstrip('/')}/api/v1/query_range?{params}"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            document: Any = json.load(response)
    except (OSError, ValueError) as error:  # the query is long: name the server, not the URL
        raise SnapshotError(f"cannot query Prometheus at {prometheus!r}: {error}") from None
    if document.get("status") != "success":
        raise SnapshotError(f"{expr}: {document.get('error')}")
    return [
        Series(
            labels=item["metric"],
            times=[float(t) for t, _ in item["values"]],
            values=[float(v) for _, v in item["values"]],
        )
        for item in document["data"]["result"]
    ]


def zone_code_expr(model: str) -> str:
    selector = f'model=~"{model}"'
    return (
        f'max by (model, ctx_bucket, task) (3 * {C.ZONE}{{zone="red", {selector}}}'
        f' + ignoring(zone) 2 * {C.ZONE}{{zone="yellow", {selector}}}'
        f' + ignoring(zone) {C.ZONE}{{zone="green", {selector}}})'
    )


def render_snapshot(
    prometheus: str, out: Path, settings: Settings, model: str = ".*", minutes: float = 60
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    end = time.time()
    start = end - minutes * 60
    step = max(1.0, minutes * 60 / 300)
    selector = f'{{model=~"{model}"}}'

    def query(expr: str) -> list[Series]:
        return query_range(prometheus, expr, start, end, step)

    zones = query(zone_code_expr(model))
    alpha = query(Q.alpha("slice", "5m") + selector)
    if not (zones or alpha):
        raise SnapshotError("no specwatch data in Prometheus for that model and time range")
    tpot_buckets = f"rate({C.TPOT_SECONDS}_bucket{selector}[5m])"
    tpot = {q: query(f"histogram_quantile({q}, sum by (le) ({tpot_buckets}))") for q in (0.5, 0.95)}
    figure, axes = plt.subplots(2, 2, figsize=(14, 9), constrained_layout=True)
    figure.suptitle(f"Speculative decoding — overview (last {minutes:g} min)", fontsize=14)
    _zones_panel(axes[0][0], zones)
    _alpha_panel(axes[0][1], alpha, settings, end)
    rate = query(Q.vllm_rate("model", "5m") + selector)
    tau = query(Q.tau("model", "5m") + selector)
    _rate_panel(axes[1][0], rate, tau, end)
    _tpot_panel(axes[1][1], tpot, end)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=100)
    plt.close(figure)
    return out


def _zones_panel(ax: Any, zones: list[Series]) -> None:
    from matplotlib.colors import ListedColormap

    ax.set_title("Zone of every slice (worst pod)")
    rows = sorted(zones, key=lambda s: (s.labels.get("ctx_bucket", ""), s.labels.get("task", "")))
    grid = []
    for series in rows:
        points = dict(zip(series.times, series.values, strict=True))
        grid.append([points.get(t, float("nan")) for t in (rows[0].times if rows else [])])
    if grid:
        ax.imshow(
            grid,
            aspect="auto",
            cmap=ListedColormap(ZONE_COLOURS),
            vmin=-0.5,
            vmax=3.5,
            interpolation="nearest",
        )
        ax.set_yticks(
            range(len(rows)),
            [f"{s.labels.get('ctx_bucket')} {s.labels.get('task')}" for s in rows],
            fontsize=7,
        )
    ax.set_xticks([])
    ax.set_xlabel("time →   grey insufficient · green · yellow · red")


def _alpha_panel(ax: Any, alpha: list[Series], settings: Settings, end: float) -> None:
    ax.set_title("alpha-hat by slice (5m)")
    zones_cfg = settings.zones
    ax.axhspan(0, zones_cfg.red, color=ZONE_COLOURS[3], alpha=0.08)
    ax.axhspan(zones_cfg.red, zones_cfg.green, color=ZONE_COLOURS[2], alpha=0.08)
    ax.axhspan(zones_cfg.green, 1, color=ZONE_COLOURS[1], alpha=0.08)
    for series in alpha:
        label = _named(
            series.labels, f"{series.labels.get('ctx_bucket')} {series.labels.get('task')}"
        )
        ax.plot(_minutes(series.times, end), series.values, linewidth=1, label=label)
    ax.set_ylim(0, 1)
    ax.set_xlabel("minutes")
    if len(alpha) <= 12:
        ax.legend(fontsize=7, ncol=2)


def _rate_panel(ax: Any, rate: list[Series], tau: list[Series], end: float) -> None:
    ax.set_title("vLLM's rate and mean acceptance length per model (5m)")
    for series in rate:
        label = _named(series.labels, f"rate {series.labels['model']}")
        ax.plot(_minutes(series.times, end), series.values, label=label)
    ax.set_ylim(0, 1)
    twin = ax.twinx()
    for series in tau:
        twin.plot(
            _minutes(series.times, end),
            series.values,
            linestyle="--",
            label=_named(series.labels, f"tau {series.labels['model']}"),
        )
    ax.set_xlabel("minutes")
    ax.legend(loc="upper left", fontsize=8)
    twin.legend(loc="upper right", fontsize=8)


def _tpot_panel(ax: Any, tpot: dict[float, list[Series]], end: float) -> None:
    ax.set_title("Time per output token")
    for q, found in tpot.items():
        for series in found:
            ax.plot(
                _minutes(series.times, end),
                [v * 1000 for v in series.values],
                label=f"p{round(q * 100)}",
            )
    ax.set_ylabel("ms")
    ax.set_xlabel("minutes")
    ax.legend(fontsize=8)


def _named(labels: dict[str, str], name: str) -> str:
    """A legend entry, with the series' track and config where it has them: a stable and a
    canary scraped together are two lines, two names."""
    run = " ".join(labels[key] for key in ("track", "config") if labels.get(key))
    return f"{name} ({run})" if run else name


def _minutes(times: list[float], end: float) -> list[float]:
    return [(t - end) / 60 for t in times]


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        path = render_snapshot(args.prometheus, args.out, settings, args.model, args.minutes)
    except SnapshotError as error:
        print(f"specwatch: snapshot: {error}", file=sys.stderr)
        return 1
    print(f"specwatch: snapshot: wrote {path}", file=sys.stderr)
    return 0
