"""The Kubernetes manifests: they render, validate, wire the sidecar right and leak nothing."""

from __future__ import annotations

import json
import re
from typing import Any

import kubernetes_validate
import pytest
import yaml
from specwatch.gen.writer import ALERTING_RULES, RECORDING_RULES, render
from specwatch.settings import load_settings

from tests.support import ROOT
from tests.support.kube import KUBERNETES, kustomize

OVERLAYS = ("ngram", "draft-model", "eagle", "wrap")
CRDS = {"PodMonitor", "PrometheusRule"}


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_renders_and_every_core_object_validates(overlay: str) -> None:
    objects = kustomize(overlay)
    assert {"Deployment", "Service", "ConfigMap", "Secret", "PodMonitor", "PrometheusRule"} == {
        o["kind"] for o in objects
    }
    for obj in objects:
        if obj["kind"] not in CRDS:
            kubernetes_validate.validate(obj, KUBERNETES, strict=True)


@pytest.mark.parametrize("overlay", ["ngram", "draft-model", "eagle"])
def test_the_sidecar_is_wired_in_front_of_vllm(overlay: str) -> None:
    objects = kustomize(overlay)
    pod = by_kind(objects, "Deployment")["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    vllm, sidecar = containers["vllm"], containers["specwatch"]
    assert "--host=127.0.0.1" in vllm["args"]  # vLLM on localhost only
    assert "--per-request-spec-decode-metrics=detailed" in vllm["args"]
    # one ConfigMap key feeds the speculative config to both containers
    refs = [
        next(
            e["valueFrom"]["configMapKeyRef"] for e in c["env"] if e["name"] == "SPECULATIVE_CONFIG"
        )
        for c in (vllm, sidecar)
    ]
    assert refs[0] == refs[1]
    speculation = next(o for o in objects if o["metadata"]["name"] == refs[0]["name"])
    config = json.loads(speculation["data"][refs[0]["key"]])
    assert config["num_speculative_tokens"] >= 1
    assert "--speculative-config=$(SPECULATIVE_CONFIG)" in vllm["args"]
    assert "--speculative-config=$(SPECULATIVE_CONFIG)" in sidecar["args"]
    # the track comes from the pod's label through the downward API
    track = next(e for e in sidecar["env"] if e["name"] == "TRACK")["valueFrom"]["fieldRef"]
    labels = by_kind(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert "metadata.labels['specwatch.io/track']" == track["fieldPath"]
    assert "stable" == labels["specwatch.io/track"]
    assert "--track=$(TRACK)" in sidecar["args"]
    assert "nvidia.com/gpu" in vllm["resources"]["limits"]
    assert "--upstream=http://127.0.0.1:8001" in sidecar["args"]
    ports = {p["name"]: p["containerPort"] for p in sidecar["ports"]}
    assert {"http": 8000, "metrics": 9400} == ports
    service = by_kind(objects, "Service")
    assert {"http": "http", "metrics": "metrics"} == {
        p["name"]: p["targetPort"] for p in service["spec"]["ports"]
    }  # clients reach the proxy, never vLLM's port
    assert "/readyz" == sidecar["readinessProbe"]["httpGet"]["path"]
    assert "/healthz" == sidecar["livenessProbe"]["httpGet"]["path"]
    assert "exec" in vllm["livenessProbe"]
    assert {"requests", "limits"} <= set(sidecar["resources"])
    security = sidecar["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert ["ALL"] == security["capabilities"]["drop"]
    assert pod["terminationGracePeriodSeconds"] >= 60
    assert "preStop" in vllm["lifecycle"]  # vLLM outlives the proxy's drain
    monitor = by_kind(objects, "PodMonitor")["spec"]
    assert "metrics" == monitor["podMetricsEndpoints"][0]["port"]
    labels = by_kind(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert "specwatch" == labels[monitor["jobLabel"]]  # job="specwatch", as the alerts expect


def test_the_wrap_overlay_runs_one_container_that_serves_vllm() -> None:
    pod = by_kind(kustomize("wrap"), "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert ["serve"] == container["args"][:1]
    assert "--" in container["args"]
    assert "vllm" == container["args"][container["args"].index("--") + 1]


def may_run_as_root(pod: dict[str, Any], container: dict[str, Any]) -> bool:
    """A container may run as root unless runAsNonRoot holds and no user 0 is set (the
    container's settings override the pod's)."""
    context = {**pod.get("securityContext", {}), **container.get("securityContext", {})}
    return context.get("runAsNonRoot") is not True or context.get("runAsUser") == 0


def test_the_wrap_overlay_runs_nothing_as_root_with_the_sidecars_security_context() -> None:
    pod = by_kind(kustomize("wrap"), "Deployment")["spec"]["template"]["spec"]
    containers = pod["containers"] + pod.get("initContainers", [])
    assert [] == [c["name"] for c in containers if may_run_as_root(pod, c)]
    base = by_kind(kustomize("ngram"), "Deployment")["spec"]["template"]["spec"]
    (sidecar,) = [c for c in base["containers"] if c["name"] == "specwatch"]
    (wrapped,) = pod["containers"]
    assert sidecar["securityContext"] == wrapped["securityContext"]
    # vLLM's caches on writable volumes: the root filesystem is read-only
    mounts = {m["mountPath"] for m in wrapped["volumeMounts"]}
    env = {e["name"]: e.get("value") for e in wrapped["env"]}
    for name in ("HOME", "HF_HOME", "VLLM_CACHE_ROOT"):
        assert any(env[name].startswith(mount + "/") for mount in mounts), name


def test_the_wrap_overlay_reports_its_track_and_reads_the_config_off_vllms_command() -> None:
    pod = by_kind(kustomize("wrap"), "Deployment")["spec"]["template"]["spec"]
    (wrapped,) = pod["containers"]
    args = wrapped["args"]
    assert "--track=$(TRACK)" in args[: args.index("--")]  # specwatch's own flags
    assert any(a.startswith("--speculative-config=") for a in args[args.index("--") :])


def test_the_wrap_image_runs_as_the_sidecars_user() -> None:
    wrap = (ROOT / "Dockerfile.wrap").read_text()
    sidecar = (ROOT / "Dockerfile").read_text()
    assert "USER 10001:10001" in wrap
    assert "USER 10001:10001" in sidecar
    assert {"HOME", "HF_HOME", "VLLM_CACHE_ROOT"} <= set(re.findall(r"(\w+)=/var/cache", wrap))


def test_the_sidecar_image_compiles_the_analysis_with_the_mypy_the_project_pins() -> None:
    """mypyc's generated C follows its version: the image builds with the one the project
    type-checks with (and tests/e2e/test_wheel.py builds with), and builds compiled."""
    sidecar = (ROOT / "Dockerfile").read_text()
    pinned = re.search(r'"(mypy==[^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pinned is not None
    assert f"'{pinned.group(1)}'" in sidecar
    assert "SPECWATCH_COMPILE=1 pip wheel" in sidecar
    assert "SPECWATCH_COMPILE" not in (ROOT / "Dockerfile.wrap").read_text()


def test_generated_objects_carry_exactly_the_generated_files() -> None:
    objects = kustomize("ngram")
    files = render(load_settings())
    rules = by_kind(objects, "PrometheusRule")["spec"]["groups"]
    expected = (
        yaml.safe_load(files[RECORDING_RULES])["groups"]
        + yaml.safe_load(files[ALERTING_RULES])["groups"]
    )
    assert expected == rules
    (dashboards,) = [o for o in objects if o["metadata"]["name"] == "specwatch-dashboards"]
    assert "1" == dashboards["metadata"]["labels"]["grafana_dashboard"]
    assert {
        name.rsplit("/", 1)[1]: data.decode()
        for name, data in files.items()
        if name.startswith("dashboards/")
    } == dashboards["data"]


def test_no_literal_secret_anywhere() -> None:
    for overlay in OVERLAYS:
        text = yaml.safe_dump_all(kustomize(overlay))
        assert not re.search(r"hooks\.slack\.com|routing_key:|api_url:|service_key:", text)
    secret = by_kind(kustomize("ngram"), "Secret")
    config = yaml.safe_load(secret["stringData"]["alertmanager.yaml"])
    for receiver in config["receivers"]:
        for slack in receiver.get("slack_configs", []):
            assert slack["api_url_file"].startswith("/etc/alertmanager/secrets/")
        for pagerduty in receiver.get("pagerduty_configs", []):
            assert pagerduty["routing_key_file"].startswith("/etc/alertmanager/secrets/")
