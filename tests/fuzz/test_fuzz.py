"""A short coverage-guided fuzzing run of every input parser (the long run is in the README)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

SECONDS = 10


@pytest.mark.parametrize("target", ["response", "log", "cyclelog", "config"])
def test_a_short_fuzzing_run_finds_no_crash(target: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    subprocess.run(
        [sys.executable, str(ROOT / "fuzz" / "seed.py"), str(corpus)], check=True, cwd=ROOT
    )
    result = subprocess.run(
        [sys.executable, str(ROOT / "fuzz" / "fuzz_targets.py"), target, str(corpus / target),
         f"-max_total_time={SECONDS}", f"-artifact_prefix={tmp_path}/"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    crashes = list(tmp_path.glob("crash-*"))
    assert 0 == result.returncode, result.stderr[-3000:]
    assert [] == crashes
    assert "Done" in result.stderr  # it really ran
