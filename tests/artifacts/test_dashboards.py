"""The generated dashboards: current JSON that round-trips through Grafana's SDK, zone colours."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from grafana_foundation_sdk.models.dashboard import Dashboard
from specwatch import conventions as C
from specwatch.gen.dashboards import DASHBOARDS, encode, panel_queries, render_dashboards
from specwatch.settings import load_settings

from tests.support.tools import binary

VARIABLE = re.compile(r"\$(model|ctx_bucket|task)\b")  # the dashboards' variables
CURRENT_PANEL_TYPES = {
    "timeseries",
    "stat",
    "gauge",
    "bargauge",
    "heatmap",
    "state-timeline",
    "table",
}


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_each_dashboard_round_trips_through_the_sdk(name: str) -> None:
    data = render_dashboards(load_settings())[name]
    assert data == encode(Dashboard.from_json(json.loads(data)))


def test_stable_uids_a_datasource_variable_and_current_panel_types_only() -> None:
    documents = {
        name: json.loads(data) for name, data in render_dashboards(load_settings()).items()
    }
    assert {"specwatch-overview", "specwatch-slice", "specwatch-fleet"} == {
        d["uid"] for d in documents.values()
    }
    for name, document in documents.items():
        variables = {v["name"]: v for v in document["templating"]["list"]}
        assert "datasource" == variables["datasource"]["type"], name
        assert {p["type"] for p in document["panels"]} <= CURRENT_PANEL_TYPES, name
        assert all(p["datasource"]["uid"] == "${datasource}" for p in document["panels"]), name
    slice_variables = {
        v["name"] for v in documents["dashboards/specwatch-slice.json"]["templating"]["list"]
    }
    assert {"model", "ctx_bucket", "task"} <= slice_variables


def test_acceptance_panels_are_coloured_by_the_zone_thresholds_of_the_settings() -> None:
    settings = load_settings(zones={"green": 0.8, "red": 0.4})
    coloured = 0
    for data in render_dashboards(settings).values():
        for panel in json.loads(data)["panels"]:
            if "alpha-hat" not in panel["title"]:
                continue
            steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
            assert [(None, "red"), (0.4, "yellow"), (0.8, "green")] == [
                (s.get("value"), s["color"]) for s in steps
            ], panel["title"]
            coloured += 1
    assert coloured >= 4


def test_the_overview_has_drift_alarms_as_annotations_and_every_panel_a_query() -> None:
    overview = json.loads(render_dashboards(load_settings())["dashboards/specwatch-overview.json"])
    queries = panel_queries(overview)
    titles = {title for title, _ in queries}
    assert "annotation: drift alarms" in titles
    assert {p["title"] for p in overview["panels"]} <= titles


def test_every_query_is_promql_that_promtool_reads(tmp_path: Path) -> None:
    """Each panel's and annotation's query, its dashboard variables set to a value, checked by
    promtool as the expression of a recording rule: a query Prometheus cannot parse is an
    empty panel."""
    rules = [
        {"record": f"dashboard:query:{i}", "expr": VARIABLE.sub("x", expr)}
        for i, (_, expr) in enumerate(
            query
            for data in render_dashboards(load_settings()).values()
            for query in panel_queries(json.loads(data))
        )
    ]
    assert len(rules) > 50
    path = tmp_path / "queries.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    done = subprocess.run(
        [binary("promtool"), "check", "rules", str(path)], capture_output=True, text=True
    )
    assert 0 == done.returncode, done.stdout[-3000:] + done.stderr[-3000:]


def test_every_legend_names_labels_specwatchs_series_carry() -> None:
    """A legend's `{{label}}` is filled from the series' labels, case and all: one no series
    carries shows as written."""
    known = {str(label) for label in C.Label} | {"instance", "le"}  # Prometheus' own
    named = [
        (panel["title"], label)
        for data in render_dashboards(load_settings()).values()
        for panel in json.loads(data)["panels"]
        for target in panel.get("targets", [])
        for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", ""))
    ]
    assert len(named) > 100
    assert [] == [(title, label) for title, label in named if label not in known]


def test_speedup_panels_are_red_below_one_and_green_from_it() -> None:
    """A gain below 1 is speculation slower than none: red; from 1 on it pays: green."""
    overview = json.loads(render_dashboards(load_settings())["dashboards/specwatch-overview.json"])
    speedups = [p for p in overview["panels"] if p["title"].startswith("Speedup")]
    assert len(speedups) == 2
    for panel in speedups:
        steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
        assert [(None, "red"), (1.0, "green")] == [(s.get("value"), s["color"]) for s in steps]
