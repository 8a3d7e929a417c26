"""The Kubernetes objects the generator writes (gen/writer.py), as the cluster reads them: valid
core objects, holding exactly the generated files, labelled where the stack looks."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
from specwatch.gen.writer import (
    ALERTING_RULES,
    ALERTMANAGER_SECRET,
    DASHBOARDS_CONFIGMAP,
    PROMETHEUS_RULE,
    RECORDING_RULES,
    TEMPLATE,
)

from tests.support.kube import KUBERNETES
from tests.support.promtool import generated, read_yaml

NAMED = {"app.kubernetes.io/name": "specwatch", "app.kubernetes.io/part-of": "specwatch"}


def objects() -> dict[str, dict[str, Any]]:
    files = generated()
    names = (PROMETHEUS_RULE, DASHBOARDS_CONFIGMAP, ALERTMANAGER_SECRET)
    return {name: read_yaml(files[name]) for name in names}


def test_the_core_objects_are_valid_and_every_object_is_labelled_specwatch() -> None:
    found = objects()
    for name in (DASHBOARDS_CONFIGMAP, ALERTMANAGER_SECRET):
        kubernetes_validate.validate(found[name], KUBERNETES, strict=True)
    assert {
        PROMETHEUS_RULE: ("PrometheusRule", "specwatch", {**NAMED, "role": "alert-rules"}),
        DASHBOARDS_CONFIGMAP: (
            "ConfigMap",
            "specwatch-dashboards",
            {**NAMED, "grafana_dashboard": "1"},  # what Grafana's dashboard sidecar watches
        ),
        ALERTMANAGER_SECRET: ("Secret", "specwatch-alertmanager-config", NAMED),
    } == {
        name: (o["kind"], o["metadata"]["name"], o["metadata"]["labels"])
        for name, o in found.items()
    }


def test_each_object_carries_exactly_the_generated_files() -> None:
    files, found = generated(), objects()
    assert (
        read_yaml(files[RECORDING_RULES])["groups"] + read_yaml(files[ALERTING_RULES])["groups"]
        == found[PROMETHEUS_RULE]["spec"]["groups"]
    )
    dashboards = {name.rsplit("/", 1)[1]: json.loads(data) for name, data in files.items()
                  if name.startswith("dashboards/")}  # fmt: skip
    assert len(dashboards) == 3
    data = found[DASHBOARDS_CONFIGMAP]["data"]
    assert dashboards == {key: json.loads(value) for key, value in data.items()}
    secret = found[ALERTMANAGER_SECRET]
    assert "Opaque" == secret["type"]
    config, template = (
        secret["stringData"][key] for key in ("alertmanager.yaml", "specwatch.tmpl")
    )
    assert files[TEMPLATE].decode() == template
    # prometheus-operator mounts the Secret's keys beside the config: templates found there
    assert ["/etc/alertmanager/config/*.tmpl"] == read_yaml(config)["templates"]
    assert set(secret["stringData"]) == {"alertmanager.yaml", "specwatch.tmpl"}
