"""The Prometheus and Alertmanager binaries the artifact tests need (Debian packages)."""

from __future__ import annotations

import os
import shutil

import pytest

DEBIAN = {"promtool": "prometheus", "prometheus": "prometheus", "amtool": "prometheus-alertmanager",
          "prometheus-alertmanager": "prometheus-alertmanager"}  # fmt: skip


def binary(name: str) -> str:
    """The path of `name`; skip on a developer machine without it, fail in CI."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is missing: apt-get install {DEBIAN[name]} (.ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path
