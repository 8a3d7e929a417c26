"""The Prometheus and Alertmanager binaries the artifact tests need (Debian packages)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

INSTALL = {
    "promtool": "apt-get install prometheus",
    "prometheus": "apt-get install prometheus",
    "amtool": "apt-get install prometheus-alertmanager",
    "prometheus-alertmanager": "apt-get install prometheus-alertmanager",
    "kubectl": "apt-get install kubectl where a repository has it (make tools tries)",
}


def missing() -> list[str]:
    """The tools of INSTALL that are not on PATH."""
    return [name for name in INSTALL if shutil.which(name) is None]


def binary(name: str) -> str:
    """The path of `name`; skip on a developer machine without it, fail in CI."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is missing: {INSTALL[name]} (.ci/run installs what it can)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def prometheus_major() -> int:
    """promtool's major version: Prometheus 2 selects a range closed at its start, 3 open
    (what `increase()` over whole minutes reads differs)."""
    done = subprocess.run([binary("promtool"), "--version"], capture_output=True, text=True)
    found = re.search(r"version (\d+)\.", done.stdout + done.stderr)
    assert found is not None, done.stdout + done.stderr
    return int(found.group(1))
