"""The steps of the Dockerfile: build the wheel, install it into a fresh venv, run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

pytestmark = pytest.mark.e2e


def test_the_wheel_builds_installs_and_runs_in_a_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = dist.glob("specwatch-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", str(wheel)], check=True,
        capture_output=True,
    )  # fmt: skip
    specwatch = str(venv / "bin" / "specwatch")
    version = subprocess.run([specwatch, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("specwatch 0.")
    check = subprocess.run([specwatch, "check-config"], capture_output=True, text=True, check=False)
    assert 0 == check.returncode, check.stderr
    assert '"port": 8000' in check.stdout
    bad = subprocess.run(
        [specwatch, "check-config", "--port", "x"], capture_output=True, text=True, check=False
    )
    assert 2 == bad.returncode
    # the sidecar's install carries no plotting or numerics: bench and snapshot say what to add
    python = str(venv / "bin" / "python")
    for module in ("numpy", "matplotlib", "sacrebleu"):
        found = subprocess.run([python, "-c", f"import {module}"], capture_output=True, check=False)
        assert 0 != found.returncode, module
    bench = subprocess.run(
        [specwatch, "bench", "--url", "http://127.0.0.1:9"], capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert 2 == bench.returncode
    assert "pip install 'specwatch[bench]'" in bench.stderr
