"""Start-to-ready: vLLM alone against `specwatch serve -- <the same vLLM>`, side by side.

Builds the tiny models, then alternates: vLLM alone until its /health answers, and specwatch
serve until its /readyz answers (which follows vLLM's /health), `--rounds` times each.

    .venv/bin/python benchmarks/serve_startup.py [--rounds 2]   (needs .venv-vllm: make vllm)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from specwatch.upstream.child import free_port

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
NGRAM = {
    "method": "ngram",
    "num_speculative_tokens": 3,
    "prompt_lookup_max": 4,
    "prompt_lookup_min": 2,
}


def until_200(url: str, process: subprocess.Popen[bytes], started: float) -> float:
    while time.perf_counter() - started < 300:
        if process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return time.perf_counter() - started
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} never answered")


def run(argv: list[str], url_of: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        return until_200(url_of, process, started)
    finally:
        process.terminate()
        process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        models = Path(tmp) / "models"
        subprocess.run(
            [str(VLLM_PYTHON), str(ROOT / "tools" / "build_tiny_models.py"), str(models)],
            check=True,
            capture_output=True,
        )
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CACHE_ROOT": tmp,
               "TORCHINDUCTOR_CACHE_DIR": tmp, "TMPDIR": tmp}  # fmt: skip
        vllm = [
            str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(models / "target"), "--max-model-len", "512", "--dtype", "float32",
            "--enforce-eager", "--speculative-config", json.dumps(NGRAM),
        ]  # fmt: skip
        times: dict[str, list[float]] = {"vllm alone": [], "specwatch serve": []}
        for _ in range(args.rounds):
            port = free_port()
            times["vllm alone"].append(
                run([*vllm, "--port", str(port)], f"http://127.0.0.1:{port}/health", env)
            )
            admin = free_port()
            serve = [
                sys.executable, "-m", "specwatch", "serve", "--port", str(free_port()),
                "--admin-port", str(admin), "--scrape-interval", "0.5", "--", *vllm,
            ]  # fmt: skip
            times["specwatch serve"].append(run(serve, f"http://127.0.0.1:{admin}/readyz", env))
    for name, values in times.items():
        print(f"{name:16} start-to-ready: median {statistics.median(values):5.1f} s  {values}")
    ratio = statistics.median(times["specwatch serve"]) / statistics.median(times["vllm alone"])
    print(f"ratio serve / alone: {ratio:.3f}")


if __name__ == "__main__":
    main()
