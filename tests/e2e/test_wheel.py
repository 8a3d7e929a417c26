"""The steps of the Dockerfile: build the wheel with its analysis compiled (mypyc, as the image
does), install it into a fresh venv, run it; and the compiled analysis against the source: the
same bytes out of `replay`, the analysis' own tests passing against it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.verdicts import LOGS

# one build for the module's tests: on one xdist worker
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("compiled")]

VERDICT_LOGS = ROOT / "tests" / "fixtures" / "verdicts"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, a directory the package is installed in without its dependencies)."""
    base = tmp_path_factory.mktemp("compiled")
    dist, target = base / "dist", base / "target"
    built = subprocess.run(
        [str(ROOT / "tools" / "build_compiled.sh"), str(target), str(dist)], check=True,
        capture_output=True, env={**os.environ, "PYTHON": sys.executable},
    )  # fmt: skip
    (wheel,) = dist.glob("specwatch-*.whl")
    said = built.stderr.decode()  # minutes of mypyc: each stage said, and where it went
    assert f"build_compiled: built {wheel}" in said
    assert f"build_compiled: installed into {target}" in said
    return wheel, target


def run(target: Path | None, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`specwatch ARGS` with the compiled build first on the path (`target`) or the source
    tree these tests run from."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "agent" if target is None else target)}
    command = [sys.executable, "-m", "specwatch", *args]
    return subprocess.run(command, capture_output=True, check=True, env=env, cwd=ROOT)


def test_the_wheel_builds_installs_and_runs_in_a_fresh_venv(
    compiled: tuple[Path, Path], tmp_path: Path
) -> None:
    wheel, _ = compiled
    assert re.fullmatch(r"specwatch-[\d.]+-cp311-cp311-linux_\w+\.whl", wheel.name), wheel.name
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", str(wheel)], check=True,
        capture_output=True,
    )  # fmt: skip
    specwatch = str(venv / "bin" / "specwatch")
    version = subprocess.run([specwatch, "--version"], capture_output=True, text=True, check=True)
    assert re.fullmatch(r"specwatch 0\.\S+ \(analysis: compiled\)\n", version.stdout)
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


def _without_timestamps(log: bytes) -> list[str]:
    return [re.sub(r'"timestamp": ?"[^"]*"', "", line) for line in log.decode().splitlines()]


@pytest.mark.parametrize("name", LOGS)
def test_the_compiled_analysis_replays_to_the_bytes_the_source_gives(
    compiled: tuple[Path, Path], name: str
) -> None:
    """What a user reads, `replay --json --verbose`'s document and every log line, the same
    whichever build ran (mypyc makes a float of an int, or NaN unequal to itself, where a type
    lets it: each would show here)."""
    _, target = compiled
    assert b"(analysis: compiled)" in run(target, "--version").stdout
    assert b"(analysis: python)" in run(None, "--version").stdout
    args = ("replay", "--json", "--verbose", "--log-format", "json", str(VERDICT_LOGS / name))
    source, built = run(None, *args), run(target, *args)
    assert source.stdout == built.stdout
    assert _without_timestamps(source.stderr) == _without_timestamps(built.stderr)
    assert b"zone_changed" in built.stderr


def test_every_unit_suite_passes_against_the_compiled_build(compiled: tuple[Path, Path]) -> None:
    """Every unit suite, and the verdicts' replay, with the compiled modules first on the path
    (setup.py's list: docs/architecture.md, section "Writing for the compiled build")."""
    _, target = compiled
    # the nested run is no xdist worker of this one
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(target)
    for module in (
        "analysis.verdicts.zones",
        "core.pacing",
        "proxy.server",
        "proxy.stream",
        "proxy._fastpath",
        "engines.vllm.response",
    ):
        where = [sys.executable, "-c", f"import specwatch.{module} as m; print(m.__file__)"]
        found = subprocess.run(where, capture_output=True, text=True, check=True, env=env, cwd=ROOT)
        assert found.stdout.startswith(str(target)), found.stdout
        assert ".so" in found.stdout, found.stdout
    tests = ["tests/unit", "tests/integration/test_verdicts_unchanged.py"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", *tests],
        capture_output=True, text=True, check=False, env=env, cwd=ROOT,
    )  # fmt: skip
    assert 0 == done.returncode, done.stdout[-4000:]
    assert re.search(r"\b\d{3,} passed\b", done.stdout), done.stdout[-500:]
