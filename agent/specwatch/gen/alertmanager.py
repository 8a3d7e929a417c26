"""Alertmanager: routes by severity to PagerDuty and Slack, and the message templates.

critical -> PagerDuty (Events v2) and Slack; warning -> Slack; info -> a low-priority Slack
channel, or nowhere. Grouped by slice; a slice's warnings are inhibited while it has a critical.
Secrets are referenced by file path only.
"""

from __future__ import annotations

from typing import Any

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.settings import Settings

TEMPLATE_FILE = "specwatch.tmpl"
GROUP_BY = ["alertname", *Q.SLICE]

# Go templates (Alertmanager's notification templates).
TEMPLATES = (
    "{{/* "
    + Q.HEADER
    + """. specwatch's Slack and PagerDuty messages. */}}

{{ define "specwatch.slice" -}}
{{ with .CommonLabels.model }}model={{ . }}{{ end -}}
{{ with .CommonLabels.ctx_bucket }} ctx_bucket={{ . }}{{ end -}}
{{ with .CommonLabels.task }} task={{ . }}{{ end -}}
{{ with .CommonLabels.instance }} instance={{ . }}{{ end -}}
{{ end }}

{{ define "specwatch.zone" -}}
{{ if eq .CommonLabels.alertname "%s" }}red
{{- else if eq .CommonLabels.alertname "%s" }}yellow
{{- else }}{{ .CommonLabels.severity }}{{ end -}}
{{ end }}

{{ define "specwatch.slack.title" -}}
[{{ .Status | toUpper }}{{ if eq .Status "firing" }}:{{ .Alerts.Firing | len }}{{ end }}] \
{{ .CommonLabels.alertname }} ({{ template "specwatch.zone" . }}) {{ template "specwatch.slice" . }}
{{- end }}

{{ define "specwatch.slack.text" -}}
{{ range .Alerts -}}
*{{ .Annotations.summary }}*
{{ .Annotations.description }}
zone: {{ template "specwatch.zone" $ }} · \
slice: {{ .Labels.model }} / {{ .Labels.ctx_bucket }} / {{ .Labels.task }}
{{ if .Annotations.runbook_url }}runbook: {{ .Annotations.runbook_url }}
{{ else }}what to do:
{{ .Annotations.runbook }}
{{ end -}}
{{ end -}}
{{ end }}

{{ define "specwatch.pagerduty.description" -}}
{{ .CommonLabels.alertname }}: {{ .CommonAnnotations.summary }}
{{- end }}
"""
) % (C.AlertName.SLICE_RED, C.AlertName.SLICE_YELLOW)


def _slack(settings: Settings, channel: str) -> dict[str, Any]:
    return {
        "api_url_file": settings.alerts.slack_api_url_file,
        "channel": channel,
        "send_resolved": True,
        "title": '{{ template "specwatch.slack.title" . }}',
        "text": '{{ template "specwatch.slack.text" . }}',
    }


def alertmanager_config(
    settings: Settings, windows: Q.Windows, templates: str = TEMPLATE_FILE
) -> dict[str, Any]:
    """The config; `windows` scales its timings along with the rules (live tests, demos);
    `templates` is where Alertmanager finds specwatch.tmpl (relative to the config file)."""
    cfg = settings.alerts
    # a link only where the runbooks are published (alerts.runbook_base_url): PagerDuty
    # refuses an event whose link has no address
    runbook_url: dict[str, str] = {}
    links: dict[str, list[dict[str, str]]] = {}
    if cfg.runbook_base_url:
        runbook_url = {"runbook_url": "{{ .CommonAnnotations.runbook_url }}"}
        links = {"links": [{"href": "{{ .CommonAnnotations.runbook_url }}", "text": "runbook"}]}
    receivers: list[dict[str, Any]] = [
        {
            "name": "specwatch-critical",
            "pagerduty_configs": [
                {
                    "routing_key_file": cfg.pagerduty_routing_key_file,
                    "url": cfg.pagerduty_url,
                    "send_resolved": True,
                    "severity": "critical",
                    "description": '{{ template "specwatch.pagerduty.description" . }}',
                    "details": {
                        "slice": '{{ template "specwatch.slice" . }}',
                        "zone": '{{ template "specwatch.zone" . }}',
                        "description": "{{ .CommonAnnotations.description }}",
                        "runbook": "{{ .CommonAnnotations.runbook }}",
                        **runbook_url,
                    },
                    **links,
                }
            ],
            "slack_configs": [_slack(settings, cfg.slack_channel_critical)],
        },
        {
            "name": "specwatch-warning",
            "slack_configs": [_slack(settings, cfg.slack_channel_warning)],
        },
    ]
    if cfg.slack_channel_info is not None:
        receivers.append(
            {"name": "specwatch-info", "slack_configs": [_slack(settings, cfg.slack_channel_info)]}
        )
    else:
        receivers.append({"name": "specwatch-info"})  # no configs: info goes nowhere
    return {
        "route": {
            "receiver": "specwatch-warning",
            "group_by": GROUP_BY,
            "group_wait": windows(30),
            "group_interval": windows(300),
            "repeat_interval": windows(4 * 3600),
            "routes": [
                {"matchers": ['severity="critical"'], "receiver": "specwatch-critical"},
                {"matchers": ['severity="warning"'], "receiver": "specwatch-warning"},
                {"matchers": ['severity="info"'], "receiver": "specwatch-info"},
            ],
        },
        "inhibit_rules": [
            {
                "source_matchers": ['severity="critical"'],
                "target_matchers": ['severity="warning"'],
                "equal": list(Q.SLICE),
            }
        ],
        "receivers": receivers,
        "templates": [templates],
    }
