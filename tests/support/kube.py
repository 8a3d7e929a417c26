"""The Kubernetes manifests as kubectl renders them (kustomize), for the artifact tests."""

from __future__ import annotations

import subprocess
from typing import Any

import yaml

from tests.support import ROOT
from tests.support.tools import binary

KUSTOMIZE_ROOT = ROOT / "deploy" / "kubernetes"
KUBERNETES = "1.32.0"  # the version objects are validated against: the kubectl on these machines


def kustomize(overlay: str) -> list[dict[str, Any]]:
    """Every object of `overlays/<overlay>`, as `kubectl apply -k` would send them."""
    path = KUSTOMIZE_ROOT / "overlays" / overlay
    result = subprocess.run(
        [binary("kubectl"), "kustomize", str(path)], capture_output=True, text=True, check=False
    )
    assert 0 == result.returncode, result.stderr
    return list(yaml.safe_load_all(result.stdout))
