"""A short coverage-guided fuzzing run of every input parser (the long run is in the README)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import ROOT

SECONDS = 10
TARGETS = ["response", "log", "cyclelog", "config"]


def test_a_short_fuzzing_run_of_every_parser_finds_no_crash(tmp_path: Path) -> None:
    """Every target side by side (each run spends most of its time instrumenting imports)."""
    corpus = tmp_path / "corpus"
    subprocess.run(
        [sys.executable, str(ROOT / "fuzz" / "seed.py"), str(corpus)], check=True, cwd=ROOT
    )
    running = {}
    for target in TARGETS:
        (tmp_path / target).mkdir()
        running[target] = subprocess.Popen(
            [sys.executable, str(ROOT / "fuzz" / "fuzz_targets.py"), target,
             str(corpus / target), f"-max_total_time={SECONDS}",
             f"-artifact_prefix={tmp_path / target}/"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        )  # fmt: skip
    for target, process in running.items():
        _, stderr = process.communicate(timeout=600)
        crashes = list((tmp_path / target).glob("crash-*"))
        assert 0 == process.returncode, f"{target}: {stderr[-3000:]}"
        assert [] == crashes, target
        assert "Done" in stderr, target  # it really ran
