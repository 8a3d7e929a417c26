"""The custom resources specwatch generates and ships validate against their CRDs' schemas
(tests/fixtures/crds: prometheus-operator's and Argo Rollouts')."""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
import pytest
import yaml
from specwatch.gen.writer import ANALYSIS_TEMPLATE, PROMETHEUS_RULE

from tests.support import ROOT
from tests.support.kube import kustomize
from tests.support.promtool import generated, read_yaml

CRDS = ROOT / "tests" / "fixtures" / "crds"


@functools.cache
def crd_of(crd_file: str) -> dict[str, Any]:
    """The CRD (read once: they are large), not to be changed."""
    crd: dict[str, Any] = read_yaml((CRDS / crd_file).read_text())
    return crd


@functools.cache
def schema_of(crd_file: str) -> dict[str, Any]:
    """The stored version's schema, not to be changed."""
    (version,) = [v for v in crd_of(crd_file)["spec"]["versions"] if v.get("storage")]
    schema: dict[str, Any] = python_patterns(version["schema"]["openAPIV3Schema"])
    return schema


@functools.cache
def validator_of(crd_file: str) -> Any:
    """A validator of the CRD's schema, the schema checked once (jsonschema.validate checks
    it at every call: a second each for prometheus-operator's)."""
    schema = schema_of(crd_file)
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    return validator(schema)


def python_patterns(node: Any) -> Any:
    """Go's regexps allow a flag group after `^` ('^(?i)abort'); Python's want it first."""
    if isinstance(node, dict):
        out = {key: python_patterns(value) for key, value in node.items()}
        pattern = out.get("pattern")
        if isinstance(pattern, str) and pattern.startswith("^(?i)"):
            out["pattern"] = "(?i)^" + pattern.removeprefix("^(?i)")
        return out
    if isinstance(node, list):
        return [python_patterns(value) for value in node]
    return node


@pytest.mark.parametrize(
    ("path", "crd"),
    [
        (ANALYSIS_TEMPLATE, "argoproj.io_analysis-template-crd.yaml"),
        (PROMETHEUS_RULE, "monitoring.coreos.com_prometheusrules.yaml"),
    ],
)
def test_generated_custom_resources_validate_against_their_crd(path: str, crd: str) -> None:
    """Valid against the schema, and of the CRD's kind and served version: the schema says
    nothing of either (a misspelt kind is no object the operator watches)."""
    document = yaml.safe_load(generated()[path])
    validator_of(crd).validate(document)
    spec = crd_of(crd)["spec"]
    served = {f"{spec['group']}/{v['name']}" for v in spec["versions"] if v.get("served")}
    assert spec["names"]["kind"] == document["kind"]
    assert document["apiVersion"] in served
    assert document["metadata"]["name"].startswith("specwatch")


def test_the_analysis_template_is_named_as_the_docs_rollout_references_it() -> None:
    document = yaml.safe_load(generated()[ANALYSIS_TEMPLATE])
    rollout = (ROOT / "docs" / "rollouts.md").read_text()
    assert f"templateName: {document['metadata']['name']}\n" in rollout


def test_the_shipped_podmonitor_validates_against_its_crd() -> None:
    monitor = yaml.safe_load((ROOT / "deploy/kubernetes/base/podmonitor.yaml").read_text())
    validator_of("monitoring.coreos.com_podmonitors.yaml").validate(monitor)


def test_a_wrong_field_is_refused_so_the_validation_can_fail() -> None:
    document = yaml.safe_load(generated()[ANALYSIS_TEMPLATE])
    document["spec"]["metrics"][0]["provider"]["prometheus"]["query"] = ["not", "a string"]
    with pytest.raises(jsonschema.ValidationError):
        validator_of("argoproj.io_analysis-template-crd.yaml").validate(document)


def test_on_a_default_kube_prometheus_stack_every_part_is_where_the_stack_looks() -> None:
    """The chart's Prometheus selects by `release`, Grafana's sidecar reads its own namespace,
    Alertmanager its own: the overlay puts each object there, and the custom resources still
    validate against their CRDs."""
    objects = kustomize("kube-prometheus-stack")
    in_monitoring = {"specwatch-dashboards", "specwatch-alertmanager-config"}
    for obj in objects:
        name = obj["metadata"]["name"]
        if obj["kind"] == "Namespace":
            assert "inference" == name
            continue
        expected = "monitoring" if name in in_monitoring else "inference"
        assert expected == obj["metadata"].get("namespace"), name
    crds = {
        "PodMonitor": "monitoring.coreos.com_podmonitors.yaml",
        "PrometheusRule": "monitoring.coreos.com_prometheusrules.yaml",
    }
    for kind, crd in crds.items():
        (obj,) = [o for o in objects if o["kind"] == kind]
        assert "kube-prometheus-stack" == obj["metadata"]["labels"]["release"]
        validator_of(crd).validate(obj)
    (dashboards,) = [o for o in objects if o["metadata"]["name"] == "specwatch-dashboards"]
    assert "1" == dashboards["metadata"]["labels"]["grafana_dashboard"]
    (monitor,) = [o for o in objects if o["kind"] == "PodMonitor"]
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod["metadata"]["labels"].items()
    ports = {p["name"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
    assert {e["port"] for e in monitor["spec"]["podMetricsEndpoints"]} <= ports
