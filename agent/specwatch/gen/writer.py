"""Render every generated artifact in memory, deterministically; write them, or check them.

Sorted keys, no timestamps, fixed names: the same settings give the same bytes, so the files
are committed and `specwatch generate --check` catches a stale one.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from specwatch.gen import promql as Q
from specwatch.gen.alert_rules import Alert, alert_groups, alerts
from specwatch.gen.alertmanager import TEMPLATE_FILE, TEMPLATES, alertmanager_config
from specwatch.gen.causes import CAUSES
from specwatch.gen.dashboards import render_dashboards
from specwatch.gen.rollout import analysis_template
from specwatch.gen.rules import recording_groups
from specwatch.settings import Settings

HEADER = Q.HEADER

RECORDING_RULES = "alerts/specwatch-recording.rules.yml"
ALERTING_RULES = "alerts/specwatch-alerts.rules.yml"
ALERTMANAGER = "alerts/alertmanager.example.yml"
TEMPLATE = f"alerts/{TEMPLATE_FILE}"
RUNBOOKS = "alerts/runbooks.md"
KUBE = "deploy/kubernetes/base/generated"
PROMETHEUS_RULE = f"{KUBE}/prometheusrule.yaml"
DASHBOARDS_CONFIGMAP = f"{KUBE}/dashboards-configmap.yaml"
ALERTMANAGER_SECRET = f"{KUBE}/alertmanager-config-secret.yaml"
# Argo Rollouts' analysis of a canary (a component: the base needs no Argo CRDs)
ANALYSIS_TEMPLATE = "deploy/kubernetes/components/argo-rollouts/analysistemplate.yaml"
# prometheus-operator mounts an Alertmanager's configSecret keys here
OPERATOR_TEMPLATES = "/etc/alertmanager/config/*.tmpl"
LABELS = {"app.kubernetes.io/name": "specwatch", "app.kubernetes.io/part-of": "specwatch"}


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings, so PromQL stays readable in the files."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style=style)


_Dumper.add_representer(str, _str)
_Dumper.add_multi_representer(StrEnum, _str)  # the names of conventions.py are plain text


def yaml_document(data: Any) -> bytes:
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=True, allow_unicode=True, width=1000, indent=2)
    return f"# {HEADER}\n{body}".encode()


def _severity(alert: Alert) -> str:
    if not alert.variants:
        return f"Severity: **{alert.severity}**."
    each = [f"**{alert.severity}** when {alert.when}"]
    each += [f"**{v.severity}** when {v.when}" for v in alert.variants]
    return "Severity: " + "; ".join(each) + "."


def runbooks(all_alerts: list[Alert], recording: list[dict[str, Any]]) -> bytes:
    lines = [
        f"<!-- {HEADER} -->",
        "# specwatch runbooks",
        "",
        "One section per alert: what it means, the queries that confirm it, what to do.",
        "The recording rules the queries use are in `specwatch-recording.rules.yml`"
        f" ({sum(len(g['rules']) for g in recording)} rules; names follow"
        " `level:metric:operations`, levels `slice` = model x ctx_bucket x task and `model`).",
        "",
    ]
    for alert in all_alerts:
        lines += [
            f'<a id="{alert.anchor}"></a>',
            f"## {alert.name}",
            "",
            _severity(alert),
            "",
            f"**What it means.** {alert.meaning}",
            "",
            "**Confirm it.**",
            "",
            *(f"- {item}" for item in alert.confirm),
            "",
            "**What to do.**",
            "",
            *(f"- {item}" for item in alert.actions),
            "",
            "**The rule.**" if not alert.variants else "**The rules.**",
            "",
            *(
                line
                for severity, expr, _ in alert.rules()
                for line in (
                    *((f"{severity}:", "") if alert.variants else ()),
                    "```promql",
                    expr,
                    "```",
                    "",
                )
            ),
        ]
    lines += [
        "# Causes",
        "",
        "The zone alerts carry the slice's cause as the label and annotation `cause` (`none`: "
        "none found); `/status` lists every cause of a slice with its figures "
        "(docs/causes.md has each rule).",
        "",
    ]
    for cause in CAUSES:
        lines += [
            f'<a id="{cause.anchor}"></a>',
            f"## {cause.kind}",
            "",
            f"**What it means.** {cause.meaning}",
            "",
            "**Fix.**",
            "",
            *(f"- {fix}" for fix in cause.fixes),
            "",
        ]
    return "\n".join(lines).encode()


def render(settings: Settings, time_scale: float = 1.0) -> dict[str, bytes]:
    """Every generated file, path (relative to the repository root) -> bytes."""
    windows = Q.Windows(time_scale)
    recording = recording_groups(settings, windows)
    alerting = alert_groups(settings, windows)
    prometheus_rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "specwatch", "labels": {**LABELS, "role": "alert-rules"}},
        "spec": {"groups": recording + alerting},
    }
    dashboards = render_dashboards(settings)
    dashboards_configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "specwatch-dashboards",
            # the label Grafana's dashboard sidecar (kube-prometheus-stack) watches for
            "labels": {**LABELS, "grafana_dashboard": "1"},
        },
        "data": {name.rsplit("/", 1)[1]: data.decode() for name, data in dashboards.items()},
    }
    operator_config = alertmanager_config(settings, windows, OPERATOR_TEMPLATES)
    alertmanager_secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "specwatch-alertmanager-config", "labels": LABELS},
        "type": "Opaque",
        # no secret values here: the webhook and routing key are read from the files of the
        # `specwatch-alerting` Secret that the Alertmanager resource mounts
        "stringData": {
            "alertmanager.yaml": yaml_document(operator_config).decode(),
            TEMPLATE_FILE: TEMPLATES,
        },
    }
    return {
        RECORDING_RULES: yaml_document({"groups": recording}),
        ALERTING_RULES: yaml_document({"groups": alerting}),
        PROMETHEUS_RULE: yaml_document(prometheus_rule),
        ALERTMANAGER: yaml_document(alertmanager_config(settings, windows)),
        TEMPLATE: TEMPLATES.encode(),
        RUNBOOKS: runbooks(alerts(settings, windows), recording),
        **dashboards,
        DASHBOARDS_CONFIGMAP: yaml_document(dashboards_configmap),
        ALERTMANAGER_SECRET: yaml_document(alertmanager_secret),
        ANALYSIS_TEMPLATE: yaml_document(
            analysis_template(settings, settings.canary.prometheus_address)
        ),
    }


def write(files: dict[str, bytes], out: Path) -> list[Path]:
    written = []
    for name, data in sorted(files.items()):
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
            written.append(path)
    return written


def stale(files: dict[str, bytes], out: Path) -> list[str]:
    """The files under `out` that differ from what would be generated (or are missing)."""
    return [
        name
        for name, data in sorted(files.items())
        if not (out / name).exists() or (out / name).read_bytes() != data
    ]
